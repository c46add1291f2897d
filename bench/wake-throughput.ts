/**
 * Wake throughput: events answered per second by 1, 2 and 4 `acx worker` processes (each
 * --concurrency 1) on one throwaway PostgreSQL cluster (journal + pg-boss queue), the model a
 * local server replaying a scripted two-step turn per event (a ledger tool call, then the reply).
 * The anchor is 1 worker, measured in the same run; each count gets a fresh database.
 *
 *   npx node bench/wake-throughput.ts [events=200] [sessions=40] [modelDelayMs] [--cpu-prof DIR]
 *
 * With no modelDelayMs it runs twice: the model answering at once (1, 2 and 4 workers), then
 * taking 50 ms per call (1 and 4 workers), and prints issue 31's goals with PASS/FAIL. With one,
 * only that model speed (1, 2 and 4 workers). Each run first answers a few warm-up events per
 * worker (agent start-up is not what is measured), then enqueues `events` across `sessions` and
 * times until pg-boss reports them all completed. It also prints the CPU the worker processes
 * used per event (user + system, from /proc), which tells a machine that ran out of cores from a
 * pipeline that ran out of parallel work; the PostgreSQL server's CPU per event (every process of
 * the throwaway cluster, from /proc: on one machine the workers and the server share the cores);
 * and, as the anchor of the workers' CPU, what the AI SDK's own `generateText` spends on the
 * same two-step event from the same model server in a process of its own (two model calls and a
 * tool with nothing durable). `--cpu-prof DIR` writes each worker's V8 CPU profile there
 * (start-up included; open it in Chrome's DevTools).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { startPostgres } from '../test/support/postgres.ts';
import { postgresServerCpu } from './support/postgres-server-cpu.ts';
import { FLEET_AGENT, type FleetWorker, startFleet } from '../test/support/worker-fleet.ts';

const args = process.argv.slice(2);
const profileAt = args.indexOf('--cpu-prof');
const profileDir = profileAt >= 0 ? args.splice(profileAt, 2)[1] : undefined;
const events = Number(args[0] ?? 200);
const sessions = Number(args[1] ?? 40);
const onlyDelay = args[2] === undefined ? undefined : Number(args[2]);
/** A slow model: about what a real provider's quick answer takes. */
const SLOW_MS = 50;
/** Warm-up events per worker: the first few turns load and compile code a resident worker has long since. */
const WARM_UP = 5;
const GOALS = { cpuMsPerEvent: 3, twoWorkersPerSecond: 100, fourWorkersSlowRatio: 3.5 };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** utime + stime of a live process, in seconds (Linux /proc, 100 ticks per second). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

interface Result {
  workers: number;
  perSecond: number;
  cpuMsPerEvent: number;
  /** The PostgreSQL server's CPU per event (every backend: the workers', pg-boss's, the bench's polling), when it can be read. */
  serverCpuMsPerEvent: number | undefined;
}

const cluster = startPostgres();

async function measure(count: number, modelDelayMs: number): Promise<Result> {
  const fleet = await startFleet(cluster.createDatabase(`throughput_${count}_${modelDelayMs}`), { modelDelayMs });
  const nodeArgs = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir, '--cpu-prof-name', `worker-${count}of${count}-${modelDelayMs}ms-\${pid}.cpuprofile`] : [];
  const workers: FleetWorker[] = Array.from({ length: count }, () => fleet.startWorker(1, [], nodeArgs));
  try {
    const completed = async () => (await fleet.jobStates()).states.completed ?? 0;
    const until = async (n: number) => {
      while ((await completed()) < n) await sleep(50);
    };
    // Warm-up: a few events per worker, in sessions of their own.
    for (let i = 0; i < count * WARM_UP; i++) {
      await fleet.queue.send({ kind: 'session', agent: FLEET_AGENT, sessionId: `warm-${i}`, event: { id: `evt-s99-e${i}`, text: `Please log evt-s99-e${i}.` } });
    }
    await until(count * WARM_UP);
    const serverCpu = await postgresServerCpu(fleet.storeUrl);
    const serverBefore = serverCpu?.();
    const cpuBefore = workers.reduce((sum, worker) => sum + cpuSeconds(worker.child.pid!), 0);
    const started = performance.now();
    await fleet.enqueue(sessions, Math.ceil(events / sessions));
    const answered = sessions * Math.ceil(events / sessions);
    await until(count * WARM_UP + answered);
    const seconds = (performance.now() - started) / 1000;
    const cpu = workers.reduce((sum, worker) => sum + cpuSeconds(worker.child.pid!), 0) - cpuBefore;
    const serverMs = serverCpu && serverBefore !== undefined ? serverCpu() - serverBefore : undefined;
    const result = { workers: count, perSecond: answered / seconds, cpuMsPerEvent: (cpu * 1000) / answered, serverCpuMsPerEvent: serverMs === undefined ? undefined : serverMs / answered };
    const server = result.serverCpuMsPerEvent === undefined ? '' : `; PostgreSQL's ${result.serverCpuMsPerEvent.toFixed(1)} ms/event`;
    console.log(`${count} worker(s), model ${modelDelayMs} ms: ${answered} events in ${seconds.toFixed(2)} s = ${result.perSecond.toFixed(1)} events/s; workers' CPU ${result.cpuMsPerEvent.toFixed(1)} ms/event${server}`);
    return result;
  } finally {
    for (const worker of workers) worker.child.kill('SIGTERM');
    await Promise.all(workers.map((worker) => worker.exited));
    await fleet.close();
  }
}

function table(modelDelayMs: number, results: readonly Result[]): void {
  const anchor = results[0]!.perSecond;
  console.log(`\nmodel delay ${modelDelayMs} ms per call; ${events} events over ${sessions} sessions`);
  console.log('workers  events/s  ratio vs 1 worker  worker CPU ms/event  PostgreSQL CPU ms/event');
  for (const result of results) {
    const server = result.serverCpuMsPerEvent === undefined ? '' : result.serverCpuMsPerEvent.toFixed(1).padStart(25);
    console.log(`${String(result.workers).padStart(7)}  ${result.perSecond.toFixed(1).padStart(8)}  ${`${(result.perSecond / anchor).toFixed(2)}x`.padStart(17)}  ${result.cpuMsPerEvent.toFixed(1).padStart(19)}${server}`);
  }
}

/**
 * The anchor: the AI SDK's own `generateText` answering the same kind of event against the same
 * local model server, in a process of its own (bench/support/ai-sdk-event-turns.ts): what two
 * model calls and a tool cost with nothing durable, a floor no worker goes under.
 */
async function aiSdkCpuMsPerTurn(): Promise<number> {
  const fleet = await startFleet(cluster.createDatabase('throughput_anchor'));
  try {
    const child = spawn(process.execPath, [join(import.meta.dirname, 'support/ai-sdk-event-turns.ts'), fleet.server.openaiBaseURL, 'sk-anchor-not-checked', fleet.ledger, String(events)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    const [status] = (await once(child, 'close')) as [number | null];
    if (status !== 0) throw new Error(`the AI SDK anchor exited ${status}: ${out}`);
    return (JSON.parse(out) as { cpuMsPerTurn: number }).cpuMsPerTurn;
  } finally {
    await fleet.close();
  }
}

const verdict = (met: boolean) => (met ? 'PASS' : 'FAIL');
const byDelay = new Map<number, Result[]>();
let anchorCpuMs: number | undefined;
try {
  for (const delay of onlyDelay === undefined ? [0, SLOW_MS] : [onlyDelay]) {
    const counts = onlyDelay === undefined && delay === SLOW_MS ? [1, 4] : [1, 2, 4];
    const results: Result[] = [];
    for (const count of counts) results.push(await measure(count, delay));
    byDelay.set(delay, results);
    if (delay === 0) anchorCpuMs = await aiSdkCpuMsPerTurn();
  }
} finally {
  cluster.stop();
}

console.log(`\nmachine: ${availableParallelism()} cores, load average ${loadavg().map((n) => n.toFixed(2)).join(' ')} at the end`);
for (const [delay, results] of byDelay) table(delay, results);

console.log('\ngoals (issue 31, item 4):');
const instant = byDelay.get(0);
if (instant) {
  const one = instant.find((r) => r.workers === 1)!;
  const two = instant.find((r) => r.workers === 2)!;
  console.log(`  worker CPU per two-step event, model served locally: ${one.cpuMsPerEvent.toFixed(1)} ms (goal <= ${GOALS.cpuMsPerEvent}) ${verdict(one.cpuMsPerEvent <= GOALS.cpuMsPerEvent)}`);
  if (anchorCpuMs !== undefined) {
    console.log(`    the AI SDK's generateText alone on the same two-step event (nothing durable): ${anchorCpuMs.toFixed(1)} ms CPU; worker / AI SDK ${(one.cpuMsPerEvent / anchorCpuMs).toFixed(2)}x`);
  }
  console.log(`  2 workers, instant model: ${two.perSecond.toFixed(1)} events/s (goal >= ${GOALS.twoWorkersPerSecond}) ${verdict(two.perSecond >= GOALS.twoWorkersPerSecond)}`);
}
const slow = byDelay.get(SLOW_MS);
if (slow) {
  const ratio = slow.find((r) => r.workers === 4)!.perSecond / slow[0]!.perSecond;
  console.log(`  4 workers vs 1, model ${SLOW_MS} ms per call: ${ratio.toFixed(2)}x (goal >= ${GOALS.fourWorkersSlowRatio}x, near-linear) ${verdict(ratio >= GOALS.fourWorkersSlowRatio)}`);
}
