/**
 * Wake throughput: events answered per second by 1, 2 and 4 `acx worker` processes (each
 * --concurrency 1) on one throwaway PostgreSQL cluster (journal + pg-boss queue), the model a
 * local server replaying a scripted two-step turn per event (a ledger tool call, then the reply).
 * The anchor is 1 worker, measured in the same run; each count gets a fresh database.
 *
 *   npx node bench/wake-throughput.ts [events=200] [sessions=40] [modelDelayMs=0]
 *
 * Each run first answers one warm-up event per worker (agent start-up is not what is measured),
 * then enqueues `events` across `sessions` and times until pg-boss reports them all completed.
 * It also prints the CPU the worker processes used per event (user + system, from /proc), which
 * tells a machine that ran out of cores from a pipeline that ran out of parallel work.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { startPostgres } from '../test/support/postgres.ts';
import { type FleetWorker, startFleet } from '../test/support/worker-fleet.ts';

const events = Number(process.argv[2] ?? 200);
const sessions = Number(process.argv[3] ?? 40);
const modelDelayMs = Number(process.argv[4] ?? 0);
const COUNTS = [1, 2, 4];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** utime + stime of a live process, in seconds (Linux /proc, 100 ticks per second). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const cluster = startPostgres();
const results: Array<{ workers: number; perSecond: number; cpuMsPerEvent: number }> = [];
try {
  for (const count of COUNTS) {
    const fleet = await startFleet(cluster.createDatabase(`throughput_${count}`), { modelDelayMs });
    const workers: FleetWorker[] = Array.from({ length: count }, () => fleet.startWorker(1));
    try {
      const completed = async () => (await fleet.jobStates()).states.completed ?? 0;
      const until = async (n: number) => {
        while ((await completed()) < n) await sleep(50);
      };
      // Warm-up: one event per worker, in sessions of their own.
      for (let i = 0; i < count; i++) await fleet.queue.send({ kind: 'session', agent: 'ledger', sessionId: `warm-${i}`, event: { id: `evt-s99-e${i}`, text: `Please log evt-s99-e${i}.` } });
      await until(count);
      const cpuBefore = workers.reduce((sum, worker) => sum + cpuSeconds(worker.child.pid!), 0);
      const started = performance.now();
      await fleet.enqueue(sessions, Math.ceil(events / sessions));
      const total = count + sessions * Math.ceil(events / sessions);
      await until(total);
      const seconds = (performance.now() - started) / 1000;
      const cpu = workers.reduce((sum, worker) => sum + cpuSeconds(worker.child.pid!), 0) - cpuBefore;
      const answered = total - count;
      results.push({ workers: count, perSecond: answered / seconds, cpuMsPerEvent: (cpu * 1000) / answered });
      console.log(`${count} worker(s): ${answered} events in ${seconds.toFixed(2)} s = ${(answered / seconds).toFixed(1)} events/s; workers' CPU ${((cpu * 1000) / answered).toFixed(1)} ms/event`);
    } finally {
      for (const worker of workers) worker.child.kill('SIGTERM');
      await Promise.all(workers.map((worker) => worker.exited));
      await fleet.close();
    }
  }
} finally {
  cluster.stop();
}

const anchor = results[0]!.perSecond;
console.log(`\nmachine: ${availableParallelism()} cores; model delay ${modelDelayMs} ms per call; ${events} events over ${sessions} sessions`);
console.log('workers  events/s  ratio vs 1 worker');
for (const result of results) console.log(`${String(result.workers).padStart(7)}  ${result.perSecond.toFixed(1).padStart(8)}  ${(result.perSecond / anchor).toFixed(2)}x`);
