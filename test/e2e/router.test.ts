// The router between the embedded platform and timeline wakes: the platform's real signed
// deliveries in, `acx wake --timeline` processes out, each message answered once.
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningRouter, startRouter } from '../../src/frontends/router/router.ts';
import { resolveRouterFlags } from '../../src/frontends/cli/router-options.ts';
import { webhookSignature } from '../../src/channel/webhook-signature.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { ACX_BIN, cleanEnv, ROOT, runAcx } from '../support/cli.ts';
import { call } from '../support/platform.ts';
import { listPlatformUsers } from '../../src/platform/index.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { sharedTimeline, startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { scaled } from '../support/time-scale.ts';
import { waitFor } from '../support/wait.ts';
import { processAlive } from '../tools/helpers.ts';

const AGENT = join(ROOT, 'test/fixtures/agents/timeline-peer');
const SECRET = 'router-test-secret-0123456789';
let platform: TestPlatform | undefined;
let model: ModelServer | undefined;
let router: RunningRouter | undefined;
const release: Array<() => void> = [];
afterEach(async () => {
  for (const go of release.splice(0)) go();
  await router?.close();
  await platform?.close();
  await model?.close();
  router = undefined;
  platform = undefined;
  model = undefined;
});

async function setUp({ agentDir = AGENT, wakeLogLevel, ...options }: { warm?: boolean; agentDir?: string; wakeLogLevel?: string } = {}) {
  platform = await startTestPlatform();
  model = await startModelServer();
  const ana = platform.user('ana', 'human');
  const nova = platform.user('nova', 'ai', { trust: ['ana'] });
  const timeline = await sharedTimeline(platform, ana, nova);
  const home = mkdtempSync(join(tmpdir(), 'acx-router-'));
  const logger = createMemoryLogger('debug');
  router = await startRouter({
    agents: [{ name: 'nova', dir: agentDir, token: nova.token, uuid: nova.uuid, secret: SECRET }],
    platformUrl: platform.url,
    databasePath: join(home, 'router.db'),
    logger,
    env: cleanEnv({ OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: model.openaiBaseURL, ACX_HOME: home, ACX_CONFIG_HOME: home, HOME: home, ...(wakeLogLevel ? { ACX_LOG_LEVEL: wakeLogLevel } : {}) }),
    retryDelaysMs: [50, 100],
    ...options,
  });
  await platform.restart({ deliverTo: [router.url], webhookSecret: SECRET, delivery: { retryBaseMs: 50, maxBackoffMs: 200 } });
  return { ana, nova, timeline, logger, home };
}

const messages = async (token: string, timeline: string) =>
  ((await platform!.api('GET', `/messages?timeline=${timeline}`, { token })).body.messages as Array<{ user: { handle: string }; content: { body: string } }>)
    .map((m) => `${m.user.handle}: ${m.content.body}`)
    .reverse();

const until = (check: () => boolean | Promise<boolean>, what: string) => waitFor(`timed out waiting for ${what}`, check, { withinMs: 60_000 });

describe('acx router (e2e)', { timeout: scaled(120_000) }, () => {
  it("wakes the recipient for the platform's signed delivery; the agent's reply is posted once", async () => {
    const { ana, timeline, logger } = await setUp();
    model!.enqueue({ toolCalls: [{ name: 'messages_create', input: { body: 'On it, ana.' } }] }, 'answered');
    await platform!.api('POST', `/timelines/${timeline}/messages`, { token: ana.token, json: { message: { body: '@nova can you help?' } } });
    await until(async () => (await messages(ana.token, timeline)).length === 2, "nova's reply");
    await router!.idle();
    expect(await messages(ana.token, timeline)).toEqual(['ana: @nova can you help?', 'nova: On it, ana.']);
    expect(logger.lines.filter((line) => /INFO router wake .*outcome=done attempts=1 exit=0/.test(line))).toHaveLength(1);
    // nova's own post is not delivered to nova (the platform never wakes an agent by its own post).
    expect(logger.lines.filter((line) => line.includes('router wake '))).toHaveLength(1);
  });

  it('a wake that exits non-zero is run again, 3 attempts in all, then recorded failed', async () => {
    const { ana, timeline, logger } = await setUp();
    // The model refuses every request (a 400 is not retried inside a wake): each attempt exits 1.
    model!.enqueue({ fail: { status: 400 } }, { fail: { status: 400 } }, { fail: { status: 400 } });
    await platform!.api('POST', `/timelines/${timeline}/messages`, { token: ana.token, json: { message: { body: '@nova are you up?' } } });
    await until(async () => logger.lines.some((line) => line.includes('router wake ') && line.includes('outcome=failed')), 'the failed outcome');
    await router!.idle();
    expect(logger.lines.filter((line) => /WARNING router wake retry .*attempt=[12] exit=1/.test(line))).toHaveLength(2);
    expect(logger.lines.filter((line) => /ERROR router wake .*outcome=failed attempts=3 exit=1/.test(line))).toHaveLength(1);
    expect(model!.requests).toHaveLength(3);
  });

  it('refuses a bad signature and answers a delivery id seen before without waking again', async () => {
    const { nova, timeline, logger } = await setUp();
    const body = JSON.stringify({ event: 'message.created', recipient_uuid: nova.uuid, timeline_uuid: timeline, resource: { type: 'message', uuid: '0190a5f2-0000-7000-8000-000000000001' } });
    const send = (signature: string, delivery = 'd-1') =>
      fetch(router!.url, { method: 'POST', body, headers: { 'x-basecradle-event': 'message.created', 'x-basecradle-delivery': delivery, 'x-basecradle-signature': signature } });
    expect((await send('sha256=00')).status).toBe(401);
    expect((await send(webhookSignature('wrong-secret', body))).status).toBe(401);
    model!.setFallback('nothing to say');
    expect((await send(webhookSignature(SECRET, body))).status).toBe(202);
    const again = await send(webhookSignature(SECRET, body));
    expect(again.status).toBe(200); // a duplicate is a success to the platform: it stops sending it
    expect(await again.text()).toBe('already received\n');
    await router!.idle();
    expect(logger.lines.filter((line) => line.includes('router wake '))).toHaveLength(1);
    expect(logger.lines.some((line) => /router delivery duplicate delivery=d-1/.test(line))).toBe(true);
  });

  it('a message delivery for a timeline whose wake is still waiting joins that wake (one process), recorded as coalesced', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-router-coalesce-'));
    const logger = createMemoryLogger('debug');
    const agent = { name: 'nova', dir: home, token: 'unused', uuid: '0190a5f2-0000-7000-8000-0000000000aa', secret: SECRET };
    // Each wake prints what it was asked to do, then runs until the test has delivered all four
    // (a go file), however long that takes: until then the first wake is running.
    const go = join(home, 'go');
    const script = `console.error(process.argv.slice(1).join(' ')); const t = setInterval(() => require('node:fs').existsSync(${JSON.stringify(go)}) && clearInterval(t), 10)`;
    router = await startRouter({ agents: [agent], platformUrl: 'http://127.0.0.1:9', databasePath: join(home, 'router.db'), logger, wakeCommand: { command: process.execPath, args: ['-e', script] } });
    const [roomA, roomB] = ['0190a5f2-0000-7000-8000-0000000000a1', '0190a5f2-0000-7000-8000-0000000000b1'];
    const deliver = (delivery: string, timeline: string, message: string, event = 'message.created') => {
      const body = JSON.stringify({ event, recipient_uuid: agent.uuid, timeline_uuid: timeline, resource: { type: 'message', uuid: message } });
      return fetch(router!.url, { method: 'POST', body, headers: { 'x-basecradle-event': event, 'x-basecradle-delivery': delivery, 'x-basecradle-signature': webhookSignature(SECRET, body) } });
    };
    // d1 starts at once; d2 waits behind it; d3 (same timeline as d2) joins d2; d4 is another timeline.
    for (const [delivery, timeline, message] of [['d1', roomA, 'm1'], ['d2', roomB, 'm2'], ['d3', roomB, 'm3'], ['d4', roomA, 'm4']] as const) {
      expect((await deliver(delivery, timeline, message)).status).toBe(202);
    }
    writeFileSync(go, '');
    await router.idle();
    const woken = logger.lines.filter((line) => line.includes('wake output')).map((line) => /line="(.*)"/.exec(line)![1]);
    expect(woken).toEqual([`wake ${home} --timeline ${roomA} --message m1`, `wake ${home} --timeline ${roomB} --message m2`, `wake ${home} --timeline ${roomA} --message m4`]);
    expect(logger.lines.filter((line) => line.includes('router delivery coalesced'))).toEqual([expect.stringContaining(`delivery=d3 timeline=${roomB} into=d2`)]);
    const { DatabaseSync } = await import('node:sqlite');
    const db = new DatabaseSync(join(home, 'router.db'), { readOnly: true });
    expect(db.prepare('SELECT delivery, state, covered_by FROM deliveries ORDER BY delivery').all().map((row) => ({ ...row }))).toEqual([
      { delivery: 'd1', state: 'done', covered_by: null },
      { delivery: 'd2', state: 'done', covered_by: null },
      { delivery: 'd3', state: 'coalesced', covered_by: 'd2' },
      { delivery: 'd4', state: 'done', covered_by: null },
    ]);
    db.close();
  });

  it('acx platform serve --agents: one command brings up the platform with an agent on it, and a person talks with it', async () => {
    model = await startModelServer();
    model.enqueue({ toolCalls: [{ name: 'messages_create', input: { body: 'Hello ana, nova here.' } }] }, 'greeted');
    const home = mkdtempSync(join(tmpdir(), 'acx-serve-agents-'));
    const platformHome = join(home, 'platform');
    const env = { ...cleanEnv({ OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: model.openaiBaseURL }), ACX_HOME: home, ACX_CONFIG_HOME: home, HOME: home };
    const serve = spawn(process.execPath, [ACX_BIN, 'platform', 'serve', '--port', '0', '--home', platformHome, '--agents', `nova=${join(ROOT, 'examples/nova')}`], { cwd: ROOT, env });
    let stderr = '';
    serve.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        serve.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
        serve.once('close', (code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
      });
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(stderr).toMatch(/INFO platform agent handle=nova /);
      // The README's second command: a person who shares trust with the agent.
      const added = await runAcx(['platform', 'user', 'add', '--handle', 'ana', '--kind', 'human', '--trust', 'nova', '--home', platformHome], { env, home });
      expect(added.status, added.stderr).toBe(0);
      const anaToken = added.stdout.trim().split(/\s+/).find((word) => word.startsWith('bc_uat_'))!;
      expect(anaToken).toBeDefined();
      const nova = listPlatformUsers(platformHome).find((user) => user.handle === 'nova')!;
      const room = (await call(url, 'POST', '/timelines', { token: anaToken, json: { timeline: { name: 'Hello' } } })).body.timeline.uuid as string;
      expect((await call(url, 'POST', `/timelines/${room}/participations`, { token: anaToken, json: { user_id: nova.uuid } })).status).toBe(201);
      await call(url, 'POST', `/timelines/${room}/messages`, { token: anaToken, json: { message: { body: 'Hi @nova!' } } });
      const said = async () => ((await call(url, 'GET', `/messages?timeline=${room}`, { token: anaToken })).body.messages as Array<{ content: { body: string } }>).map((m) => m.content.body);
      await until(async () => (await said()).length === 2, "nova's reply through the router");
      expect((await said()).reverse()).toEqual(['Hi @nova!', 'Hello ana, nova here.']);
    } finally {
      serve.kill('SIGTERM');
      await new Promise((resolve) => serve.once('close', resolve));
    }
  });
});

// The router's warm wake processes (src/frontends/router/warm-wakes.ts): a real `acx wake` process
// started before the delivery and handed it on arrival. Each proof reads what a user can check:
// the process's pid (alive before the delivery was posted), the router's log, the reply.
/** The pids of nova's warm processes that said ready, in order. */
const readyPids = (lines: readonly string[]) => lines.flatMap((line) => /router warm process ready agent=nova pid=(\d+)/.exec(line)?.[1] ?? []).map(Number);
/** The pid each delivery was handed to. */
const handedPids = (lines: readonly string[]) => lines.flatMap((line) => /router warm process handed agent=nova .*pid=(\d+) sent=true/.exec(line)?.[1] ?? []).map(Number);
const alive = processAlive;

describe('acx router: warm wake processes (e2e)', { timeout: scaled(120_000) }, () => {
  it('a delivery is answered by the wake process started before it arrived; the next one is started after', async () => {
    const { ana, timeline, logger } = await setUp({ wakeLogLevel: 'debug' });
    await until(() => readyPids(logger.lines).length === 1, 'the warm process');
    const [warm] = readyPids(logger.lines);
    expect(alive(warm!)).toBe(true); // started, and waiting, before anything was posted
    model!.enqueue({ toolCalls: [{ name: 'messages_create', input: { body: 'On it, ana.' } }] }, 'answered');
    await platform!.api('POST', `/timelines/${timeline}/messages`, { token: ana.token, json: { message: { body: '@nova can you help?' } } });
    await until(async () => (await messages(ana.token, timeline)).length === 2, "nova's reply");
    await router!.idle();
    expect(await messages(ana.token, timeline)).toEqual(['ana: @nova can you help?', 'nova: On it, ana.']);
    expect(handedPids(logger.lines)).toEqual([warm]);
    // What it made ready before the event (timeline-wake-ahead.ts) answered it.
    expect(logger.lines.filter((line) => line.includes('wake prepared ahead'))).toEqual([expect.stringContaining('line="DEBUG wake prepared ahead used"')]);
    expect(logger.lines.filter((line) => /INFO router wake .*outcome=done attempts=1 exit=0/.test(line))).toHaveLength(1);
    await until(() => readyPids(logger.lines).length === 2, 'the next warm process');
    const next = readyPids(logger.lines)[1]!;
    expect(next).not.toBe(warm);
    expect(alive(warm!)).toBe(false); // one event per process: it exited after its wake
    await router!.close();
    router = undefined;
    expect(alive(next)).toBe(false); // shutdown ends the idle one
  });

  // A warm process prepares its wake before the event (timeline-wake-ahead.ts): what it read then
  // must not outlive an edit. (Fails if the prepared wake ignores its agent's files changing.)
  it("an edit to the agent's files after its warm process was ready is seen by the wake it answers", async () => {
    const agentDir = mkdtempSync(join(tmpdir(), 'acx-router-warm-agent-'));
    cpSync(AGENT, agentDir, { recursive: true });
    const { ana, timeline, logger } = await setUp({ agentDir, wakeLogLevel: 'debug' });
    await until(() => readyPids(logger.lines).length === 1, 'the warm process');
    mkdirSync(join(agentDir, 'prompts'));
    writeFileSync(join(agentDir, 'prompts/system-prompt.md'), 'You are Nova. This line was written after your wake process was ready.\n');
    model!.enqueue({ toolCalls: [{ name: 'messages_create', input: { body: 'On it, ana.' } }] }, 'answered');
    await platform!.api('POST', `/timelines/${timeline}/messages`, { token: ana.token, json: { message: { body: '@nova can you help?' } } });
    await until(async () => (await messages(ana.token, timeline)).length === 2, "nova's reply");
    await router!.idle();
    expect(handedPids(logger.lines)).toEqual(readyPids(logger.lines).slice(0, 1)); // answered by the warm process
    expect(model!.requests[0]!.view.system.join('\n')).toContain('This line was written after your wake process was ready.');
    expect(logger.lines.filter((line) => line.includes('wake prepared ahead'))).toEqual([expect.stringContaining("reason=\\\"the agent's files changed since\\\"")]);
    expect(await messages(ana.token, timeline)).toEqual(['ana: @nova can you help?', 'nova: On it, ana.']);
  });

  it('a warm process killed while idle is replaced, and the replacement answers the next delivery', async () => {
    const { ana, timeline, logger } = await setUp();
    await until(() => readyPids(logger.lines).length === 1, 'the warm process');
    const [killed] = readyPids(logger.lines);
    process.kill(killed!, 'SIGKILL');
    await until(() => readyPids(logger.lines).length === 2, 'its replacement');
    const replacement = readyPids(logger.lines)[1]!;
    expect(logger.lines.filter((line) => line.includes('router warm process exited'))).toEqual([expect.stringMatching(new RegExp(`agent=nova pid=${killed} exit=1 signal=SIGKILL restart_in_ms=0`))]);
    model!.enqueue({ toolCalls: [{ name: 'messages_create', input: { body: 'Still here.' } }] }, 'answered');
    await platform!.api('POST', `/timelines/${timeline}/messages`, { token: ana.token, json: { message: { body: '@nova still there?' } } });
    await until(async () => (await messages(ana.token, timeline)).length === 2, "nova's reply");
    await router!.idle();
    expect(handedPids(logger.lines)).toEqual([replacement]);
    expect(await messages(ana.token, timeline)).toEqual(['ana: @nova still there?', 'nova: Still here.']);
  });

  it('a warm process killed mid-turn loses nothing: the next attempt, on the next warm process, answers once', async () => {
    const { ana, timeline, logger } = await setUp();
    let go!: () => void;
    const held = new Promise<void>((resolve) => (go = resolve));
    release.push(go);
    // The first model call is held until the test has killed the process making it.
    model!.enqueue({ text: 'never sent', pauseUntil: held }, { toolCalls: [{ name: 'messages_create', input: { body: 'Answered after all.' } }] }, 'answered');
    await until(() => readyPids(logger.lines).length === 1, 'the warm process');
    await platform!.api('POST', `/timelines/${timeline}/messages`, { token: ana.token, json: { message: { body: '@nova are you there?' } } });
    await until(() => model!.requests.length === 1, 'the first model call');
    const [victim] = handedPids(logger.lines);
    expect(victim).toBe(readyPids(logger.lines)[0]);
    process.kill(victim!, 'SIGKILL');
    await until(async () => (await messages(ana.token, timeline)).length === 2, "nova's reply");
    await router!.idle();
    expect(await messages(ana.token, timeline)).toEqual(['ana: @nova are you there?', 'nova: Answered after all.']);
    expect(logger.lines.filter((line) => /WARNING router wake retry .*attempt=1 exit=1/.test(line))).toHaveLength(1);
    expect(logger.lines.filter((line) => /INFO router wake .*outcome=done attempts=2 exit=0/.test(line))).toHaveLength(1);
    const [, second] = handedPids(logger.lines);
    expect(second).toBe(readyPids(logger.lines)[1]); // the retry ran on the next warm process, not a cold one
  });

  it('a warm process that keeps dying idle is replaced after a wait that doubles each time, up to the cap, not in a loop', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-router-warm-loop-'));
    const logger = createMemoryLogger('debug');
    // A wake command that dies at once, before it is ready, every time.
    router = await startRouter({
      agents: [{ name: 'nova', dir: home, token: 'unused', uuid: '0190a5f2-0000-7000-8000-0000000000aa', secret: SECRET }],
      platformUrl: 'http://127.0.0.1:9',
      databasePath: join(home, 'router.db'),
      logger,
      wakeCommand: { command: process.execPath, args: ['-e', 'process.exit(3)', '--'] },
      warm: true,
      warmTiming: { backoffMs: { first: 20, max: 80 } },
    });
    const exits = () => logger.lines.filter((line) => line.includes('router warm process exited'));
    await until(() => exits().length >= 6, 'six deaths');
    expect(exits().slice(0, 6).map((line) => /exit=(\d+) restart_in_ms=(\d+)/.exec(line)!.slice(1).join(' '))).toEqual(['3 0', '3 20', '3 40', '3 80', '3 80', '3 80']);
    expect(readyPids(logger.lines)).toEqual([]);
    await router.close();
    router = undefined;
  });

  it('an event does not wait forever on a warm process that never says ready: it is killed and a process started for the event runs it', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-router-warm-stuck-'));
    const logger = createMemoryLogger('debug');
    const agent = { name: 'nova', dir: home, token: 'unused', uuid: '0190a5f2-0000-7000-8000-0000000000aa', secret: SECRET };
    // Started warm (with an IPC channel) it hangs without a word until the channel closes; started for an event it exits 0.
    const hangs = "if (process.send) { setInterval(() => {}, 1000); process.on('disconnect', () => process.exit(0)); }";
    router = await startRouter({
      agents: [agent],
      platformUrl: 'http://127.0.0.1:9',
      databasePath: join(home, 'router.db'),
      logger,
      wakeCommand: { command: process.execPath, args: ['-e', hangs, '--'] },
      warm: true,
      // Never ready, so any bound is passed: this one only keeps the test short.
      warmTiming: { readyTimeoutMs: 100, backoffMs: { first: 60_000, max: 60_000 } },
    });
    const body = JSON.stringify({ event: 'message.created', recipient_uuid: agent.uuid, timeline_uuid: '0190a5f2-0000-7000-8000-0000000000a1', resource: { type: 'message', uuid: 'm1' } });
    const posted = await fetch(router.url, { method: 'POST', body, headers: { 'x-basecradle-event': 'message.created', 'x-basecradle-delivery': 'd1', 'x-basecradle-signature': webhookSignature(SECRET, body) } });
    expect(posted.status).toBe(202);
    await router.idle();
    expect(logger.lines.filter((line) => line.includes('router warm process exited'))).toEqual([expect.stringMatching(/signal=SIGKILL restart_in_ms=0/)]);
    expect(logger.lines.filter((line) => /INFO router wake .*delivery=d1 .*outcome=done attempts=1 exit=0/.test(line))).toHaveLength(1);
    expect(handedPids(logger.lines)).toEqual([]);
  });

  it('--no-warm and ACX_ROUTER_WARM=0 turn warm processes off; on by default', () => {
    expect(resolveRouterFlags('acx router', {}, {}).warm).toBe(true);
    expect(resolveRouterFlags('acx router', { warm: false }, {}).warm).toBe(false);
    expect(resolveRouterFlags('acx router', {}, { ACX_ROUTER_WARM: '0' }).warm).toBe(false);
    expect(resolveRouterFlags('acx router', {}, { ACX_ROUTER_WARM: '1' }).warm).toBe(true);
  });

  it('with warm off, a delivery is answered by a process started for it, and no process waits', async () => {
    const { ana, timeline, logger } = await setUp({ warm: false });
    model!.enqueue({ toolCalls: [{ name: 'messages_create', input: { body: 'Cold but here.' } }] }, 'answered');
    await platform!.api('POST', `/timelines/${timeline}/messages`, { token: ana.token, json: { message: { body: '@nova hello?' } } });
    await until(async () => (await messages(ana.token, timeline)).length === 2, "nova's reply");
    await router!.idle();
    expect(logger.lines.filter((line) => line.includes('router warm process'))).toEqual([]);
    expect(logger.lines.filter((line) => /INFO router wake .*outcome=done attempts=1 exit=0/.test(line))).toHaveLength(1);
  });
});
