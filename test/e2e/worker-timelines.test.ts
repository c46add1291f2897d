// `acx router --queue` and two `acx worker` processes, each with its own home (two hosts), on one
// real PostgreSQL database: the embedded platform's signed deliveries of messages on several
// timelines go through the router onto the queue, the workers take the timeline jobs, and every
// message is acknowledged exactly once — the marks and claims the workers share are on the server.
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWakeQueue, WAKE_QUEUE, type WakeJob, type WakeQueue } from '../../src/frontends/worker/queue.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { ACX_BIN, cleanEnv, ROOT, tempDir } from '../support/cli.ts';
import { type ModelServer, respondByTurn, startModelServer } from '../support/model-server.ts';
import { sharedTimeline, startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { POSTGRES_SKIP, postgresForSuite } from '../support/postgres.ts';
import { scaled } from '../support/time-scale.ts';
import { burstReplies, tagOf, timelineAgentDir } from '../support/timeline-agents.ts';
import { waitFor } from '../support/wait.ts';

const SECRET = 'router-queue-secret-0123456789';
const postgres = postgresForSuite();

let platform: TestPlatform | undefined;
let model: ModelServer | undefined;
let queue: WakeQueue | undefined;
const children: ChildProcess[] = [];
beforeAll(async () => {
  platform = await startTestPlatform();
  model = await startModelServer({ fallback: respondByTurn(burstReplies) });
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await queue?.close();
  await platform?.close();
  await model?.close();
});

/** An acx process; its stderr is kept, and `stop()` sends SIGTERM and waits for its exit code. */
function acx(args: string[], env: NodeJS.ProcessEnv): { child: ChildProcess; stderr: () => string; firstLine: Promise<string>; stop: () => Promise<number | null> } {
  const child = spawn(process.execPath, [ACX_BIN, ...args], { cwd: ROOT, env });
  children.push(child);
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('close', (status) => resolve(status)));
  const firstLine = new Promise<string>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').once('data', (line: string) => resolve(line.trim()));
    child.once('close', (status) => reject(new Error(`acx ${args[0]} exited (${status}): ${stderr}`)));
  });
  firstLine.catch(() => {}); // awaited only for the router: a worker's exit is checked by stop()
  return { child, stderr: () => stderr, firstLine, stop: () => (child.kill('SIGTERM'), exited) };
}

describe('acx router --queue with two acx workers on two homes (e2e, real PostgreSQL)', { timeout: scaled(180_000) }, () => {
  it.skipIf(POSTGRES_SKIP !== '')(`every platform delivery on every timeline is answered once${POSTGRES_SKIP}`, async () => {
    const storeUrl = postgres.database('worker_timelines');
    const ana = platform!.user('ana', 'human');
    const nova = platform!.user('nova', 'ai', { trust: ['ana'] });
    const timelines = await Promise.all([1, 2, 3].map((n) => sharedTimeline(platform!, ana, nova, `Room ${n}`)));
    const agent = timelineAgentDir(tempDir('acx-worker-tl-agent-'), 'nova');
    const env = cleanEnv({
      OPENAI_API_KEY: 'sk-test',
      OPENAI_BASE_URL: model!.openaiBaseURL,
      BASECRADLE_BASE_URL: platform!.url,
      BASECRADLE_TOKEN_NOVA: nova.token,
      ACX_ROUTER_WEBHOOK_SECRET: SECRET,
      ACX_STORE: storeUrl,
      ACX_LOG_LEVEL: 'info',
    });
    const routerHome = tempDir('acx-worker-tl-router-');
    const router = acx(['router', '--agents', `nova=${agent}`, '--port', '0', '--queue', storeUrl, '--home', routerHome], env);
    const routerUrl = await router.firstLine;
    await platform!.restart({ deliverTo: [routerUrl], webhookSecret: SECRET, delivery: { retryBaseMs: 50, maxBackoffMs: 200 } });
    const homes = [tempDir('acx-worker-tl-a-'), tempDir('acx-worker-tl-b-')];
    // A job put off (its timeline busy, or its wake's claims lapsed on a stalled machine) comes
    // back after 1 s, then 2, 4…: the default 15 s, doubling, is for a dead holder's lease.
    const workers = homes.map((home) => acx(['worker', '--agents', `nova=${agent}`, '--concurrency', '2', '--busy-defer', '1', '--home', home, '--config-home', home], env));
    queue = await openWakeQueue(storeUrl, createMemoryLogger('debug'));
    // Both take jobs before the first message: the rounds then land while earlier ones are answered.
    await waitFor('both workers to start', () => workers.every((worker) => worker.stderr().includes('INFO worker started')), {
      withinMs: 60_000,
      explain: () => workers.map((worker) => worker.stderr()).join('\n'),
    });

    try {
      // Three rounds of one message per timeline, each posted while earlier ones may still be answered.
      const tags: string[] = [];
      for (let round = 1; round <= 3; round++) {
        for (const [i, timeline] of timelines.entries()) {
          const tag = `#T${i + 1}-${round}`;
          tags.push(tag);
          await platform!.api('POST', `/timelines/${timeline}/messages`, { token: ana.token, json: { message: { body: `@nova please ack ${tag}` } } });
        }
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      const acks = async () => {
        const all: string[] = [];
        for (const timeline of timelines) {
          const messages = (await platform!.api('GET', `/messages?timeline=${timeline}`, { token: ana.token })).body.messages as Array<{ user: { handle: string }; content: { body: string } }>;
          all.push(...messages.filter((m) => m.user.handle === 'nova').map((m) => tagOf(m.content.body) ?? m.content.body));
        }
        return all.sort();
      };
      const progress = async () => `acks: ${(await acks()).join(' ')}\n${workers.map((worker) => worker.stderr().split('\n').filter((line) => /wake end|deferred|ERROR|WARN/.test(line)).join('\n')).join('\n---\n')}`;
      await waitFor('an ack of every message', async () => (await acks()).length >= tags.length, { withinMs: 90_000, explain: progress });
      const jobs = async () => (await queue!.boss.findJobs<WakeJob>(WAKE_QUEUE)).map((job) => job.state);
      await waitFor('every job to complete', async () => (await jobs()).every((state) => state === 'completed'), { withinMs: 90_000, explain: async () => (await jobs()).join(' ') });
      expect(await acks(), 'each message acknowledged once').toEqual([...tags].sort());
      expect(new Set(await jobs())).toEqual(new Set(['completed']));
      // The workers kept no channel.db: the timelines' state is on the server.
      for (const home of homes) expect(readdirSync(home, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('channel.db'))).toEqual([]);
      const answeredBy = workers.map((worker) => (worker.stderr().match(/INFO wake end timeline=\S+ .*outcome=answered/g) ?? []).length);
      expect(answeredBy.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
      process.stderr.write(`wakes answered per worker: ${answeredBy.join(', ')}\n`);
    } finally {
      for (const worker of workers) expect(await worker.stop(), worker.stderr()).toBe(0);
      await router.stop();
    }
  });
});
