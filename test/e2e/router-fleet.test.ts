// One router, a fleet of mixed harnesses, against the embedded platform: an acx agent (a real
// `acx wake` answering through a local model server) and another harness's wake program (a sh
// script that writes down its argv and environment, as basecradle-harness-wake would be started)
// on one timeline; the same fleet with a platform that cannot reach the router (--poll); and two
// `acx router` processes sharing one router.db. Every wait is on what a user would see (a reply,
// a record, a log line), never on a guessed time.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningRouter, startRouter } from '../../src/frontends/router/router.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { ACX_BIN, cleanEnv, ROOT, tempDir } from '../support/cli.ts';
import { type ModelServer, startModelServer } from '../support/model-server.ts';
import { postMessage, sharedTimeline, startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { RECORD_WAKE_SH, shellWakes } from '../support/stand-in-router.ts';
import { scaled } from '../support/time-scale.ts';

const AGENT = join(ROOT, 'test/fixtures/agents/timeline-peer');
const SECRET = 'router-fleet-secret-0123456789';
let platform: TestPlatform | undefined;
let model: ModelServer | undefined;
let router: RunningRouter | undefined;
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null) {
      const closed = new Promise((resolve) => child.once('close', resolve));
      child.kill('SIGTERM');
      await closed;
    }
  }
  await router?.close();
  await platform?.close();
  await model?.close();
  router = undefined;
  platform = undefined;
  model = undefined;
});

async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let waited = 0; !(await check()); waited += 100) {
    if (waited > 90_000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** ana and two agents on one timeline: nova (acx) and jt (another harness). */
async function fleet() {
  platform = await startTestPlatform();
  model = await startModelServer();
  const ana = platform.user('ana', 'human');
  const nova = platform.user('nova', 'ai', { trust: ['ana'] });
  const jt = platform.user('jt', 'ai', { trust: ['ana', 'nova'] });
  const timeline = await sharedTimeline(platform, ana, nova);
  const added = await platform.api('POST', `/timelines/${timeline}/participations`, { token: ana.token, json: { user_id: jt.uuid } });
  if (added.status !== 201) throw new Error(`could not add @jt: ${added.text}`);
  const home = tempDir('acx-router-fleet-');
  const records = join(home, 'jt-wakes');
  mkdirSync(records);
  return { ana, nova, jt, timeline, home, records };
}

/** The fleet behind one in-process router: nova woken by a real `acx wake`, jt by the sh stand-in. */
async function fleetRouter(options: { secret: string | undefined; pollIntervalMs?: number }) {
  const setup = await fleet();
  const { nova, jt, home, records } = setup;
  const logger = createMemoryLogger('debug');
  router = await startRouter({
    agents: [
      { name: 'nova', dir: AGENT, token: nova.token, uuid: nova.uuid, secret: options.secret },
      { name: 'jt', command: [RECORD_WAKE_SH, records], token: jt.token, uuid: jt.uuid, secret: options.secret },
    ],
    platformUrl: platform!.url,
    databasePath: join(home, 'router.db'),
    logger,
    env: cleanEnv({ OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: model!.openaiBaseURL, ACX_HOME: home, ACX_CONFIG_HOME: home, HOME: home }),
    ...(options.pollIntervalMs !== undefined ? { pollIntervalMs: options.pollIntervalMs } : {}),
  });
  return { ...setup, logger, running: router };
}

const said = async (token: string, timeline: string) =>
  ((await platform!.api('GET', `/messages?timeline=${timeline}`, { token })).body.messages as Array<{ user: { handle: string }; content: { body: string } }>)
    .map((m) => `${m.user.handle}: ${m.content.body}`)
    .reverse();

describe('a mixed fleet behind one acx router (e2e)', { timeout: scaled(180_000) }, () => {
  it("the platform's deliveries wake an acx agent and another harness's wake program side by side, each with its own token", async () => {
    const { ana, nova, jt, timeline, records, logger, running } = await fleetRouter({ secret: SECRET });
    await platform!.restart({ deliverTo: [running.url], webhookSecret: SECRET, delivery: { retryBaseMs: 50, maxBackoffMs: 200 } });
    model!.enqueue({ toolCalls: [{ name: 'messages_create', input: { body: 'On it, ana.' } }] }, 'answered');
    const asked = await postMessage(platform!, ana.token, timeline, '@nova @jt can you help?');

    // nova answers; its reply is a message jt sees too, so jt is woken for both.
    await until(async () => (await said(ana.token, timeline)).length === 2, "nova's reply");
    await until(() => shellWakes(records).length === 2, "jt's two wakes");
    await running.idle();
    expect(await said(ana.token, timeline)).toEqual(['ana: @nova @jt can you help?', 'nova: On it, ana.']);
    const novaReply = (await platform!.api('GET', `/messages?timeline=${timeline}`, { token: ana.token })).body.messages[0].content.uuid as string;
    const woken = shellWakes(records).sort((a, b) => (a.argv[3] === asked.uuid ? -1 : b.argv[3] === asked.uuid ? 1 : 0));
    expect(woken.map((wake) => wake.argv)).toEqual([
      ['--timeline', timeline, '--message', asked.uuid],
      ['--timeline', timeline, '--message', novaReply],
    ]);
    for (const wake of woken) {
      expect(wake.env).toMatchObject({ BASECRADLE_TOKEN: jt.token, BASECRADLE_BASE_URL: platform!.url, BASECRADLE_DELIVERY_ID: expect.stringMatching(/^[0-9a-f-]{36}$/) });
      expect(Object.values(wake.env)).not.toContain(nova.token);
      expect(Object.keys(wake.env).filter((name) => name.startsWith('BASECRADLE_')).sort()).toEqual(['BASECRADLE_BASE_URL', 'BASECRADLE_DELIVERY_ID', 'BASECRADLE_TOKEN']);
    }
    expect(logger.lines.filter((line) => /INFO router wake agent=(nova|jt) .*outcome=done/.test(line)).map((line) => /agent=(\w+)/.exec(line)![1]).sort()).toEqual(['jt', 'jt', 'nova']);
  });

  it('--poll: with a platform that delivers nothing, a message is answered once the router has read it', async () => {
    // No signing keys: the platform sends nothing, and the router would refuse it if it did.
    const { ana, timeline, records, logger, running } = await fleetRouter({ secret: undefined, pollIntervalMs: 1000 });
    model!.enqueue({ toolCalls: [{ name: 'messages_create', input: { body: 'Read you, ana.' } }] }, 'answered');
    const asked = await postMessage(platform!, ana.token, timeline, '@nova are you there?');
    await until(async () => (await said(ana.token, timeline)).length === 2, "nova's reply through the poll");
    await until(() => shellWakes(records).length === 2, "jt's wakes for both messages");
    await running.idle();
    expect(await said(ana.token, timeline)).toEqual(['ana: @nova are you there?', 'nova: Read you, ana.']);
    expect(shellWakes(records).map((wake) => wake.argv[3]).sort()).toContain(asked.uuid);
    expect(logger.lines.filter((line) => line.includes('router poll item agent=nova'))).toEqual([expect.stringContaining(`delivery=poll-nova-${asked.uuid} event=message.created`)]);
    expect(platform!.logs.filter((line) => line.includes('delivery'))).toEqual([]);
  });

  it('two acx router processes on one router.db, both polling, wake each message once', async () => {
    const { ana, jt, timeline, home, records } = await fleet();
    const registry = join(home, 'fleet.registry');
    writeFileSync(registry, `# one agent, another harness\njt ${jt.uuid} JT_TOKEN ${RECORD_WAKE_SH} ${records}\n`);
    const env = cleanEnv({ JT_TOKEN: jt.token, ACX_ROUTER_WEBHOOK_SECRET: SECRET, ACX_LOG_LEVEL: 'debug', HOME: home });
    const logs: string[] = ['', ''];
    for (const index of [0, 1]) {
      const child = spawn(process.execPath, [ACX_BIN, 'router', '--registry-file', registry, '--platform', platform!.url, '--poll', '1s', '--port', '0', '--home', join(home, 'router')], { cwd: ROOT, env });
      child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (logs[index] += chunk));
      children.push(child);
    }
    const cycles = (index: number) => (logs[index]!.match(/DEBUG router poll done /g) ?? []).length;
    await until(() => cycles(0) > 0 && cycles(1) > 0, 'both routers to read once');
    const posted: string[] = [];
    for (let i = 1; i <= 3; i++) posted.push((await postMessage(platform!, ana.token, timeline, `message ${i}`)).uuid);
    await until(() => new Set(shellWakes(records).flatMap((wake) => wake.argv.slice(3))).size + coalesced(logs) >= 3, 'every message taken up');
    // Two more reads by each router after that: each has read past every message since.
    const seen = [cycles(0), cycles(1)];
    await until(() => cycles(0) >= seen[0]! + 2 && cycles(1) >= seen[1]! + 2, 'two more reads by each router');
    const woken = shellWakes(records).map((wake) => wake.argv[3]!);
    expect(new Set(woken).size).toBe(woken.length);
    expect(woken.length + coalesced(logs)).toBe(3);
    expect(woken.every((uuid) => posted.includes(uuid))).toBe(true);
    expect(logs.join('')).not.toMatch(/ERROR|WARNING/);
  });
});

/** Messages that joined another's waiting wake instead of a process of their own (either router). */
const coalesced = (logs: string[]) => logs.join('').split('\n').filter((line) => line.includes('router delivery coalesced')).length;
