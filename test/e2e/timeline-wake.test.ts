// acx wake --timeline against the embedded platform (a real server on 127.0.0.1, SQLite home) and
// the local model server: a peer's message is read, answered through messages_create, and never
// answered twice — not on a repeated delivery, not after the wake is killed mid-turn.
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { postMessage, sharedTimeline, startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { ACX_BIN, cleanEnv, ROOT, runAcx, STACK_FRAME, tempDir } from '../support/cli.ts';
import { startCannedServer, startFlakyProxy } from '../support/flaky-proxy.ts';
import { scaled } from '../support/time-scale.ts';
import { waitFor } from '../support/wait.ts';

const AGENT = join(ROOT, 'test/fixtures/agents/timeline-peer');

let platform: TestPlatform;
let model: ModelServer;
beforeEach(async () => {
  platform = await startTestPlatform();
  model = await startModelServer();
});
afterEach(async () => {
  await model.close();
  await platform.close();
});

function setUp() {
  const ana = platform.user('ana', 'human');
  const nova = platform.user('nova', 'ai', { trust: ['ana'] });
  return { ana, nova };
}

const wakeEnv = (token: string, extra: Record<string, string> = {}) =>
  cleanEnv({ BASECRADLE_BASE_URL: platform.url, BASECRADLE_TOKEN: token, OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: model.openaiBaseURL, ...extra });

/** A copy of the fixture agent with an empty folder of its own (tools/, mcp/) to drop files in. */
function copyOfAgent(folder: string): string {
  const agent = join(tempDir(), 'agent');
  cpSync(AGENT, agent, { recursive: true });
  mkdirSync(join(agent, folder), { mode: 0o755 });
  return agent;
}

const post = async (token: string, timeline: string, body: string) => (await postMessage(platform, token, timeline, body)).uuid;

async function messagesOn(token: string, timeline: string): Promise<Array<{ handle: string; body: string }>> {
  const listed = await platform.api('GET', `/messages?timeline=${timeline}`, { token });
  const items = listed.body.messages as Array<{ user: { handle: string }; content: { body: string } }>;
  return items.map((item) => ({ handle: item.user.handle, body: item.content.body })).reverse();
}

describe('acx wake --timeline (e2e)', { timeout: scaled(120_000) }, () => {
  it('answers a peer through messages_create once; a repeated delivery answers nothing', async () => {
    const { ana, nova } = setUp();
    const timeline = await sharedTimeline(platform, ana, nova);
    const trigger = await post(ana.token, timeline, 'Hello @nova, when is the release?');
    model.enqueue({ toolCalls: [{ name: 'messages_create', input: { body: 'Hi ana: on Thursday.' } }] }, 'I told ana the date.');
    const home = tempDir();
    const env = wakeEnv(nova.token, { BASECRADLE_DELIVERY_ID: 'delivery-1' });
    const first = await runAcx(['wake', AGENT, '--timeline', timeline, '--message', trigger], { env, home });
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout).toBe('');
    expect(first.stderr).toMatch(/INFO wake start timeline=\S+ delivery=delivery-1 agent=nova trigger=\S+ provider=openai model=m\n/);
    expect(first.stderr).toMatch(/INFO wake end timeline=\S+ delivery=delivery-1 outcome=answered posted=1 turns=1 steps=2\/6/);
    expect(first.stderr).toMatch(/INFO posted timeline=\S+ delivery=delivery-1 message=[0-9a-f-]{36} kind=tool chars=20\n/);
    expect(first.stderr).toContain('I told ana the date.'); // the final text is logged, never posted
    expect(await messagesOn(ana.token, timeline)).toEqual([
      { handle: 'ana', body: 'Hello @nova, when is the release?' },
      { handle: 'nova', body: 'Hi ana: on Thursday.' },
    ]);
    // The model saw the message with its time and author.
    expect(JSON.stringify(model.requests[0]!.body)).toMatch(/\[20\d\d-[^\]]+\] @ana: Hello @nova, when is the release\?/);
    // The brief: every active tool with a gotcha each (the platform's and the agent's own), then
    // the platform's dashboard.md, then the system prompt.
    const instructions = String(model.requests[0]!.body.instructions ?? JSON.stringify(model.requests[0]!.body.input));
    expect(instructions).toContain('## Your tools');
    expect(instructions).toMatch(/- lock \(.*\): .*irreversible/i);
    expect(instructions).toContain('## The platform (its dashboard)');

    const again = await runAcx(['wake', AGENT, '--timeline', timeline, '--message', trigger], { env, home });
    expect(again.status, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/wake end .*outcome=nothing-new posted=0/);
    expect(model.requests).toHaveLength(2);
    expect(await messagesOn(ana.token, timeline)).toHaveLength(2);
  });

  it('killed after posting, before the turn ends: the next wake finishes the turn and posts nothing twice', async () => {
    const { ana, nova } = setUp();
    const timeline = await sharedTimeline(platform, ana, nova);
    const trigger = await post(ana.token, timeline, '@nova ping');
    // The second model call (after the post) hangs until the process is killed.
    let release: () => void = () => {};
    model.enqueue({ toolCalls: [{ name: 'messages_create', input: { body: 'pong' } }] }, { text: 'never seen', pauseUntil: new Promise<void>((resolve) => (release = resolve)) });
    const home = tempDir();
    const env = { ...wakeEnv(nova.token), ACX_HOME: home, ACX_CONFIG_HOME: home, HOME: home };
    const child = spawn(process.execPath, [ACX_BIN, 'wake', AGENT, '--timeline', timeline, '--message', trigger], { cwd: ROOT, env });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise((resolve) => child.once('close', resolve));
    await waitFor('the wake never made its second model call', () => model.requests.length >= 2, { withinMs: 60_000, everyMs: 50, explain: () => stderr });
    child.kill('SIGKILL');
    await exited;
    release();
    expect(await messagesOn(ana.token, timeline)).toEqual([
      { handle: 'ana', body: '@nova ping' },
      { handle: 'nova', body: 'pong' },
    ]);
    model.enqueue('done');
    const resumed = await runAcx(['wake', AGENT, '--timeline', timeline], { env: wakeEnv(nova.token), home });
    expect(resumed.status, resumed.stderr + stderr).toBe(0);
    expect(resumed.stderr).toMatch(/wake end .*outcome=answered posted=1 .*resumed=true/);
    expect(await messagesOn(ana.token, timeline)).toHaveLength(2);
  });

  it('a deleted or locked timeline is a stale delivery: skipped, exit 0; a bad token fails non-zero; a bad timeline id is a usage error', async () => {
    const { ana, nova } = setUp();
    const timeline = await sharedTimeline(platform, ana, nova);
    expect((await platform.api('DELETE', `/timelines/${timeline}`, { token: ana.token })).status).toBeLessThan(300);
    const run = await runAcx(['wake', AGENT, '--timeline', timeline], { env: wakeEnv(nova.token) });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/INFO wake skipped timeline=\S+ reason=timeline_deleted/);
    // A locked timeline is read-only for good: nothing to do, exit 0. (The timeline given the
    // router's way, as BASECRADLE_TIMELINE.)
    const locked = await sharedTimeline(platform, ana, nova, 'Locked');
    expect((await platform.api('POST', `/timelines/${locked}/lock`, { token: ana.token })).status).toBeLessThan(300);
    const onLocked = await runAcx(['wake', AGENT], { env: { ...wakeEnv(nova.token), BASECRADLE_TIMELINE: locked } });
    expect(onLocked.status, onLocked.stderr).toBe(0);
    expect(onLocked.stderr).toMatch(/INFO wake skipped timeline=\S+ reason=timeline_locked/);
    // A bad token is a failure the router retries: non-zero, saying so, the token never printed.
    const denied = await runAcx(['wake', AGENT, '--timeline', locked], { env: wakeEnv('bc_uat_notavalidtoken0000000000000000') });
    expect(denied.status).not.toBe(0);
    expect(denied.stderr).toMatch(/unauthori[sz]ed|token/i);
    expect(denied.stderr).not.toContain('bc_uat_notavalidtoken');
    const bad = await runAcx(['wake', AGENT, '--timeline', 'nope'], { env: wakeEnv(nova.token) });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('--timeline must be a timeline uuid');
  });

  it('an asset and an activated task each get a turn of their own, after the message batch; the agent\'s own task runs', async () => {
    const { ana, nova } = setUp();
    const timeline = await sharedTimeline(platform, ana, nova);
    // nova scheduled a reminder for itself a moment from now; wait for the platform to activate it.
    const task = await platform.api('POST', `/timelines/${timeline}/tasks`, { token: nova.token, json: { task: { instructions: 'Remind ana about the release notes.', activate_at: new Date(Date.now() + 300).toISOString() } } });
    expect(task.status, task.text).toBe(201);
    await waitFor('the task never activated', async () => (await platform.api('GET', `/tasks?timeline=${timeline}&status=activated`, { token: nova.token })).body.tasks.length === 1, { withinMs: 10_000 });
    await post(ana.token, timeline, '@nova here is the chart');
    const form = new FormData();
    form.append('asset[file]', new Blob(['a,b\n1,2\n'], { type: 'text/csv' }), 'chart.csv');
    form.append('asset[description]', 'Q3 numbers');
    expect((await platform.api('POST', `/timelines/${timeline}/assets`, { token: ana.token, form })).status).toBe(201);
    model.enqueue(
      { toolCalls: [{ name: 'messages_create', input: { body: 'Thanks, looking.' } }] },
      'message turn done',
      'asset noted',
      { toolCalls: [{ name: 'messages_create', input: { body: 'Reminder: release notes, ana.' } }] },
      'task done',
    );
    const home = tempDir();
    const env = wakeEnv(nova.token);
    const run = await runAcx(['wake', AGENT, '--timeline', timeline], { env, home });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/wake end .*outcome=answered posted=2 turns=3/);
    const prompts = model.requests.map((request) => JSON.stringify(request.body));
    expect(prompts[0]).toContain('@ana: @nova here is the chart');
    expect(prompts[2]).toMatch(/A new asset was shared on this timeline:.*asset [0-9a-f-]{36}: \\"chart.csv\\" text\/csv, 8 bytes, described \\"Q3 numbers\\"/);
    expect(prompts[3]).toMatch(/A scheduled task activated on this timeline:.*Remind ana about the release notes/);
    expect(await messagesOn(ana.token, timeline)).toEqual([
      { handle: 'ana', body: '@nova here is the chart' },
      { handle: 'nova', body: 'Thanks, looking.' },
      { handle: 'nova', body: 'Reminder: release notes, ana.' },
    ]);
    // Nothing is taken up twice: not the asset (its mark moved), not the task (seen).
    const again = await runAcx(['wake', AGENT, '--timeline', timeline], { env, home });
    expect(again.stderr).toMatch(/wake end .*outcome=nothing-new/);
    expect(model.requests).toHaveLength(5);
  });

  it('cleanup --sweep purges the state of a deleted timeline and keeps the others; --timeline purges one; memory stays', async () => {
    const { ana, nova } = setUp();
    const kept = await sharedTimeline(platform, ana, nova, 'Kept');
    const gone = await sharedTimeline(platform, ana, nova, 'Gone');
    const left = await sharedTimeline(platform, ana, nova, 'Left');
    const home = tempDir();
    const env = wakeEnv(nova.token);
    model.setFallback('nothing to add');
    for (const timeline of [kept, gone, left]) {
      await post(ana.token, timeline, 'hello @nova');
      expect((await runAcx(['wake', AGENT, '--timeline', timeline], { env, home })).status).toBe(0);
    }
    const memory = readdirSync(home, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('memory.db')).map((file) => join(home, file));
    expect(memory).toHaveLength(1);
    const memoryBefore = readFileSync(memory[0]!);
    expect((await platform.api('DELETE', `/timelines/${gone}`, { token: ana.token })).status).toBe(204);
    // nova is no viewer of this one any more: the platform answers 403, which is no evidence it is gone.
    expect((await platform.api('DELETE', `/timelines/${left}/participations/${nova.uuid}`, { token: ana.token })).status).toBeLessThan(300);
    // A platform that cannot be reached proves nothing either: everything is kept, this run.
    const unreachable = await runAcx(['cleanup', AGENT, '--sweep', '--json'], { env: { ...env, BASECRADLE_BASE_URL: 'http://127.0.0.1:9' }, home });
    expect(unreachable.status, unreachable.stderr).toBe(0);
    const offline = JSON.parse(unreachable.stdout) as { removed: unknown[]; kept: Array<{ timeline: string; reason: string }> };
    expect(offline.removed).toEqual([]);
    expect(offline.kept.map((k) => k.reason)).toEqual([expect.stringMatching(/^skipped this run: /), expect.stringMatching(/^skipped this run: /), expect.stringMatching(/^skipped this run: /)]);
    const sweep = await runAcx(['cleanup', AGENT, '--sweep', '--json'], { env, home });
    expect(sweep.status, sweep.stderr).toBe(0);
    const report = JSON.parse(sweep.stdout) as { removed: Array<{ timeline: string; messages: number }>; kept: Array<{ timeline: string; reason: string }> };
    expect(report.removed.map((r) => r.timeline)).toEqual([gone]);
    expect(report.removed[0]!.messages).toBeGreaterThan(0);
    expect(report.kept).toEqual(
      [
        { timeline: kept, reason: 'kept' },
        { timeline: left, reason: 'kept-forbidden' },
      ].sort((a, b) => a.timeline.localeCompare(b.timeline)),
    );
    expect(readFileSync(memory[0]!).equals(memoryBefore), 'the sweep touched memory').toBe(true);
    const sessions = await runAcx(['sessions', AGENT, '--json'], { env, home });
    const ids = (JSON.parse(sessions.stdout) as Array<{ id: string }> | { sessions: Array<{ id: string }> });
    const list = Array.isArray(ids) ? ids : ids.sessions;
    expect(list.map((s) => s.id).sort()).toEqual([`timeline:${kept}`, `timeline:${left}`].sort());
    // --timeline purges unconditionally: the next wake on it starts fresh (a first wake again).
    const one = await runAcx(['cleanup', AGENT, '--timeline', kept, '--json'], { env, home });
    expect(JSON.parse(one.stdout).removed.map((r: { timeline: string }) => r.timeline)).toEqual([kept]);
  });
  it('a transient platform failure during bootstrap exits non-zero, and the next wake answers the item', async () => {
    const { ana, nova } = setUp();
    const timeline = await sharedTimeline(platform, ana, nova);
    const trigger = await post(ana.token, timeline, '@nova are you there?');
    // The platform behind a proxy that is down for maintenance: every request answers 503.
    const down = await startCannedServer(() => ({ status: 503, headers: { 'content-type': 'application/problem+json' }, body: JSON.stringify({ type: 'about:blank', title: 'Service Unavailable', status: 503 }) }));
    const home = tempDir();
    try {
      const failed = await runAcx(['wake', AGENT, '--timeline', timeline, '--message', trigger], { env: wakeEnv(nova.token, { BASECRADLE_BASE_URL: down.url }), home });
      expect(failed.status, failed.stderr).not.toBe(0);
      expect(failed.stderr).toMatch(/503|unavailable/i);
      expect(down.requests.length).toBeGreaterThan(0);
    } finally {
      await down.close();
    }
    expect(model.requests).toHaveLength(0);
    model.enqueue({ toolCalls: [{ name: 'messages_create', input: { body: 'Yes, here.' } }] }, 'answered');
    const retried = await runAcx(['wake', AGENT, '--timeline', timeline, '--message', trigger], { env: wakeEnv(nova.token), home });
    expect(retried.status, retried.stderr).toBe(0);
    expect(retried.stderr).toMatch(/wake end .*outcome=answered posted=1/);
    expect(await messagesOn(ana.token, timeline)).toEqual([
      { handle: 'ana', body: '@nova are you there?' },
      { handle: 'nova', body: 'Yes, here.' },
    ]);
  });

  it('dashboard.md failing to fetch degrades gracefully: the wake runs, a WARNING names it, the brief goes without it', async () => {
    const { ana, nova } = setUp();
    const timeline = await sharedTimeline(platform, ana, nova);
    const trigger = await post(ana.token, timeline, '@nova status?');
    const proxy = await startFlakyProxy(platform.url);
    proxy.refuse('/users/dashboard.md', 500);
    model.enqueue({ toolCalls: [{ name: 'messages_create', input: { body: 'All green.' } }] }, 'answered');
    try {
      const run = await runAcx(['wake', AGENT, '--timeline', timeline, '--message', trigger], { env: wakeEnv(nova.token, { BASECRADLE_BASE_URL: proxy.url }), home: tempDir() });
      expect(run.status, run.stderr).toBe(0);
      expect(proxy.arrivals).toContain('GET /users/dashboard.md');
      expect(run.stderr).toMatch(/WARNING dashboard unavailable .*dashboard\.md/);
      expect(run.stderr).toMatch(/wake end .*outcome=answered posted=1/);
    } finally {
      await proxy.close();
    }
    const instructions = String(model.requests[0]!.body.instructions ?? JSON.stringify(model.requests[0]!.body.input));
    expect(instructions).toContain('## Your tools');
    expect(instructions).not.toContain('## The platform (its dashboard)');
    expect(await messagesOn(ana.token, timeline)).toHaveLength(2);
  });

  it('with onboarding off (ACX_ONBOARD=0) the dashboard is neither fetched nor in the brief; the tools still are', async () => {
    const { ana, nova } = setUp();
    const timeline = await sharedTimeline(platform, ana, nova);
    const trigger = await post(ana.token, timeline, '@nova status?');
    const proxy = await startFlakyProxy(platform.url);
    model.enqueue({ toolCalls: [{ name: 'messages_create', input: { body: 'All green.' } }] }, 'answered');
    try {
      const run = await runAcx(['wake', AGENT, '--timeline', timeline, '--message', trigger], { env: wakeEnv(nova.token, { BASECRADLE_BASE_URL: proxy.url, ACX_ONBOARD: '0' }), home: tempDir() });
      expect(run.status, run.stderr).toBe(0);
      expect(run.stderr).toMatch(/wake end .*outcome=answered posted=1/);
      expect(proxy.arrivals).not.toContain('GET /users/dashboard.md');
    } finally {
      await proxy.close();
    }
    const instructions = JSON.stringify(model.requests[0]!.body.input);
    expect(instructions).toContain('## Your tools');
    expect(instructions).not.toContain('## The platform (its dashboard)');
  });

  it('a tool plugin gets the platform client (the agent’s own) and the current timeline in its context', async () => {
    const { ana, nova } = setUp();
    const timeline = await sharedTimeline(platform, ana, nova);
    const trigger = await post(ana.token, timeline, '@nova who are you?');
    const agent = copyOfAgent('tools');
    writeFileSync(
      join(agent, 'tools', 'whoami.mjs'),
      `export default {
  name: 'whoami', description: 'Your handle and the timeline you are on.', kind: 'read', effect: 'read-only', capabilityScopes: [],
  inputSchema: { type: 'object', properties: {} },
  async execute(_input, context) {
    const me = (await context.platform.client.dashboard.get()).identity;
    return 'handle=' + me.handle + ' timeline=' + context.platform.timeline;
  },
};
`,
      { mode: 0o644 },
    );
    model.enqueue({ toolCalls: [{ name: 'whoami', input: {} }] }, { toolCalls: [{ name: 'messages_create', input: { body: 'I am nova.' } }] }, 'answered');
    const run = await runAcx(['wake', agent, '--timeline', timeline, '--message', trigger], { env: wakeEnv(nova.token), home: tempDir() });
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.stringify(model.requests[1]!.body.input)).toContain(`handle=nova timeline=${timeline}`);
    expect(await messagesOn(ana.token, timeline)).toHaveLength(2);
  });

  it('a required MCP drop-in that hangs past its start timeout fails the wake: exit 1, nothing posted, the message left for a wake with the server up, which answers it once', async () => {
    const { ana, nova } = setUp();
    const timeline = await sharedTimeline(platform, ana, nova);
    const trigger = await post(ana.token, timeline, '@nova look up the release date');
    // The agent ships its drop-in (its own mcp/): required unless the file says "optional": true.
    const agent = copyOfAgent('mcp');
    const definition = JSON.parse(readFileSync(join(AGENT, 'agent.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(join(agent, 'agent.json'), JSON.stringify({ ...definition, tools: ['memory'] }));
    const pidFile = join(tempDir(), 'lookup.pid');
    const dropIn = (server: string, ...args: string[]) =>
      writeFileSync(join(agent, 'mcp', 'lookup.json'), JSON.stringify({ command: process.execPath, args: ['--disable-warning=ExperimentalWarning', join(ROOT, 'test/fixtures/mcp', server), ...args] }));
    dropIn('silent-server.ts', pidFile);
    const home = tempDir();
    // It never answers initialize, so any start timeout ends the wait; a short one keeps the test quick.
    const failed = await runAcx(['wake', agent, '--timeline', timeline, '--message', trigger], { env: wakeEnv(nova.token, { ACX_MCP_START_TIMEOUT: '0.5' }), home });
    expect(failed.status, failed.stderr).toBe(1);
    expect(failed.stderr).toMatch(/WARNING mcp server skipped server=lookup source=\S+lookup\.json required=true reason="failed to start or initialize: timed out after 0\.5 s/);
    expect(failed.stderr).toMatch(/ERROR wake end timeline=\S+ outcome=error error=".*required MCP server \\"lookup\\" did not start.*note="the agent could not start; the items stay unanswered for the next wake"/);
    expect(failed.stderr).toMatch(/^acx: No turn was started: the required MCP server "lookup" did not start\. lookup \(\S+lookup\.json\): failed to start or initialize: timed out after 0\.5 s/m);
    expect(failed.stderr).toMatch(/→ Fix the server and try again .*raise ACX_MCP_START_TIMEOUT .*To let turns run without it: set "optional": true in \S+lookup\.json/);
    expect(failed.stderr).not.toMatch(STACK_FRAME);
    expect(model.requests, 'no turn ran without the tool').toHaveLength(0);
    expect(await messagesOn(ana.token, timeline)).toEqual([{ handle: 'ana', body: '@nova look up the release date' }]);
    // The hung server went with the wake, not left running.
    expect(() => process.kill(Number(readFileSync(pidFile, 'utf8')), 0)).toThrow(expect.objectContaining({ code: 'ESRCH' }));

    // The server fixed: the next wake (a retry, or the next delivery without --message) answers the message, with the tool.
    dropIn('stdio-server.ts');
    model.enqueue({ toolCalls: [{ name: 'messages_create', input: { body: 'Thursday.' } }] }, 'answered');
    const retried = await runAcx(['wake', agent, '--timeline', timeline], { env: wakeEnv(nova.token), home });
    expect(retried.status, retried.stderr).toBe(0);
    expect(retried.stderr).toMatch(/wake end .*outcome=answered posted=1/);
    expect(model.requests[0]!.view.tools).toContain('lookup__echo');
    // The brief's manifest names every active tool: the platform's, the agent's memory, the MCP server's.
    const manifest = String((model.requests[0]!.body.input as Array<{ content: unknown }>)[0]!.content);
    for (const tool of ['messages_create', 'memory_write', 'lookup__echo']) expect(manifest).toMatch(new RegExp(`^- ${tool} \\(`, 'm'));
    expect(JSON.stringify(model.requests[0]!.body)).toContain('@ana: @nova look up the release date');
    expect(await messagesOn(ana.token, timeline)).toEqual([
      { handle: 'ana', body: '@nova look up the release date' },
      { handle: 'nova', body: 'Thursday.' },
    ]);
    const again = await runAcx(['wake', agent, '--timeline', timeline, '--message', trigger], { env: wakeEnv(nova.token), home });
    expect(again.stderr).toMatch(/wake end .*outcome=nothing-new posted=0/);
    expect(await messagesOn(ana.token, timeline)).toHaveLength(2);
  });
});
