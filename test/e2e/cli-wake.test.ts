// Wake mode end to end: `acx wake` as a router runs it, one real child process per event, against
// the local model server. An event is answered once however often it is delivered; a wake killed
// mid-turn loses nothing and repeats no side effect; a live wake's lease is never taken; a
// message that lands while the reply is generated gets the reply built again; the circuit
// breaker declines without a model call and keeps the event for later.
import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Journal } from '../../src/store/journal.ts';
import { PostgresJournalStore } from '../../src/store/postgres-journal.ts';
import { PostgresWakeStore } from '../../src/store/postgres-wake-store.ts';
import { SqliteWakeStore } from '../../src/store/sqlite-wake-store.ts';
import { filesHolding } from '../support/files.ts';
import { type ModelServer, type RecordedRequest, respondByTurn, startModelServer } from '../support/model-server.ts';
import { POSTGRES_SKIP, postgresForSuite } from '../support/postgres.ts';
import { scaled } from '../support/time-scale.ts';

const ROOT = join(import.meta.dirname, '../..');
const AGENT = join(ROOT, 'examples/notes-keeper');
/** Its agent id: on a shared PostgreSQL store, whose rows its sessions are. */
const AGENT_ID = 'notes-keeper';
const KEY = 'sk-test-WAKEKEY-2c9d41e07a';

let server: ModelServer;
/** Replies held back until the test releases them, by the event text they answer. */
const holds = new Map<string, { reached: () => void; reachedP: Promise<void>; release: () => void; releasedP: Promise<void> }>();

function hold(text: string) {
  let reached!: () => void;
  let release!: () => void;
  const reachedP = new Promise<void>((resolve) => (reached = resolve));
  const releasedP = new Promise<void>((resolve) => (release = resolve));
  const entry = { reached, reachedP, release, releasedP };
  holds.set(text, entry);
  return entry;
}

/** The newest message the user (not the harness's brief) wrote in this request. */
function eventText(request: RecordedRequest): string {
  const users = request.view.messages.filter((m) => m.role === 'user' && !m.text?.startsWith('<acx-brief>'));
  return users.at(-1)?.text ?? '';
}
const isFirstStep = (request: RecordedRequest) => request.view.messages.at(-2)?.role === 'user' || request.view.messages.at(-2) === undefined;

beforeAll(async () => {
  server = await startModelServer({
    fallback: respondByTurn(async ({ request }) => {
      const text = eventText(request);
      if (text.startsWith('poison')) return { fail: { status: 400 } };
      // A provider that quotes the key it was sent in its 401, as OpenAI's does.
      if (text.startsWith('auth-echo')) return { fail: { status: 401, message: `Incorrect API key provided: ${request.headers.authorization?.replace(/^Bearer /, '')}.` } };
      if (text.startsWith('While you were answering')) return `Rebuilt with: ${text.split('\n').at(-1)}`;
      // "chat:" messages are answered with text alone; the others write to memory first.
      const answered = text.startsWith('chat:') || request.view.messages.findLastIndex((m) => m.role === 'tool') > request.view.messages.findLastIndex((m) => m.role === 'user' && m.text === text);
      if (!answered) return { toolCalls: [{ name: 'memory_write', input: { key: `wake/${text}`, value: `seen ${text}` } }] };
      const held = holds.get(text);
      if (held) {
        held.reached();
        await held.releasedP;
      }
      return `Answered: ${text}`;
    }),
  });
});
afterAll(async () => {
  for (const held of holds.values()) held.release();
  await server.close();
});

function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/API_KEY|_TOKEN|^ACX_|_BASE_URL$/.test(key)) continue;
    env[key] = value;
  }
  return { ...env, OPENAI_API_KEY: KEY, OPENAI_BASE_URL: server.openaiBaseURL, ACX_MODEL: 'openai:wake-model', ...extra };
}

interface Wake {
  child: ChildProcess;
  done: Promise<{ status: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

function wake(home: string, args: string[], env: Record<string, string> = {}, nodeArgs: string[] = []): Wake {
  return acx(home, ['wake', AGENT, ...args], env, nodeArgs);
}

function acx(home: string, args: string[], env: Record<string, string> = {}, nodeArgs: string[] = []): Wake {
  const child = spawn(process.execPath, [...nodeArgs, join(ROOT, 'bin/acx.js'), ...args, '--home', home, '--config-home', home], {
    cwd: ROOT,
    env: cleanEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const done = new Promise<{ status: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr }));
  });
  return { child, done };
}

const requestsFor = (text: string) => server.requests.filter((r) => eventText(r) === text);

/** The agent's journal under the state home, opened the way a user inspecting it would. */
function readJournal<T>(home: string, fn: (journal: Journal) => T): T {
  const path = readdirSync(home, { recursive: true, encoding: 'utf8' }).find((p) => p.endsWith('journal.db'));
  const journal = new Journal(join(home, path!));
  try {
    return fn(journal);
  } finally {
    journal.close();
  }
}

describe.concurrent('acx wake (e2e)', { timeout: scaled(120_000) }, () => {
  it('answers an event once however often it is delivered; a wake with nothing new makes no model call', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-wake-'));
    const first = await wake(home, ['--session', 'room-1', '--event', 'evt-1', 'alpha one']).done;
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout).toBe('Answered: alpha one\n');
    expect(first.stderr).toMatch(/INFO wake start session=room-1 event=evt-1 new_event=true/);
    expect(first.stderr).toMatch(/INFO wake start session=room-1 event=evt-1 new_event=true provider=openai model=wake-model/);
    expect(first.stderr).toMatch(/INFO wake end session=room-1 outcome=answered events=1 turns=1 steps=2 max_steps=12/);
    expect(requestsFor('alpha one')).toHaveLength(2);

    const again = await wake(home, ['--session', 'room-1', '--event', 'evt-1', 'alpha one']).done;
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout, 'a redelivered event gets no second reply').toBe('');
    expect(again.stderr).toMatch(/new_event=false/);
    expect(again.stderr).toMatch(/outcome=nothing-new turns=0/);
    const bare = await wake(home, ['--session', 'room-1']).done;
    expect(bare.status, bare.stderr).toBe(0);
    expect(bare.stdout).toBe('');
    expect(requestsFor('alpha one'), 'no model call after the first wake').toHaveLength(2);
    expect(first.stderr + again.stderr).not.toContain(KEY);
  });

  it('a wake killed mid-turn loses nothing: the next wake finishes the same turn, and no tool runs twice', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-wake-'));
    const held = hold('beta two');
    const killed = wake(home, ['--session', 'room-2', '--event', 'evt-2', 'beta two']);
    await held.reachedP; // step 1 ran memory_write; the model is answering step 2
    killed.child.kill('SIGKILL');
    const dead = await killed.done;
    expect(dead.signal).toBe('SIGKILL');
    expect(dead.stdout).toBe('');
    holds.delete('beta two');
    held.release();

    const next = await wake(home, ['--session', 'room-2']).done;
    expect(next.status, next.stderr).toBe(0);
    expect(next.stdout).toBe('Answered: beta two\n');
    expect(next.stderr).toMatch(/INFO turn resume session=room-2/);
    const firstSteps = requestsFor('beta two').filter(isFirstStep);
    expect(firstSteps, 'step 1 (the memory_write call) was not asked for again').toHaveLength(1);
    const journal = readJournal(home, (j) => j.messages('room-2'));
    expect(journal.filter((m) => m.kind === 'user'), 'the message was taken once').toHaveLength(1);
    const writes = journal.flatMap((m) =>
      m.kind === 'assistant' && Array.isArray(m.message.content) ? m.message.content.filter((p) => p.type === 'tool-call') : [],
    );
    expect(writes, 'memory_write ran once').toHaveLength(1);

    const after = await wake(home, ['--session', 'room-2', '--event', 'evt-2', 'beta two']).done;
    expect(after.stdout, 'and it stays answered').toBe('');
  });

  it('a second wake while one is answering leaves its event to the live wake, which answers both', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-wake-'));
    const held = hold('gamma three');
    const live = wake(home, ['--session', 'room-3', '--event', 'evt-3a', 'gamma three']);
    await held.reachedP;
    const second = await wake(home, ['--session', 'room-3', '--event', 'evt-3b', 'delta four']).done;
    expect(second.status, second.stderr).toBe(0);
    expect(second.stdout).toBe('');
    expect(second.stderr).toMatch(new RegExp(`wake end session=room-3 outcome=busy holder_pid=${live.child.pid}`));
    expect(requestsFor('delta four'), 'the busy wake made no model call').toHaveLength(0);
    held.release();
    const first = await live.done;
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout).toBe('Answered: gamma three\nAnswered: delta four\n');
    expect(first.stderr).toMatch(/outcome=answered events=2 turns=2/);
  });

  it("a person's message that lands while the reply is written is seen before the agent replies", async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-wake-'));
    const held = hold('chat: deploy the release');
    const live = wake(home, ['--session', 'room-8', '--event', 'd1', 'chat: deploy the release']);
    await held.reachedP; // the reply is being generated
    const stop = await wake(home, ['--session', 'room-8', '--event', 'd2', '--sender', 'bob', 'STOP, do not deploy']).done;
    expect(stop.stderr).toMatch(/outcome=busy/);
    held.release();
    const first = await live.done;
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout, 'one reply, written after the STOP was read').toMatch(/^Rebuilt with: \[\S+Z\] bob: STOP, do not deploy\n$/);
    expect(first.stderr).toMatch(/INFO wake rebuild session=room-8 batch=d1 build=2 late=d2/);
    expect(first.stderr).toMatch(/outcome=answered events=2 turns=2/);
    const again = await wake(home, ['--session', 'room-8', '--event', 'd2', 'STOP, do not deploy']).done;
    expect(again.stdout, 'both events are answered').toBe('');
  });

  it('an agent that cannot start keeps its event: the wake says why, and a later wake answers it', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-wake-'));
    const keyless = await wake(home, ['--session', 'room-9', '--event', 'k1', 'chat: are you there'], { OPENAI_API_KEY: '' }).done;
    expect(keyless.status).toBe(1);
    expect(keyless.stderr).toMatch(/INFO wake start session=room-9 event=k1 new_event=true/);
    expect(keyless.stderr).toMatch(/ERROR wake end session=room-9 outcome=error answered=0 error=.*OPENAI_API_KEY.* note="pending events stay in the inbox for the next wake"/);
    expect(requestsFor('chat: are you there')).toHaveLength(0);
    const later = await wake(home, ['--session', 'room-9']).done;
    expect(later.status, later.stderr).toBe(0);
    expect(later.stdout).toBe('Answered: chat: are you there\n');
  });

  it('a required MCP server that does not start keeps its event: exit 1 naming the server, no turn; a wake after the fix answers it', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-wake-'));
    // The config home's drop-ins are optional unless they say "required": true.
    mkdirSync(join(home, 'mcp'));
    const dropIn = join(home, 'mcp', 'widgets.json');
    writeFileSync(dropIn, JSON.stringify({ command: process.execPath, args: [join(ROOT, 'test/fixtures/mcp/crash-server.ts')], required: true }));
    const down = await wake(home, ['--session', 'room-13', '--event', 'm1', 'chat: widgets?']).done;
    expect(down.status, down.stderr).toBe(1);
    expect(down.stderr).toMatch(/WARNING mcp server skipped server=widgets source=\S+widgets\.json required=true reason="failed to start or initialize: .*fatal: cannot open the widget database/);
    expect(down.stderr).toMatch(/ERROR wake end session=room-13 outcome=error answered=0 error="No turn was started: the required MCP server \\"widgets\\" did not start\..* note="pending events stay in the inbox for the next wake"/);
    expect(down.stderr).toMatch(/→ .*To let turns run without it: drop "required": true from \S+widgets\.json/);
    expect(requestsFor('chat: widgets?')).toHaveLength(0);
    rmSync(dropIn);
    const fixed = await wake(home, ['--session', 'room-13']).done;
    expect(fixed.status, fixed.stderr).toBe(0);
    expect(fixed.stdout).toBe('Answered: chat: widgets?\n');
  });

  it('a broken configuration keeps its event: the wake says why, and a wake after the fix answers it', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-wake-'));
    writeFileSync(join(home, 'model_params.json'), '{ "temperature": ');
    const broken = await wake(home, ['--session', 'room-10', '--event', 'b1', 'chat: still there?']).done;
    expect(broken.status).toBe(1);
    expect(broken.stderr).toMatch(/INFO wake start session=room-10 event=b1 new_event=true/);
    expect(broken.stderr).toMatch(/ERROR wake end session=room-10 outcome=error answered=0 error=".*model_params\.json is not valid JSON/);
    expect(requestsFor('chat: still there?')).toHaveLength(0);
    rmSync(join(home, 'model_params.json'));
    const fixed = await wake(home, ['--session', 'room-10']).done;
    expect(fixed.status, fixed.stderr).toBe(0);
    expect(fixed.stdout).toBe('Answered: chat: still there?\n');
  });

  it("the agent's own message routed back is recorded, never answered, and starts nothing", async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-wake-'));
    // No key: a wake that had to start the agent would fail; these must not need it.
    const noKey = { OPENAI_API_KEY: '' };
    const own = await wake(home, ['--session', 'room-10', '--event', 'o1', '--sender', 'keeper', '--self', 'keeper', 'chat: my own post'], noKey).done;
    expect(own.status, own.stderr).toBe(0);
    expect(own.stdout).toBe('');
    expect(own.stderr).toMatch(/INFO wake start session=room-10 event=o1 new_event=true own=true/);
    expect(own.stderr).toMatch(/outcome=nothing-new/);
    expect(requestsFor('chat: my own post')).toHaveLength(0);
    const first = await wake(home, ['--session', 'room-10', '--event', 'p1', '--sender', 'dana', '--self', 'keeper', 'chat: hello keeper']).done;
    expect(first.stdout).toMatch(/^Answered: \[\S+Z\] dana: chat: hello keeper\n$/);
    const redelivered = await wake(home, ['--session', 'room-10', '--event', 'p1', '--sender', 'dana', 'chat: hello keeper'], noKey).done;
    expect(redelivered.status, 'a repeated delivery starts nothing either').toBe(0);
    expect(redelivered.stdout).toBe('');
  });

  it('the circuit breaker declines a burst without a model call and keeps the event for a later wake', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-wake-'));
    const breaker = ['--breaker-max', '2', '--breaker-window', '600'];
    for (const [event, text] of [['e1', 'burst one'], ['e2', 'burst two']] as const) {
      const ok = await wake(home, ['--session', 'room-4', '--event', event, text, ...breaker]).done;
      expect(ok.status, ok.stderr).toBe(0);
    }
    const tripped = await wake(home, ['--session', 'room-4', '--event', 'e3', 'burst three', ...breaker]).done;
    expect(tripped.status, tripped.stderr).toBe(0);
    expect(tripped.stdout).toBe('');
    expect(tripped.stderr).toMatch(/WARNING wake breaker tripped session=room-4 wakes=3 max=2 window=600s/);
    expect(tripped.stderr).toMatch(/INFO wake end session=room-4 outcome=declined reason="circuit breaker tripped" wakes=3/);
    expect(requestsFor('burst three')).toHaveLength(0);
    const stillTripped = await wake(home, ['--session', 'room-4', ...breaker]).done;
    expect(stillTripped.stderr).toMatch(/INFO wake end session=room-4 outcome=declined/);
    expect(stillTripped.stderr, 'the trip is reported once, not on every declined wake').not.toMatch(/WARNING/);

    // The operator lifts the breaker (0 disables it): the declined event was kept and is answered.
    const lifted = await wake(home, ['--session', 'room-4', '--breaker-max', '0']).done;
    expect(lifted.status, lifted.stderr).toBe(0);
    expect(lifted.stdout).toBe('Answered: burst three\n');
  });

  it('an event that keeps failing is retried by later wakes, then set aside so the inbox moves on', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-wake-'));
    const args = ['--session', 'room-5', '--max-attempts', '2'];
    const first = await wake(home, [...args, '--event', 'p1', 'poison pill']).done;
    expect(first.status).toBe(1);
    expect(first.stderr).toMatch(/ERROR wake end session=room-5 outcome=error answered=0/);
    expect(first.stderr).toMatch(/pending events stay in the inbox/);
    const second = await wake(home, [...args, '--event', 'n1', 'next one']).done;
    expect(second.status).toBe(1);
    expect(second.stderr).toMatch(/ERROR wake event failed session=room-5 event=p1 attempts=2/);
    expect(second.stdout, 'the inbox moved on to the next event').toBe('Answered: next one\n');
    expect(second.stderr).toMatch(/set aside after 2 failed attempts: p1/);
    const third = await wake(home, args).done;
    expect(third.status, third.stderr).toBe(0);
    expect(requestsFor('poison pill'), 'a set-aside event is not tried again').toHaveLength(2);
  });

  it('acx cleanup removes a finished session and never one a live wake is answering', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-wake-'));
    const done = await wake(home, ['--session', 'room-6', '--event', 'c1', 'cleanup one']).done;
    expect(done.status, done.stderr).toBe(0);
    const held = hold('cleanup two');
    const live = wake(home, ['--session', 'room-7', '--event', 'c2', 'cleanup two']);
    await held.reachedP;
    const refused = await acx(home, ['cleanup', AGENT, '--session', 'room-7']).done;
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(new RegExp(`session "room-7" is being answered by a live wake \\(pid ${live.child.pid}\\); nothing was removed`));
    held.release();
    expect((await live.done).status).toBe(0);

    const dry = await acx(home, ['cleanup', AGENT, '--session', 'room-6', '--dry-run']).done;
    expect(dry.stdout).toBe('would remove room-6 (4 messages, 1 wake events)\n');
    expect(readJournal(home, (j) => j.messages('room-6'))).toHaveLength(4);
    const removed = await acx(home, ['cleanup', AGENT, '--session', 'room-6']).done;
    expect(removed.status, removed.stderr).toBe(0);
    expect(removed.stdout).toBe('removed room-6 (4 messages, 1 wake events)\n');
    expect(readJournal(home, (j) => [j.messages('room-6').length, j.hasSession('room-6'), j.messages('room-7').length])).toEqual([0, false, 4]);
    const again = await wake(home, ['--session', 'room-6', '--event', 'c1', 'cleanup one']).done;
    expect(again.stdout, 'a removed session starts afresh').toBe('Answered: cleanup one\n');

    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const sweep = await acx(home, ['cleanup', AGENT, '--idle-days', String(1 / 86_400)]).done;
    expect(sweep.status, sweep.stderr).toBe(0);
    expect(sweep.stdout.split('\n').filter(Boolean).sort()).toEqual([
      'removed room-6 (4 messages, 1 wake events)',
      'removed room-7 (4 messages, 1 wake events)',
    ]);
  });

  it('a 401 that echoes a key without a vendor prefix: the key is nowhere in stderr or wake.db, the error kept scrubbed', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-wake-'));
    const plainKey = 'OrgKey-Wk3bN5xWc3Vt9LdQ';
    const env = { OPENAI_API_KEY: plainKey, ACX_LOG_LEVEL: 'debug' };
    const inbox = async () => {
      const store = new SqliteWakeStore(join(home, readdirSync(home, { recursive: true, encoding: 'utf8' }).find((p) => p.endsWith('wake.db'))!));
      try {
        const item = (await store.item('room-11', 'a1'))!;
        return [item.state, item.error];
      } finally {
        await store.close();
      }
    };
    const first = await wake(home, ['--session', 'room-11', '--event', 'a1', '--max-attempts', '2', 'auth-echo are you there'], env).done;
    expect(first.status).toBe(1);
    expect(first.stderr).toMatch(/ERROR wake end session=room-11 outcome=error answered=0 error="OpenAI rejected the API key \(HTTP 401\): Incorrect API key provided: \[REDACTED\]\."/);
    expect(await inbox(), 'pending, with the error of its attempt').toEqual(['pending', 'OpenAI rejected the API key (HTTP 401): Incorrect API key provided: [REDACTED].']);
    const second = await wake(home, ['--session', 'room-11', '--max-attempts', '2'], env).done;
    expect(second.status).toBe(1);
    expect(second.stderr).toMatch(/ERROR wake event failed session=room-11 event=a1 attempts=2 error="OpenAI rejected the API key \(HTTP 401\): Incorrect API key provided: \[REDACTED\]\."/);
    expect(await inbox(), 'set aside').toEqual(['failed', 'OpenAI rejected the API key (HTTP 401): Incorrect API key provided: [REDACTED].']);
    expect(first.stderr + second.stderr).not.toContain(plainKey);
    expect(filesHolding(home, plainKey)).toEqual([]);
  });

  it('bad input is refused before anything is recorded', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-wake-'));
    const noSession = await wake(home, ['hello']).done;
    expect(noSession.status).toBe(2);
    expect(noSession.stderr).toMatch(/--session <id>/);
    // Wake mode offers no --harness; an ACP harness chosen by its variable is refused.
    const acp = await wake(home, ['--session', 's', 'hello'], { ACX_HARNESS: 'codex' }).done;
    expect(acp.status).toBe(2);
    expect(acp.stderr).toMatch(/needs acx's native engine .*ACX_HARNESS=codex cannot resume a turn/);
    const flag = await wake(home, ['--session', 's', '--harness', 'codex', 'hello']).done;
    expect(flag.status).toBe(2);
    expect(flag.stderr).toMatch(/^acx: unknown option --harness for acx wake/);
    const badBreaker = await wake(home, ['--session', 's', '--breaker-window', '-1', 'hello']).done;
    expect(badBreaker.status).toBe(2);
    expect(badBreaker.stderr).toMatch(/^acx: --breaker-window must be a positive number of seconds, not "-1"\.\n  → Set --breaker-window \(or ACX_WAKE_BREAKER_WINDOW\)/);
    expect(readdirSync(home, { recursive: true, encoding: 'utf8' }).some((p) => p.endsWith('wake.db'))).toBe(false);
  });
});

// Alone, after the suite above: a crowd of processes on two cores is load enough by itself.
describe('acx wake on a fresh home (e2e)', { timeout: scaled(180_000) }, () => {
  it('concurrent wakes on a fresh home each record their event, and every event is answered', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-wake-'));
    // Each process waits at a barrier before acx starts, so all of them reach the fresh stores together.
    const barrier = join(home, 'barrier.mjs');
    const go = join(home, 'go');
    writeFileSync(
      barrier,
      `import { existsSync, writeFileSync } from 'node:fs';\n` +
        `writeFileSync(${JSON.stringify(home)} + '/ready-' + process.pid, '');\n` +
        `while (!existsSync(${JSON.stringify(go)})) await new Promise((resolve) => setTimeout(resolve, 2));\n`,
    );
    const deliveries = Array.from({ length: 12 }, (_, i) => ({ session: `crowd-${i % 4}`, event: `f${i}`, text: `chat: crowd ${i}` }));
    const wakes = deliveries.map((d) => wake(home, ['--session', d.session, '--event', d.event, '--no-pace', d.text], {}, ['--import', barrier]));
    while (readdirSync(home).filter((name) => name.startsWith('ready-')).length < wakes.length) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(readdirSync(home, { recursive: true, encoding: 'utf8' }).some((p) => p.endsWith('.db')), 'no store exists before the barrier').toBe(false);
    writeFileSync(go, '');
    const results = await Promise.all(wakes.map((w) => w.done));
    expect(results.filter((r) => r.status !== 0).map((r) => r.stderr)).toEqual([]);
    const path = readdirSync(home, { recursive: true, encoding: 'utf8' }).find((p) => p.endsWith('wake.db'));
    const store = new SqliteWakeStore(join(home, path!));
    try {
      const recorded = await Promise.all(deliveries.map(async (d) => [d.event, (await store.item(d.session, d.event))?.state]));
      expect(recorded).toEqual(deliveries.map((d) => [d.event, 'done']));
    } finally {
      await store.close();
    }
    // Each event's text reached the model and came back in the reply of the turn that answered it.
    const replyLines = results.flatMap((r) => r.stdout.split('\n'));
    for (const d of deliveries) expect(replyLines.some((line) => line.endsWith(d.text)), d.text).toBe(true);
  });
});

// The same wake, with ACX_STORE on a real PostgreSQL cluster: the inbox, the leases and the
// journal all live there (nothing in wake.db or journal.db), and a killed wake's session is taken
// over once its lease expires — by whichever process (on whichever host) wakes next. Each case
// on its own database, side by side.
describe.concurrent('acx wake on PostgreSQL (e2e)', { timeout: scaled(180_000) }, () => {
  const postgres = postgresForSuite();
  const storeFiles = (home: string) => readdirSync(home, { recursive: true, encoding: 'utf8' }).filter((p) => p.endsWith('wake.db') || p.endsWith('journal.db'));

  it('a store that cannot be reached fails the wake clearly, and neither it nor resolved-config shows the password', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-wake-pg-'));
    const password = 'pw-Qx81nZ7secret';
    const unreachable = `postgres://acx:${password}@/acx?host=${encodeURIComponent(join(home, 'no-server-here'))}`;
    const failed = await wake(home, ['--session', 'pg-room-0', '--event', 'u1', 'chat: anyone?'], { ACX_STORE: unreachable }).done;
    expect(failed.status).not.toBe(0);
    // The URL is shown masked (and the CLI's scrubber may mask the userinfo once more).
    expect(failed.stderr).toMatch(/Cannot connect to the PostgreSQL store at postgres:\/\/acx:(\*\*\*|\[REDACTED\])@\/acx\?host=/);
    const config = await acx(home, ['resolved-config', AGENT, '--store', unreachable]).done;
    expect(config.status, config.stderr).toBe(0);
    expect(JSON.parse(config.stdout)).toMatchObject({ store: 'postgres', store_url: expect.stringMatching(/^postgres:\/\/acx:\*\*\*@/), store_scope: AGENT_ID });
    // A cartridge's rows are scoped as its files are: by its state directory, not its manifest id alone.
    const cartridge = join(import.meta.dirname, '../../examples/cartridges');
    const boxed = await acx(home, ['resolved-config', join(cartridge, 'notes-keeper.acx'), '--registry', join(cartridge, 'trust-registry.json'), '--store', unreachable]).done;
    expect(boxed.status, boxed.stderr).toBe(0);
    expect(JSON.parse(boxed.stdout)).toMatchObject({ agent: { id: 'notes-keeper' }, store_scope: expect.stringMatching(/^cartridges\/notes-keeper-[0-9a-f]{12}$/) });
    expect(failed.stdout + failed.stderr + config.stdout + config.stderr).not.toContain(password);
    expect(storeFiles(home), 'nothing fell back to SQLite').toEqual([]);
  });

  it.skipIf(POSTGRES_SKIP !== '')(`answers once however often delivered, leaves a second wake's event to the live one, and writes no SQLite store${POSTGRES_SKIP}`, async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-wake-pg-'));
    const url = postgres.database('wake_e2e');
    const env = { ACX_STORE: url };
    const held = hold('pg one');
    const live = wake(home, ['--session', 'pg-room-1', '--event', 'pg-1', 'pg one'], env);
    await held.reachedP;
    const second = await wake(home, ['--session', 'pg-room-1', '--event', 'pg-2', 'chat: pg two'], env).done;
    expect(second.status, second.stderr).toBe(0);
    expect(second.stderr).toMatch(new RegExp(`wake end session=pg-room-1 outcome=busy holder_pid=${live.child.pid}`));
    held.release();
    const first = await live.done;
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout).toBe('Answered: pg one\nAnswered: chat: pg two\n');
    const again = await wake(home, ['--session', 'pg-room-1', '--event', 'pg-1', 'pg one'], env).done;
    expect(again.stdout, 'a redelivered event gets no second reply').toBe('');
    expect(again.stderr).toMatch(/new_event=false/);
    expect(storeFiles(home), 'inbox and journal are on PostgreSQL').toEqual([]);
    const store = await PostgresWakeStore.open(url, { agentId: AGENT_ID });
    const journal = await PostgresJournalStore.open(url, { agentId: AGENT_ID });
    try {
      expect((await store.items('pg-room-1')).map((item) => [item.eventId, item.state])).toEqual([
        ['pg-1', 'done'],
        ['pg-2', 'done'],
      ]);
      expect((await journal.turns('pg-room-1')).map((turn) => turn.status)).toEqual(['done', 'done']);
    } finally {
      await store.close();
      await journal.close();
    }
    expect(first.stderr + second.stderr + again.stderr).not.toContain(KEY);
  });

  it.skipIf(POSTGRES_SKIP !== '')(`acx sessions and acx cleanup read and remove sessions kept on PostgreSQL, never one a live wake answers${POSTGRES_SKIP}`, async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-wake-pg-'));
    const url = postgres.database('wake_e2e');
    const env = { ACX_STORE: url };
    const none = await acx(home, ['sessions', AGENT], env).done;
    expect(none.status, none.stderr).toBe(0);
    // Names the store it read (never the state home, where nothing was looked for).
    expect(none.stdout).toMatch(/^No sessions in postgres:\/\/\S+ for agent \S+\.\n$/);
    const done = await wake(home, ['--session', 'pg-room-3', '--event', 'pc-1', 'chat: pg cleanup one'], env).done;
    expect(done.status, done.stderr).toBe(0);
    const held = hold('chat: pg cleanup two');
    const live = wake(home, ['--session', 'pg-room-4', '--event', 'pc-2', 'chat: pg cleanup two'], env);
    await held.reachedP;
    const listed = await acx(home, ['sessions', AGENT, '--json'], env).done;
    expect(listed.status, listed.stderr).toBe(0);
    const rows = (JSON.parse(listed.stdout) as { sessions: Array<{ id: string; turns: number; unfinishedTurn: boolean; pendingEvents: number }> }).sessions;
    expect(rows.map((r) => [r.id, r.turns, r.unfinishedTurn, r.pendingEvents]).sort()).toEqual([
      ['pg-room-3', 1, false, 0],
      ['pg-room-4', 1, true, 1],
    ]);
    const shown = await acx(home, ['sessions', 'show', 'pg-room-3', '--store', url]).done;
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.stdout).toContain('chat: pg cleanup one');
    const refused = await acx(home, ['cleanup', AGENT, '--session', 'pg-room-4'], env).done;
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(new RegExp(`session "pg-room-4" is being answered by a live wake \\(pid ${live.child.pid}\\); nothing was removed`));
    held.release();
    expect((await live.done).status).toBe(0);
    const removed = await acx(home, ['cleanup', AGENT, '--session', 'pg-room-3'], env).done;
    expect(removed.status, removed.stderr).toBe(0);
    expect(removed.stdout).toBe('removed pg-room-3 (2 messages, 1 wake events)\n');
    const after = await acx(home, ['sessions', AGENT, '--json'], env).done;
    expect((JSON.parse(after.stdout) as { sessions: Array<{ id: string }> }).sessions.map((r) => r.id)).toEqual(['pg-room-4']);
    expect(storeFiles(home)).toEqual([]);
  });

  it.skipIf(POSTGRES_SKIP !== '')(`two agents with the same session and event ids on one store answer apart, and acx sessions shows each its own${POSTGRES_SKIP}`, async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-wake-pg-'));
    const url = postgres.database('wake_e2e');
    const env = { ACX_STORE: url };
    // A second agent: the same definition under another id.
    const twin = join(home, 'twin');
    cpSync(AGENT, twin, { recursive: true });
    const manifest = JSON.parse(readFileSync(join(twin, 'agent.json'), 'utf8')) as { id: string };
    writeFileSync(join(twin, 'agent.json'), JSON.stringify({ ...manifest, id: 'notes-twin' }));
    // The same event id in the same session id: the same wake turn id, too.
    const keeper = await wake(home, ['--session', 'pg-room-5', '--event', 'pt-1', 'chat: keeper five'], env).done;
    const other = await acx(home, ['wake', twin, '--session', 'pg-room-5', '--event', 'pt-1', 'chat: twin five'], env).done;
    expect([keeper.status, other.status], keeper.stderr + other.stderr).toEqual([0, 0]);
    expect(keeper.stdout).toBe('Answered: chat: keeper five\n');
    expect(other.stdout, "the twin's event is its own, not a duplicate of the keeper's").toBe('Answered: chat: twin five\n');
    const mine = await acx(home, ['sessions', AGENT, '--json'], env).done;
    const rows = (JSON.parse(mine.stdout) as { sessions: Array<{ agent: string; id: string; turns: number }> }).sessions;
    expect(rows.map((r) => [r.agent, r.id, r.turns])).toEqual([[AGENT_ID, 'pg-room-5', 1]]);
    const shown = await acx(home, ['sessions', 'show', 'pg-room-5', twin, '--json'], env).done;
    expect(shown.stdout).toContain('chat: twin five');
    expect(shown.stdout).not.toContain('keeper five');
    const all = await acx(home, ['sessions', '--json'], env).done;
    expect((JSON.parse(all.stdout) as { sessions: Array<{ agent: string; id: string }> }).sessions.map((r) => [r.agent, r.id])).toEqual([
      [AGENT_ID, 'pg-room-5'],
      ['notes-twin', 'pg-room-5'],
    ]);
    const ambiguous = await acx(home, ['sessions', 'show', 'pg-room-5'], env).done;
    expect(ambiguous.stderr).toMatch(/Several agents have a session "pg-room-5": notes-keeper, notes-twin/);
  });

  it.skipIf(POSTGRES_SKIP !== '')(`a wake SIGKILLed mid-turn: the next wake on its machine finishes the same turn at once, and no tool runs twice${POSTGRES_SKIP}`, async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-wake-pg-'));
    const url = postgres.database('wake_e2e');
    const env = { ACX_STORE: url };
    const held = hold('pg kill');
    const killed = wake(home, ['--session', 'pg-room-2', '--event', 'pk-1', 'pg kill'], env);
    await held.reachedP; // step 1 ran memory_write; the model is answering step 2
    killed.child.kill('SIGKILL');
    expect((await killed.done).signal).toBe('SIGKILL');
    holds.delete('pg kill');
    held.release();
    // The dead wake's leases (the session's wake lease, its turn's session lease) are still running,
    // but their holder exited on this machine: the next wake here takes them over without waiting
    // (a wake on another host waits for them to lapse: test/store/wake-store.test.ts,
    // test/harness/session-lease.test.ts). The breaker off: these wakes are the test's.
    const next = await wake(home, ['--session', 'pg-room-2', '--breaker-max', '0'], env).done;
    expect(next.status, next.stderr).toBe(0);
    expect(next.stdout, next.stderr).toBe('Answered: pg kill\n');
    expect(next.stderr).toMatch(/INFO turn resume session=pg-room-2/);
    expect(requestsFor('pg kill').filter(isFirstStep), 'step 1 (the memory_write call) was not asked for again').toHaveLength(1);
    const journal = await PostgresJournalStore.open(url, { agentId: AGENT_ID });
    try {
      const messages = await journal.messages('pg-room-2');
      expect(messages.filter((m) => m.kind === 'user'), 'the message was taken once').toHaveLength(1);
      const writes = messages.flatMap((m) => (m.kind === 'assistant' && Array.isArray(m.message.content) ? m.message.content.filter((p) => p.type === 'tool-call') : []));
      expect(writes, 'memory_write ran once').toHaveLength(1);
    } finally {
      await journal.close();
    }
    expect(storeFiles(home)).toEqual([]);
  });

  it.skipIf(POSTGRES_SKIP !== '')(`a wake whose lease is taken over mid-turn stops, exits non-zero so its delivery is retried, and the retry answers once${POSTGRES_SKIP}`, async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-wake-pg-'));
    const url = postgres.database('wake_e2e');
    const env = { ACX_STORE: url };
    const held = hold('pg_lease');
    const stolen = wake(home, ['--session', 'pg-room-3', '--event', 'pl-1', 'pg_lease'], env);
    await held.reachedP; // step 1 ran memory_write; the model is answering step 2
    // Another wake takes the session over, as it would had this one's lease lapsed unrenewed.
    const store = await PostgresWakeStore.open(url, { agentId: AGENT_ID });
    try {
      await store.pool.query("UPDATE acx_wake_leases SET holder = $1, expires_at = now() + interval '1 hour' WHERE session_id = 'pg-room-3'", [JSON.stringify({ pid: 4242, host: 'another-host', started: 1 })]);
      const stopped = await stolen.done; // its next renewal (every 5 s) finds the lease gone
      expect(stopped.status, stopped.stderr).toBe(1);
      expect(stopped.stderr).toMatch(/WARNING wake end session=pg-room-3 outcome=lease-lost/);
      expect(stopped.stderr).toMatch(/acx wake: stopped: this wake's lease on session pg-room-3 was lost/);
      expect(stopped.stdout, 'no reply from the stopped wake').toBe('');
      holds.delete('pg_lease');
      held.release();
      expect((await store.item('pg-room-3', 'pl-1'))?.state).toBe('pending');
      // The wake that took over died unanswered; the delivery's retry finishes the same turn.
      await store.pool.query("DELETE FROM acx_wake_leases WHERE session_id = 'pg-room-3'");
    } finally {
      await store.close();
    }
    const retried = await wake(home, ['--session', 'pg-room-3', '--event', 'pl-1', 'pg_lease'], env).done;
    expect(retried.status, retried.stderr).toBe(0);
    expect(retried.stdout).toBe('Answered: pg_lease\n');
    expect(requestsFor('pg_lease').filter(isFirstStep), 'step 1 (the memory_write call) was not asked for again').toHaveLength(1);
  });
});
