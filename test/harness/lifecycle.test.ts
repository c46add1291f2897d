// Issue 11 item 7, the session lifecycle of seed 001's HarnessAgent on the native engine, through
// the real OpenAI Responses wire: destroy, detach (resume and continuation state), stop,
// suspendTurn, compact; createSession({ resumeFrom | continueFrom }); the `file-change` and
// `compaction` stream parts; listSuspended answered from a second process. Each is checked from
// the journal as a user would open it. The ACP harness's side is test/harness/acp/lifecycle.test.ts.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SessionState } from '../../src/harness/session-state.ts';
import { AcxError, TurnAbortedError } from '../../src/core/errors.ts';
import type { HarnessStreamPart } from '../../src/engine/events.ts';
import { createExecuteTool } from '../../src/tools/builtin/execute.ts';
import { createFsTools } from '../../src/tools/builtin/fs.ts';
import { deployTool } from '../support/deploy-tool.ts';
import type { ModelServer, RecordedRequest } from '../support/model-server.ts';
import { echoTool, openaiModel, pairing, rig, startModelServer, tmpHome, until } from '../engine/helpers.ts';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

const WORKER = join(import.meta.dirname, '../support/lifecycle-worker.ts');
const userTexts = (request: RecordedRequest) =>
  request.view.messages.filter((m) => m.role === 'user' && !m.text?.startsWith('<acx-brief>')).map((m) => m.text ?? '');

async function caught(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: Error) => e,
  );
}

/** Runs the second-process worker against a home and returns what it printed. */
function runWorker(args: { home: string; marker: string; approve: boolean }): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [WORKER, JSON.stringify({ ...args, baseURL: server.openaiBaseURL })], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

describe('destroy()', () => {
  it("removes the session's journal state: no session row, turns, messages or calls; its state can no longer be resumed", async () => {
    server.enqueue({ toolCalls: [{ name: 'echo', input: { text: 'x' } }] }, 'Done.');
    const r = rig(await openaiModel(server), { agent: { tools: [echoTool()] } });
    const keep = await r.agent.createSession({ sessionId: 'keep' });
    const session = await r.agent.createSession({ sessionId: 'gone' });
    await r.agent.generate({ session, prompt: 'echo x' });
    expect(r.readJournal((j) => j.turns('gone')).map((t) => t.status)).toEqual(['done']);

    await session.destroy();

    expect(r.readJournal((j) => ({ has: j.hasSession('gone'), turns: j.turns('gone'), messages: j.messages('gone') }))).toEqual({
      has: false,
      turns: [],
      messages: [],
    });
    expect(r.readJournal((j) => j.hasSession('keep')), 'other sessions are untouched').toBe(true);
    const reused = await caught(r.agent.generate({ session, prompt: 'again' }));
    expect(AcxError.isInstance(reused) && reused.code).toBe('session-detached');
    const stale: SessionState = { type: 'acx-session', version: 1, harnessId: 'engine', agentId: 'agent', sessionId: 'gone' };
    const resumed = await caught(r.agent.createSession({ resumeFrom: stale }));
    expect(resumed.message).toBe('Session gone no longer exists in engine (it was destroyed, or this is another home).');
    void keep;
  });
});

describe('detach() and createSession({ resumeFrom })', () => {
  it('between turns: returns a JSON resume state without continuation; a new agent on the same home resumes it with its history', async () => {
    server.enqueue('The code word is PLUM.', 'You said PLUM.');
    const home = tmpHome();
    const first = rig(await openaiModel(server), { home });
    const session = await first.agent.createSession({ sessionId: 'talk' });
    await first.agent.generate({ session, prompt: 'Remember the code word PLUM.' });

    const state = await session.detach();
    expect(state).toEqual({ type: 'acx-session', version: 1, harnessId: 'engine', agentId: 'agent', sessionId: 'talk' });
    const used = await caught(first.agent.generate({ session, prompt: 'still there?' }));
    expect(used.message).toBe('Session talk was detached or destroyed.');
    await first.harness.close?.();

    const second = rig(await openaiModel(server), { home });
    const again = await second.agent.createSession({ resumeFrom: JSON.parse(JSON.stringify(state)) as SessionState });
    expect(again.id).toBe('talk');
    const reply = await second.agent.generate({ session: again, prompt: 'What was the code word?' });
    expect(reply.text).toBe('You said PLUM.');
    expect(userTexts(server.requests.at(-1)!), 'the resumed session sends its earlier history').toEqual([
      'Remember the code word PLUM.',
      'What was the code word?',
    ]);
  });

  it('with a turn paused for approval: the state carries the continuation, and continueFrom answers it', async () => {
    server.enqueue({ toolCalls: [{ id: 'call_dep', name: 'deploy', input: { service: 'api' } }] }, 'Deployed api.');
    const marker = join(tmpHome(), 'marker');
    const home = tmpHome();
    const first = rig(await openaiModel(server), { home, agent: { tools: [deployTool(marker)] } });
    const session = await first.agent.createSession({ sessionId: 'ops-1' });
    const paused = await first.agent.generate({ session, prompt: 'deploy api' });
    expect(paused.suspendedBy).toBe('approval');

    const state = await session.detach();
    expect(state.continuation).toEqual({
      turnId: paused.turnId,
      suspendedBy: 'approval',
      pendingApprovals: [{ approvalId: 'call_dep', toolCallId: 'call_dep', toolName: 'deploy', input: { service: 'api' } }],
      pendingToolCalls: [],
    });

    const second = rig(await openaiModel(server), { home, agent: { tools: [deployTool(marker)] } });
    const again = await second.agent.createSession({ continueFrom: state });
    const done = await second.agent.continueGenerate({ session: again, approvals: [{ approvalId: 'call_dep', approved: true }] });
    expect(done.text).toBe('Deployed api.');
    expect(readFileSync(marker, 'utf8')).toBe(`${process.pid} api\n`);
    expect(second.readJournal((j) => j.turns('ops-1')).map((t) => t.status)).toEqual(['done']);

    const stale = await caught(second.agent.createSession({ continueFrom: state }));
    expect(stale.message).toBe(`Turn ${paused.turnId} of session ops-1 is no longer unfinished: it was continued or ended since this state was taken.`);
  });

  it('refuses unclear or foreign states with a clear error', async () => {
    const r = rig(await openaiModel(server));
    const state: SessionState = { type: 'acx-session', version: 1, harnessId: 'engine', agentId: 'agent', sessionId: 's' };
    await r.agent.createSession({ sessionId: 's' });
    const both = await caught(r.agent.createSession({ resumeFrom: state, continueFrom: state }));
    expect([AcxError.isInstance(both) && both.code, both.message]).toEqual(['usage', 'createSession takes resumeFrom or continueFrom, not both.']);
    const noTurn = await caught(r.agent.createSession({ continueFrom: state }));
    expect(noTurn.message).toBe('continueFrom has no unfinished turn to continue (session s).');
    const foreign = await caught(r.agent.createSession({ resumeFrom: { ...state, harnessId: 'acp:codex' } }));
    expect(foreign.message).toBe('resumeFrom is a session of the harness acp:codex; this agent runs on engine.');
    const junk = await caught(r.agent.createSession({ resumeFrom: { sessionId: 's' } as unknown as SessionState }));
    expect(junk.message).toBe('resumeFrom is not a session state (expected the object session.detach() returned).');
  });
});

describe('stop()', () => {
  it('ends the running turn cleanly: the call rejects as aborted, the journal has it cancelled with every call answered, the session takes the next message', async () => {
    let unpause!: () => void;
    const paused = new Promise<void>((resolve) => (unpause = resolve));
    server.enqueue({ toolCalls: [{ name: 'echo', input: { text: 'one' } }] }, { text: 'never finished', pauseUntil: paused }, 'Next answer.');
    const r = rig(await openaiModel(server), { agent: { tools: [echoTool()] } });
    const session = await r.agent.createSession({ sessionId: 'stop-me' });
    await session.stop(); // nothing runs: resolves at once
    const running = caught(r.agent.generate({ session, prompt: 'long job' }));
    await until(() => server.requests.length === 2);

    const stopped = session.stop();
    const error = await running;
    await stopped;
    unpause();

    expect(TurnAbortedError.isInstance(error)).toBe(true);
    expect(r.readJournal((j) => j.turns('stop-me')).map((t) => t.status)).toEqual(['cancelled']);
    const { called, answered } = r.readJournal((j) => pairing(j.messages('stop-me')));
    expect(answered).toEqual(called);
    expect((await r.agent.generate({ session, prompt: 'something else' })).text).toBe('Next answer.');
  });
  it('reaches a call it is given right after generate(), before anything was awaited: no model call, the turn cancelled', async () => {
    const r = rig(await openaiModel(server));
    const session = await r.agent.createSession({ sessionId: 'stop-early' });
    const running = caught(r.agent.generate({ session, prompt: 'never mind' }));
    await session.stop();
    expect(TurnAbortedError.isInstance(await running)).toBe(true);
    expect(server.requests).toHaveLength(0);
    expect(r.readJournal((j) => j.turns('stop-early')).map((t) => t.status)).toEqual(['cancelled']);
  });
});

describe('suspendTurn()', () => {
  it('pauses at the next safe point (after the step in flight ran its tools), journaled as suspended; continueGenerate finishes it without re-running anything', async () => {
    let unpause!: () => void;
    const paused = new Promise<void>((resolve) => (unpause = resolve));
    server.enqueue({ toolCalls: [{ name: 'echo', input: { text: 'step one' } }], pauseUntil: paused }, 'Finished after the pause.');
    const echo = echoTool();
    const r = rig(await openaiModel(server), { agent: { tools: [echo] } });
    const session = await r.agent.createSession({ sessionId: 'pause-me' });
    const running = r.agent.generate({ session, prompt: 'two steps' });
    await until(() => server.requests.length === 1);

    const suspended = session.suspendTurn();
    unpause();
    await suspended;
    const result = await running;

    expect([result.finishReason, result.suspendedBy, result.text]).toEqual(['other', 'request', '']);
    expect(echo.seen, 'the step in flight ran its tool before pausing').toEqual(['step one']);
    expect(server.requests, 'no model call after the pause').toHaveLength(1);
    expect(r.readJournal((j) => j.turns('pause-me')).map((t) => t.status)).toEqual(['suspended']);
    expect((await r.agent.listSuspended()).map((s) => [s.sessionId, s.suspendedBy])).toEqual([['pause-me', 'request']]);

    const done = await r.agent.continueGenerate({ session });
    expect(done.text).toBe('Finished after the pause.');
    expect(echo.seen).toEqual(['step one']);
    expect(r.readJournal((j) => j.turns('pause-me')).map((t) => t.status)).toEqual(['done']);
    expect((await r.agent.listSuspended())).toEqual([]);
  });

  it('says so when no turn is running', async () => {
    const r = rig(await openaiModel(server));
    const session = await r.agent.createSession();
    const error = await caught(session.suspendTurn());
    expect([AcxError.isInstance(error) && error.code, error.message]).toEqual(['no-running-turn', `Session ${session.id} has no turn running in this process.`]);
  });
});

const SUMMARY = 'SUMMARY: we discussed the Alpha launch; the date is 3 March.';
const isSummaryRequest = (r: RecordedRequest) => r.view.system.some((s) => /compacting your own conversation/.test(s));

describe('compact() and the compaction part', () => {
  it('compact() runs compaction now: the summary replaces the older turns in the journal, and the result says what happened', async () => {
    const long = 'Alpha launch notes. '.repeat(200);
    server.setFallback(async (request) => (isSummaryRequest(request) ? SUMMARY : 'Noted.'));
    const r = rig(await openaiModel(server));
    const session = await r.agent.createSession({ sessionId: 'c' });
    await r.agent.generate({ session, prompt: long });
    await r.agent.generate({ session, prompt: 'And the date is 3 March.' });

    const outcome = await session.compact();

    expect(outcome).toMatchObject({ compacted: true, trigger: 'manual', summary: SUMMARY, before: 4, after: 3, summarized: 2 });
    if (!outcome.compacted) throw new Error('not compacted');
    expect(outcome.tokensBefore).toBeGreaterThan(outcome.tokensAfter!);
    const journal = r.readJournal((j) => j.messages('c'));
    expect(journal.map((m) => m.kind)).toEqual(['summary', 'user', 'assistant']);
    expect(String(journal[0]!.message.content)).toContain(SUMMARY);
  });

  it('a threshold compaction streams a compaction part with trigger, summary and tokens before/after', async () => {
    server.setFallback(async (request) => (isSummaryRequest(request) ? SUMMARY : { text: 'Noted.', usage: { inputTokens: 30_000 } }));
    const r = rig(await openaiModel(server), { harness: { contextTokens: 40_000 } });
    const session = await r.agent.createSession({ sessionId: 't' });
    await r.agent.generate({ session, prompt: 'first' });
    const stream = r.agent.stream({ session, prompt: 'second' });
    const parts: HarnessStreamPart[] = [];
    for await (const part of stream.harnessStream) parts.push(part);

    const compaction = parts.find((p) => p.type === 'compaction');
    expect(compaction).toMatchObject({ type: 'compaction', trigger: 'threshold', summary: SUMMARY, before: 4, after: 3, summarized: 2 });
    expect(compaction && 'tokensBefore' in compaction && compaction.tokensBefore).toBeGreaterThan(0);
    expect(compaction && 'tokensAfter' in compaction && compaction.tokensAfter).toBeGreaterThan(0);
  });
});

describe('file-change parts', () => {
  it('fs_write reports the file it created, then modified; execute reports what its command created, modified and deleted', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'acx-lifecycle-ws-'));
    writeFileSync(join(workspace, 'old.txt'), 'old');
    writeFileSync(join(workspace, 'keep.txt'), 'keep');
    writeFileSync(join(workspace, 'edit.txt'), 'v1');
    server.enqueue(
      { toolCalls: [{ name: 'fs_write', input: { path: 'notes/new.md', content: 'hello' } }] },
      { toolCalls: [{ name: 'fs_write', input: { path: 'notes/new.md', content: 'hello again' } }] },
      { toolCalls: [{ name: 'execute', input: { command: 'echo made > made.txt && rm old.txt && echo v2-longer > edit.txt' } }] },
      'Files changed.',
    );
    const tools = [...createFsTools({ workspace }), createExecuteTool({ workspace, isolation: 'none', profile: 'unlocked' })];
    const r = rig(await openaiModel(server), { agent: { tools, permissionMode: 'allow-all' } });
    const parts: HarnessStreamPart[] = [];
    for await (const part of r.agent.stream({ prompt: 'change files' }).harnessStream) parts.push(part);

    const changes = parts.filter((p) => p.type === 'file-change').map((p) => ({ toolName: p.toolName, path: p.path, kind: p.kind }));
    expect(changes).toEqual([
      { toolName: 'fs_write', path: 'notes/new.md', kind: 'created' },
      { toolName: 'fs_write', path: 'notes/new.md', kind: 'modified' },
      { toolName: 'execute', path: 'edit.txt', kind: 'modified' },
      { toolName: 'execute', path: 'made.txt', kind: 'created' },
      { toolName: 'execute', path: 'old.txt', kind: 'deleted' },
    ]);
    const callOf = (id: string) => parts.find((p) => p.type === 'tool-call' && p.toolCallId === id);
    for (const change of parts.filter((p) => p.type === 'file-change')) expect(callOf(change.toolCallId), 'each change names its call').toBeDefined();
    expect(existsSync(join(workspace, 'keep.txt'))).toBe(true);
  });
});

describe('a paused turn answered from two places', () => {
  it('runs once: the first continuation claims the turn, the other is refused with turn-claimed', async () => {
    server.enqueue({ toolCalls: [{ id: 'call_once', name: 'deploy', input: { service: 'db' } }] }, 'Deployed db.');
    const home = tmpHome();
    const marker = join(tmpHome(), 'marker');
    const opener = rig(await openaiModel(server), { home, agent: { tools: [deployTool(marker)] } });
    await opener.agent.generate({ session: await opener.agent.createSession({ sessionId: 'twice' }), prompt: 'deploy db' });
    const [entry] = (await opener.agent.listSuspended());

    // Two agents with their own journal connections, both opened on the listed state before either answers.
    const a = rig(await openaiModel(server), { home, agent: { tools: [deployTool(marker)] } });
    const b = rig(await openaiModel(server), { home, agent: { tools: [deployTool(marker)] } });
    const sessions = [await a.agent.createSession({ continueFrom: entry!.state }), await b.agent.createSession({ continueFrom: entry!.state })];
    const approvals = [{ approvalId: 'call_once', approved: true }];
    const outcomes = await Promise.allSettled([
      a.agent.continueGenerate({ session: sessions[0]!, approvals }),
      b.agent.continueGenerate({ session: sessions[1]!, approvals }),
    ]);

    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value.text : AcxError.isInstance(o.reason) && o.reason.code))).toEqual(['Deployed db.', 'turn-claimed']);
    expect(readFileSync(marker, 'utf8'), 'the approved call ran once').toBe(`${process.pid} db\n`);
    expect(opener.readJournal((j) => j.turns('twice')).map((t) => t.status)).toEqual(['done']);
  });
});

describe('listSuspended() across processes', () => {
  it('lists the session paused for approval; a second process continues it, runs the approved call there, and the journal shows the turn done', async () => {
    server.enqueue({ toolCalls: [{ id: 'call_ship', name: 'deploy', input: { service: 'web' } }] }, 'Shipped web.');
    const home = tmpHome();
    const marker = join(tmpHome(), 'marker');
    const r = rig(await openaiModel(server), { home, agent: { id: 'ops', tools: [deployTool(marker)] } });
    const session = await r.agent.createSession({ sessionId: 'ship' });
    const paused = await r.agent.generate({ session, prompt: 'ship web' });

    const listed = (await r.agent.listSuspended());
    expect(listed.map(({ state: _state, startedAt: _startedAt, ...rest }) => rest)).toEqual([
      {
        sessionId: 'ship',
        turnId: paused.turnId,
        suspendedBy: 'approval',
        pendingApprovals: [{ approvalId: 'call_ship', toolCallId: 'call_ship', toolName: 'deploy', input: { service: 'web' } }],
        pendingToolCalls: [],
      },
    ]);
    await r.harness.close?.();

    const worker = await runWorker({ home, marker, approve: true });
    expect(worker.code, worker.err).toBe(0);
    const printed = JSON.parse(worker.out) as { pid: number; text: string; listed: unknown[] };
    expect(printed.listed).toEqual([
      { sessionId: 'ship', turnId: paused.turnId, suspendedBy: 'approval', pendingApprovals: [{ approvalId: 'call_ship', toolCallId: 'call_ship', toolName: 'deploy', input: { service: 'web' } }] },
    ]);
    expect(printed.text).toBe('Shipped web.');
    expect(readFileSync(marker, 'utf8'), 'the approved call ran in the second process').toBe(`${printed.pid} web\n`);
    expect(r.readJournal((j) => j.turns('ship')).map((t) => t.status)).toEqual(['done']);
    expect(r.readJournal((j) => j.suspendedTurns())).toEqual([]);
  });
});
