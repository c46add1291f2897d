// `acx router --queue` feeding `acx worker`: the embedded platform's real signed delivery goes
// into the router, which checks and dedupes it and enqueues it on pg-boss (real PostgreSQL); a
// real `acx worker` process takes the job and answers on the timeline. The reply is posted once,
// the router runs no wake of its own, and the job ends completed. The same with a platform that
// delivers nothing and a router that polls it. (The dedupe before the enqueue is the router's
// own, covered by router.test.ts and poll.test.ts.)
import { spawn } from 'node:child_process';
import { DatabaseSync } from 'node:sqlite';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RunningRouter, startRouter } from '../../src/frontends/router/router.ts';
import { openWakeQueue, WAKE_QUEUE, type WakeJob, type WakeQueue } from '../../src/frontends/worker/queue.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { ACX_BIN, cleanEnv, ROOT, tempDir } from '../support/cli.ts';
import { type ModelServer, startModelServer } from '../support/model-server.ts';
import { sharedTimeline, startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { POSTGRES_SKIP, type PostgresCluster, startPostgres } from '../support/postgres.ts';
import { scaled } from '../support/time-scale.ts';
import { waitFor } from '../support/wait.ts';

const AGENT = join(ROOT, 'test/fixtures/agents/timeline-peer');
const SECRET = 'router-queue-secret-0123456789';

let cluster: PostgresCluster | undefined;
let platform: TestPlatform | undefined;
let model: ModelServer | undefined;
let router: RunningRouter | undefined;
let queue: WakeQueue | undefined;
beforeAll(() => {
  if (!POSTGRES_SKIP) cluster = startPostgres();
}, scaled(120_000));
afterEach(async () => {
  await router?.close();
  await queue?.close();
  await platform?.close();
  await model?.close();
  [router, queue, platform, model] = [undefined, undefined, undefined, undefined];
});
afterAll(() => cluster?.stop());

const until = (check: () => Promise<boolean>, what: string) => waitFor(`timed out waiting for ${what}`, check, { withinMs: 60_000 });

/**
 * ana and nova on a timeline, a router enqueuing nova's wakes (taking the platform's deliveries,
 * or polling a platform that sends none), and a real `acx worker` process answering them.
 */
async function routerAndWorker(database: string, mode: 'deliveries' | 'poll') {
  const storeUrl = cluster!.createDatabase(database);
  platform = await startTestPlatform();
  model = await startModelServer();
  const ana = platform.user('ana', 'human');
  const nova = platform.user('nova', 'ai', { trust: ['ana'] });
  const timeline = await sharedTimeline(platform, ana, nova);
  const home = tempDir('acx-router-queue-');
  const logger = createMemoryLogger('debug');
  queue = await openWakeQueue(storeUrl, logger);
  router = await startRouter({
    agents: [{ name: 'nova', dir: AGENT, token: nova.token, uuid: nova.uuid, secret: mode === 'deliveries' ? SECRET : undefined }],
    platformUrl: platform.url,
    databasePath: join(home, 'router.db'),
    logger,
    queue,
    ...(mode === 'poll' ? { pollIntervalMs: 1000 } : {}),
  });
  if (mode === 'deliveries') await platform.restart({ deliverTo: [router.url], webhookSecret: SECRET, delivery: { retryBaseMs: 50, maxBackoffMs: 200 } });

  const env = cleanEnv({ OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: model.openaiBaseURL, BASECRADLE_TOKEN_NOVA: nova.token, ACX_LOG_LEVEL: 'info' });
  const worker = spawn(process.execPath, [ACX_BIN, 'worker', '--agents', `nova=${AGENT}`, '--store', storeUrl, '--home', home, '--config-home', home], { cwd: ROOT, env });
  const output = { stderr: '' };
  worker.stderr.setEncoding('utf8').on('data', (chunk: string) => (output.stderr += chunk));
  const exited = new Promise<number | null>((resolve) => worker.on('close', (status) => resolve(status)));
  const said = async () =>
    ((await platform!.api('GET', `/messages?timeline=${timeline}`, { token: ana.token })).body.messages as Array<{ user: { handle: string }; content: { body: string } }>)
      .map((m) => `${m.user.handle}: ${m.content.body}`)
      .reverse();
  const jobs = async () =>
    (await queue!.boss.findJobs<WakeJob>(WAKE_QUEUE)).map((job) => ({ state: job.state, kind: job.data.kind, delivery: job.data.kind === 'timeline' ? job.data.deliveryId : undefined }));
  const deliveries = () => {
    const db = new DatabaseSync(join(home, 'router.db'), { readOnly: true });
    try {
      return db.prepare('SELECT delivery, state FROM deliveries').all().map((row) => ({ ...row }));
    } finally {
      db.close();
    }
  };
  /** Stops the worker as an operator would; it must exit 0. */
  const stop = async () => {
    worker.kill('SIGTERM');
    expect(await exited, output.stderr).toBe(0);
  };
  return { ana, timeline, logger, output, said, jobs, deliveries, stop };
}

describe('acx router --queue with acx worker (e2e, real PostgreSQL)', { timeout: scaled(120_000) }, () => {
  const test = POSTGRES_SKIP ? it.skip : it;
  test(`a platform delivery is enqueued once and a worker process answers it on the timeline${POSTGRES_SKIP}`, async () => {
    const { ana, timeline, logger, output, said, jobs, deliveries, stop } = await routerAndWorker('router_queue', 'deliveries');
    try {
      model!.enqueue({ toolCalls: [{ name: 'messages_create', input: { body: 'On it, ana.' } }] }, 'answered');
      await platform!.api('POST', `/timelines/${timeline}/messages`, { token: ana.token, json: { message: { body: '@nova can you help?' } } });
      await until(async () => (await said()).length === 2, "nova's reply through the queue");
      await until(async () => (await jobs()).every((job) => job.state === 'completed'), 'the job to complete');
      expect(await said()).toEqual(['ana: @nova can you help?', 'nova: On it, ana.']);
      expect((await jobs()).map(({ state, kind }) => ({ state, kind }))).toEqual([{ state: 'completed', kind: 'timeline' }]);
      expect(logger.lines.filter((line) => line.includes('router delivery enqueued'))).toHaveLength(1);
      expect(logger.lines.some((line) => line.includes('router wake '))).toBe(false);
      expect(output.stderr).toMatch(/INFO wake end timeline=\S+ delivery=\S+ outcome=answered posted=1/);
      expect(deliveries().map((row) => row.state)).toEqual(['enqueued']);
    } finally {
      await stop();
    }
  });

  test(`--poll with --queue: an item the router reads from the platform is enqueued once and a worker answers it${POSTGRES_SKIP}`, async () => {
    const { ana, timeline, logger, said, jobs, deliveries, stop } = await routerAndWorker('router_queue_poll', 'poll');
    try {
      model!.enqueue({ toolCalls: [{ name: 'messages_create', input: { body: 'Polled and answered.' } }] }, 'answered');
      const asked = (await platform!.api('POST', `/timelines/${timeline}/messages`, { token: ana.token, json: { message: { body: '@nova anyone there?' } } })).body.message.content.uuid as string;
      await until(async () => (await said()).length === 2, "nova's reply through the poll and the queue");
      await until(async () => (await jobs()).every((job) => job.state === 'completed'), 'the job to complete');
      expect(await said()).toEqual(['ana: @nova anyone there?', 'nova: Polled and answered.']);
      expect(await jobs()).toEqual([{ state: 'completed', kind: 'timeline', delivery: `poll-nova-${asked}` }]);
      expect(logger.lines.some((line) => line.includes('router wake '))).toBe(false);
      expect(deliveries()).toEqual([{ delivery: `poll-nova-${asked}`, state: 'enqueued' }]);
    } finally {
      await stop();
    }
  });
});
