import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createACP } from '../../../src/harness/acp/create.ts';
import { createLocalSandbox } from '../../../src/harness/acp/sandbox.ts';
import type { ACPSettings } from '../../../src/harness/acp/settings.ts';
import { HarnessAgent } from '../../../src/harness/harness-agent.ts';
import { createLogger } from '../../../src/util/logger.ts';
import { lines } from '../../support/crash-kit.ts';
import { fakeProfile, tempCache } from './fake-profile.ts';

/**
 * An ACP permission request with no in-process handler pauses the turn: it is journaled, listed by
 * agent.listSuspended() in any process, and answered there with continueFrom. Process A (a real
 * acx process, test/fixtures/acp/approval-driver.ts) runs the turn and holds it, its agent waiting
 * with the ACP request open; this test process is B. The fake agent logs each prompt it gets, so
 * the test sees whether the held request was answered (one prompt) or the session was reopened and
 * the agent asked again (a second prompt, on session/resume).
 */
const DRIVER = join(import.meta.dirname, '../../fixtures/acp/approval-driver.ts');
const cache = tempCache();
const children: ChildProcessWithoutNullStreams[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

interface Paused {
  turnId: string;
  suspendedBy: string;
  pendingApprovals: unknown[];
}

/** Starts process A and waits until its turn has paused for the approval. */
async function pausedInA(home: string, promptLog: string): Promise<{ child: ChildProcessWithoutNullStreams; paused: Paused; exited: Promise<number | null> }> {
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', DRIVER, home, cache, promptLog]);
  children.push(child);
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const paused = await new Promise<Paused>((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      if (stdout.includes('\n')) resolve(JSON.parse(stdout.split('\n')[0]!) as Paused);
    });
    void exited.then((code) => reject(new Error(`process A exited (${code}) before pausing: ${stderr}`)));
  });
  return { child, paused, exited };
}

function agentB(home: string, promptLog: string, overrides: Partial<ACPSettings> = {}) {
  const harness = createACP(
    fakeProfile(cache, {
      sandbox: createLocalSandbox({ sessionsRoot: join(home, 'sessions'), workdir: dirname(promptLog) }),
      journal: join(home, 'journal.db'),
      env: { FAKE_RESUME: '1', FAKE_PROMPT_LOG: promptLog },
      ...overrides,
    }),
  );
  return { harness, agent: new HarnessAgent({ harness, permissionMode: 'allow-edits' }) };
}

/** The fake agent's prompt log, in its working directory (a confined agent writes only there). */
function workLog(home: string): string {
  const work = join(home, 'work');
  mkdirSync(work);
  return join(work, 'prompts.log');
}

const APPROVAL = { approvalId: 'p1', toolCallId: 'p1', toolName: 'A execute action', input: { what: 'execute' } };

describe('ACP approvals across processes (fake agent, real processes)', { timeout: 180_000 }, () => {
  it('a paused turn is listed in another process and answered there while A holds the agent: the open request gets the answer', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-acp-approve-'));
    const promptLog = workLog(home);
    const a = await pausedInA(home, promptLog);
    expect(a.paused).toEqual({ turnId: expect.any(String), suspendedBy: 'approval', pendingApprovals: [APPROVAL] });

    const { harness, agent } = agentB(home, promptLog);
    const listed = await agent.listSuspended();
    expect(listed.map(({ sessionId, state }) => ({ sessionId, ...state.continuation }))).toEqual([
      { sessionId: 'approval-session', turnId: a.paused.turnId, suspendedBy: 'approval', pendingApprovals: [APPROVAL], pendingToolCalls: [] },
    ]);
    const session = await agent.createSession({ continueFrom: listed[0]!.state });
    const done = await agent.continueGenerate({ session, approvals: [{ approvalId: 'p1', approved: true }] });
    expect(done.turnId).toBe(a.paused.turnId);
    expect(done.text).toBe('permission=allow_once');
    // The agent was asked once: A's open request took the answer, nothing was reopened.
    expect(lines(promptLog)).toEqual(['permission:execute']);
    expect(await agent.listSuspended()).toEqual([]);
    await session.detach();
    await harness.close?.();
    a.child.stdin.end();
    expect(await a.exited).toBe(0);
  });

  it('first answer wins: two callers (each its own harness) answer the same paused turn at once, one is refused with turn-claimed', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-acp-approve-'));
    const promptLog = workLog(home);
    const a = await pausedInA(home, promptLog);
    const one = agentB(home, promptLog);
    const two = agentB(home, promptLog);
    const [entry] = await one.agent.listSuspended();
    const sessions = [await one.agent.createSession({ continueFrom: entry!.state }), await two.agent.createSession({ continueFrom: entry!.state })];
    const answers = await Promise.allSettled([
      one.agent.continueGenerate({ session: sessions[0]!, approvals: [{ approvalId: 'p1', approved: true }] }),
      two.agent.continueGenerate({ session: sessions[1]!, approvals: [{ approvalId: 'p1', approved: false, reason: 'no' }] }),
    ]);
    const won = answers.findIndex((answer) => answer.status === 'fulfilled');
    expect(won).not.toBe(-1);
    const lost = answers[1 - won]!;
    expect(lost.status).toBe('rejected');
    expect((lost as PromiseRejectedResult).reason).toMatchObject({ code: 'turn-claimed' });
    expect((answers[won] as PromiseFulfilledResult<{ text: string }>).value.text).toBe(won === 0 ? 'permission=allow_once' : 'permission=reject_once');
    expect(lines(promptLog)).toEqual(['permission:execute']);
    for (const session of sessions) await session.detach();
    await one.harness.close?.();
    await two.harness.close?.();
    a.child.stdin.end();
    expect(await a.exited).toBe(0);
  });

  it('when A is gone (killed), the answer reopens the agent session: the agent asks again and gets the recorded decision', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-acp-approve-'));
    const promptLog = workLog(home);
    const a = await pausedInA(home, promptLog);
    a.child.kill('SIGKILL');
    await a.exited;

    const { harness, agent } = agentB(home, promptLog);
    const [entry] = await agent.listSuspended();
    expect(entry!.state.continuation).toMatchObject({ turnId: a.paused.turnId, suspendedBy: 'approval', pendingApprovals: [APPROVAL] });
    const session = await agent.createSession({ continueFrom: entry!.state });
    const done = await agent.continueGenerate({ session, approvals: [{ approvalId: 'p1', approved: true }] });
    expect(done.turnId).toBe(a.paused.turnId);
    expect(done.text).toBe('permission=allow_once');
    // A second prompt on the reopened session (the note quotes the request, so the agent asked again).
    expect(lines(promptLog)).toEqual(['permission:execute', 'permission:execute session/resume']);
    expect(await agent.listSuspended()).toEqual([]);
    await session.detach();
    await harness.close?.();
  });

  it('after the hold time the agent is let go; the answer given later in the same process reopens the session', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-acp-approve-'));
    const promptLog = workLog(home);
    // The harness logs when it lets the turn go: the test waits for that, not for a guessed time.
    let released!: () => void;
    const letGo = new Promise<void>((resolve) => (released = resolve));
    const logger = createLogger({ level: 'info', sink: { write: (line) => void (line.includes('acp paused turn released') && released()) } });
    const { harness, agent } = agentB(home, promptLog, { pausedTurnHoldMs: 0, logger });
    const session = await agent.createSession({ sessionId: 'held-briefly' });
    const paused = await agent.generate({ session, prompt: '[[permission:execute]]' });
    expect(paused.pendingApprovals).toEqual([APPROVAL]);
    await letGo;
    const done = await agent.continueGenerate({ session, approvals: [{ approvalId: 'p1', approved: false, reason: 'not today' }] });
    expect(done.turnId).toBe(paused.turnId);
    expect(done.text).toBe('permission=reject_once');
    expect(lines(promptLog)).toEqual(['permission:execute', 'permission:execute session/resume']);
    await session.destroy();
    await harness.close?.();
  });

  it('suspendTurn() pauses a running ACP turn (the agent cancels) and continueGenerate finishes it, the agent told the turn was paused', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-acp-approve-'));
    const promptLog = workLog(home);
    const { harness, agent } = agentB(home, promptLog);
    const session = await agent.createSession({ sessionId: 'suspended' });
    const stream = agent.stream({ session, prompt: '[[hang-once]]' });
    let working!: () => void;
    const started = new Promise<void>((resolve) => (working = resolve));
    const consumed = (async () => {
      for await (const part of stream.harnessStream) if (part.type === 'text-delta') working(); // the agent said it is working
    })();
    await started;
    await session.suspendTurn();
    const paused = await stream.result;
    await consumed;
    expect(paused).toMatchObject({ suspendedBy: 'request', finishReason: 'other' });
    expect((await agent.listSuspended()).map((e) => e.state.continuation)).toEqual([{ turnId: paused.turnId, suspendedBy: 'request', pendingApprovals: [], pendingToolCalls: [] }]);
    const done = await agent.continueGenerate({ session });
    expect(done.turnId).toBe(paused.turnId);
    expect(done.text).toBe('finished after the pause');
    expect(await agent.listSuspended()).toEqual([]);
    await session.destroy();
    await harness.close?.();
  });
});
