// Issue 33 §2: session.fork({ atTurn }) and session.rewind({ toTurn, files }) on engine sessions,
// on the SQLite journal and on a throwaway PostgreSQL cluster. Through the real OpenAI wire and
// the real fs_write and execute tools on a temp workspace; checked from what the model is sent
// next, from the journal and from the files on disk.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AcxError, HarnessCapabilityUnsupportedError, RewindRefusedError } from '../../src/core/errors.ts';
import { createEngineHarness } from '../../src/harness/engine-harness.ts';
import type { AgentSession } from '../../src/harness/agent-session.ts';
import type { Harness } from '../../src/harness/harness.ts';
import { HarnessAgent } from '../../src/harness/harness-agent.ts';
import { createExecuteTool } from '../../src/tools/builtin/execute.ts';
import { createFsTools } from '../../src/tools/builtin/fs.ts';
import type { ModelServer, RecordedRequest } from '../support/model-server.ts';
import { POSTGRES_SKIP, type PostgresCluster, startPostgres } from '../support/postgres.ts';
import { openaiModel, startModelServer, tmpHome } from '../engine/helpers.ts';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

let cluster: PostgresCluster | undefined;
beforeAll(() => {
  if (!POSTGRES_SKIP) cluster = startPostgres();
}, 120_000);
afterAll(() => cluster?.stop());

let databases = 0;
const stores = [
  { name: 'SQLite', skip: '', store: () => undefined },
  { name: 'PostgreSQL', skip: POSTGRES_SKIP, store: () => cluster!.createDatabase(`fork${++databases}`) },
];

/** The user messages a model request carried, in order (the brief left out). */
function userTexts(request: RecordedRequest): string[] {
  return request.view.messages.filter((m) => m.role === 'user' && !m.text.includes('<acx-brief>')).map((m) => m.text);
}

const read = (workspace: string, path: string) => readFileSync(join(workspace, path), 'utf8');

describe.each(stores)('fork and rewind on $name', ({ skip, store }) => {
  let workspace: string;
  let harness: ReturnType<typeof createEngineHarness>;
  let agent: HarnessAgent;

  beforeEach(async () => {
    if (skip) return;
    workspace = mkdtempSync(join(tmpdir(), 'acx-fork-ws-'));
    writeFileSync(join(workspace, 'notes.txt'), 'original');
    writeFileSync(join(workspace, 'data.txt'), 'data before');
    const url = store();
    harness = createEngineHarness({ model: await openaiModel(server), home: tmpHome(), retryBaseMs: 1, ...(url ? { store: url } : {}) });
    const tools = [...createFsTools({ workspace }), createExecuteTool({ workspace, isolation: 'none', profile: 'unlocked' })];
    agent = new HarnessAgent({ harness, tools, permissionMode: 'allow-all' });
  });
  afterEach(async () => {
    if (!skip) await harness.close!();
  });

  /** Three turns: 1 writes notes.txt and creates new.txt; 2 rewrites notes.txt, then a command creates made.txt and edits new.txt; 3 only talks. */
  async function threeTurns(): Promise<AgentSession> {
    server.enqueue(
      { toolCalls: [{ name: 'fs_write', input: { path: 'notes.txt', content: 'v1' } }] },
      { toolCalls: [{ name: 'fs_write', input: { path: 'new.txt', content: 'new' } }] },
      'done one',
      { toolCalls: [{ name: 'fs_write', input: { path: 'notes.txt', content: 'v2' } }] },
      { toolCalls: [{ name: 'execute', input: { command: 'echo made > made.txt && echo changed > new.txt' } }] },
      'done two',
      'done three',
    );
    const session = await agent.createSession({ sessionId: 'main' });
    for (const prompt of ['turn one', 'turn two', 'turn three']) await agent.generate({ session, prompt });
    expect(read(workspace, 'notes.txt')).toBe('v2');
    return session;
  }

  it.skipIf(skip !== '')(`fork({ atTurn: 1 }) opens a new session with turn 1's history; the original keeps all three${skip}`, async () => {
    const session = await threeTurns();
    const fork = await session.fork({ atTurn: 1 });
    expect(fork.id).not.toBe('main');
    expect(await harness.journal.hasSession(fork.id)).toBe(true);
    expect((await harness.journal.turns(fork.id)).map((t) => [t.status, t.finalText])).toEqual([['done', 'done one']]);
    expect((await harness.journal.turns('main')).map((t) => t.finalText)).toEqual(['done one', 'done two', 'done three']);

    server.enqueue('fork reply', 'main reply');
    expect((await agent.generate({ session: fork, prompt: 'on the fork' })).text).toBe('fork reply');
    expect(userTexts(server.requests.at(-1)!)).toEqual(['turn one', 'on the fork']);
    await agent.generate({ session, prompt: 'on main' });
    expect(userTexts(server.requests.at(-1)!), 'the original is untouched by the fork').toEqual(['turn one', 'turn two', 'turn three', 'on main']);

    const whole = await session.fork();
    expect((await harness.journal.turns(whole.id)).length, 'by default every finished turn').toBe(4);
    const refused = await session.fork({ atTurn: 9 }).catch((error: unknown) => error);
    expect(AcxError.hasCode(refused, 'usage') && refused.message).toBe('Session main has 4 turns; the turn to fork at is a whole number from 0 to 4, not 9.');
  });

  it.skipIf(skip !== '')(`rewind({ toTurn: 1, files: true }) cuts the transcript and puts back what the agent's tools changed after turn 1${skip}`, async () => {
    const session = await threeTurns();
    const result = await session.rewind({ toTurn: 1, files: true });
    expect(result).toEqual({
      turnsRemoved: 2,
      files: [
        { path: 'made.txt', action: 'removed' },
        { path: 'new.txt', action: 'restored' },
        { path: 'notes.txt', action: 'restored' },
      ],
    });
    expect(read(workspace, 'notes.txt')).toBe('v1');
    expect(read(workspace, 'new.txt')).toBe('new');
    expect(existsSync(join(workspace, 'made.txt'))).toBe(false);
    expect((await harness.journal.turns('main')).map((t) => t.finalText)).toEqual(['done one']);

    server.enqueue('after rewind');
    await agent.generate({ session, prompt: 'again' });
    expect(userTexts(server.requests.at(-1)!)).toEqual(['turn one', 'again']);

    // Back to before the first turn: the files the agent created go, the one it edited is as the user had it.
    expect((await session.rewind({ toTurn: 0, files: true })).files).toEqual([
      { path: 'new.txt', action: 'removed' },
      { path: 'notes.txt', action: 'restored' },
    ]);
    expect(read(workspace, 'notes.txt')).toBe('original');
    expect(existsSync(join(workspace, 'new.txt'))).toBe(false);
    expect(await harness.journal.messages('main')).toEqual([]);
  });

  it.skipIf(skip !== '')(`a rewind refuses, changing nothing, when someone else changed a file since the agent wrote it${skip}`, async () => {
    const session = await threeTurns();
    writeFileSync(join(workspace, 'notes.txt'), 'the user edited this');
    const before = await harness.journal.messages('main');
    const refused = await session.rewind({ toTurn: 1, files: true }).catch((error: unknown) => error);
    expect(RewindRefusedError.isInstance(refused)).toBe(true);
    expect((refused as RewindRefusedError).files).toEqual([{ path: 'notes.txt', reason: 'changed-since' }]);
    expect((refused as RewindRefusedError).message).toBe(
      'Cannot rewind session main: a file cannot be restored: notes.txt (changed by someone else since the agent last wrote it). Nothing was changed.',
    );
    expect(read(workspace, 'notes.txt')).toBe('the user edited this');
    expect(read(workspace, 'new.txt')).toBe('changed\n');
    expect(read(workspace, 'made.txt')).toBe('made\n');
    expect(await harness.journal.messages('main')).toEqual(before);
    expect((await harness.journal.turns('main')).length).toBe(3);

    // Without files, the transcript alone is cut and the workspace is left as it is.
    expect(await session.rewind({ toTurn: 2 })).toEqual({ turnsRemoved: 1, files: [] });
    expect(read(workspace, 'notes.txt')).toBe('the user edited this');
  });

  it.skipIf(skip !== '')(`a file a command changed before the agent ever wrote it is refused as not recorded${skip}`, async () => {
    server.enqueue({ toolCalls: [{ name: 'execute', input: { command: 'echo data after > data.txt' } }] }, 'edited');
    const session = await agent.createSession({ sessionId: 'cmd' });
    await agent.generate({ session, prompt: 'edit data' });
    const refused = await session.rewind({ toTurn: 0, files: true }).catch((error: unknown) => error);
    expect((refused as RewindRefusedError).files).toEqual([{ path: 'data.txt', reason: 'not-recorded' }]);
    expect(read(workspace, 'data.txt')).toBe('data after\n');
    expect((await harness.journal.turns('cmd')).length).toBe(1);
  });
});

describe('a harness without fork or rewind', () => {
  it('fork() and rewind() throw HarnessCapabilityUnsupportedError', async () => {
    const engine = createEngineHarness({ model: await openaiModel(server), home: tmpHome() });
    // An ACP harness's sessions have neither: the same seam, without the two methods.
    const bare: Harness = {
      id: 'acp:stand-in',
      openSession: async (config, options) => {
        const { fork: _fork, rewind: _rewind, ...inner } = await engine.openSession(config, options);
        return inner;
      },
    };
    const session = await new HarnessAgent({ harness: bare }).createSession({ sessionId: 's' });
    const forked = await session.fork().catch((error: unknown) => error);
    expect(HarnessCapabilityUnsupportedError.isInstance(forked) && forked.message).toBe('acp:stand-in cannot fork a session: the agent offers no session/fork.');
    const rewound = await session.rewind({ toTurn: 0 }).catch((error: unknown) => error);
    expect(HarnessCapabilityUnsupportedError.isInstance(rewound)).toBe(true);
    await engine.close!();
  });
});

describe('a cut inside the compacted part of a transcript', () => {
  it('is refused with turn-compacted; a cut after the summary is not', async () => {
    const harness = createEngineHarness({ model: await openaiModel(server), home: tmpHome(), contextTokens: 2_000, retryBaseMs: 1 });
    const agent = new HarnessAgent({ harness });
    const session = await agent.createSession({ sessionId: 'long' });
    for (const n of [1, 2, 3]) {
      server.enqueue(`reply ${n} ${'x'.repeat(1_500)}`);
      await agent.generate({ session, prompt: `turn ${n}` });
    }
    server.enqueue('the summary');
    expect(await session.compact()).toMatchObject({ compacted: true });
    const messages = await harness.journal.messages('long');
    const turns = await harness.journal.turns('long');
    // The first turn whose opening message survived: turns before it live only in the summary.
    const firstWhole = turns.findIndex((turn) => messages.some((m) => m.turnId === turn.id && m.kind === 'user'));
    expect(firstWhole).toBeGreaterThan(0);
    const refused = await session.fork({ atTurn: firstWhole - 1 }).catch((error: unknown) => error);
    expect(AcxError.hasCode(refused, 'turn-compacted') && refused.message).toBe(
      `Turn ${firstWhole} of session long has been compacted into a summary, so the transcript cannot be cut after turn ${firstWhole - 1}.`,
    );
    const fork = await session.fork({ atTurn: firstWhole });
    expect((await harness.journal.messages(fork.id)).map((m) => m.kind)[0]).toBe('summary');
    await harness.close!();
  });
});
