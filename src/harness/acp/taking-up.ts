import type * as acp from '@agentclientprotocol/sdk';
import type { HarnessContinueInput, HarnessRunInput } from '../harness.ts';
import type { TurnHooks, TurnResult } from '../../engine/engine.ts';
import { partSink } from '../../engine/events.ts';
import type { TurnRecord } from '../../store/journal.ts';
import { AcxError, TurnAbortedError } from '../../core/errors.ts';
import type { ActiveTurn } from './active-turn.ts';
import { RecordedCalls } from './recorded-calls.ts';
import { resumeNote, type ResumeReason } from './resume-note.ts';
import { pendingOf } from './turn-journal.ts';
import { turnClaimed } from '../../engine/recovery.ts';
import { endedElsewhere } from './turn-results.ts';
import { awaitTurnElsewhere } from './turn-watch.ts';
import type { AgentSide, TurnRunnerOptions } from './turns.ts';

/**
 * Taking up a turn this session object is not running, from the journal: one whose driver died
 * while it ran (interrupted), or one suspended here or elsewhere (claimed first — first answer
 * wins — and its answers journaled). While the process that suspended it still holds it, the
 * answers are handed to it and this call waits for the turn's end there; otherwise the turn goes
 * on here, on the agent's reopened session (resumeOnAgent).
 */

/** What taking a turn up uses of the session's TurnRunner. */
export interface TakeUpPort {
  readonly options: TurnRunnerOptions;
  agentReady(): Promise<AgentSide>;
  claim(turnId: string, input: HarnessContinueInput, active?: ActiveTurn): Promise<void>;
  newTurn(turnId: string, hooks: TurnHooks): ActiveTurn;
  begin(active: ActiveTurn, agent: AgentSide, hooks: TurnHooks, how: { hold: boolean; announce: boolean; prompt: HarnessRunInput['prompt'] }): Promise<void>;
  send(active: ActiveTurn, agent: AgentSide, blocks: acp.ContentBlock[], meta: Record<string, unknown> | undefined): void;
  drive(active: ActiveTurn, hooks: TurnHooks, resumed: boolean): Promise<TurnResult>;
  end(active: ActiveTurn): void;
  outputOf(text: string): unknown;
}

export async function takeUp(runner: TakeUpPort, turn: TurnRecord, input: HarnessContinueInput): Promise<TurnResult> {
  const { journal, driver, sessionId } = runner.options;
  if (turn.status === 'running') {
    // A call that came to answer this turn while it was suspended finds it running: another call claimed it first.
    if (input.claimSuspended === turn.id) throw turnClaimed(turn.id, sessionId);
    if ((await driver.elsewhere())?.turnId === turn.id) {
      throw new AcxError('session-busy', `Turn ${turn.id} of session ${sessionId} is running in another process.`, { hint: 'Wait for it to finish, then send the next message.' });
    }
    return resumeOnAgent(runner, turn, 'interrupted', input);
  }
  const calls = await journal.calls(turn.id);
  const pending = pendingOf(calls);
  const results = input.toolResults ?? [];
  const approvals = input.approvals ?? [];
  const unknown = [
    ...results.filter((r) => !pending.pendingToolCalls.some((c) => c.toolCallId === r.toolCallId)).map((r) => r.toolCallId),
    ...approvals.filter((a) => !pending.pendingApprovals.some((c) => c.approvalId === a.approvalId)).map((a) => a.approvalId),
  ];
  if (unknown.length > 0) {
    throw new AcxError('acp-unknown-tool-call', `No paused tool call or approval of turn ${turn.id} has the id ${unknown.join(', ')}.`, {
      hint: `Pending tool calls: ${pending.pendingToolCalls.map((c) => c.toolCallId).join(', ') || 'none'}; pending approvals: ${pending.pendingApprovals.map((c) => c.approvalId).join(', ') || 'none'}.`,
    });
  }
  await runner.claim(turn.id, input);
  for (const r of results) await journal.answerResult(calls.find((c) => c.callId === r.toolCallId)!, r.output);
  for (const a of approvals) await journal.answerApproval(calls.find((c) => c.callId === a.approvalId)!, a);
  if ((await driver.elsewhere())?.turnId === turn.id) return handedOff(runner, turn, input);
  const waited = pending.pendingApprovals.length + pending.pendingToolCalls.length > 0;
  return resumeOnAgent(runner, turn, waited ? 'paused' : 'request', input);
}

/** The claimed turn goes on in the process that holds it: this call reports how it ends there. */
async function handedOff(runner: TakeUpPort, turn: TurnRecord, input: HarnessContinueInput): Promise<TurnResult> {
  const { journal, driver, sessionId, log } = runner.options;
  const emit = partSink(input);
  emit({ type: 'start', sessionId, turnId: turn.id, resumed: true });
  log.info('acp turn answered for the process holding it', { turn: turn.id });
  const ended = await awaitTurnElsewhere(journal, driver, turn.id, input.abortSignal).catch((error: unknown) => {
    if (input.abortSignal?.aborted) throw new TurnAbortedError();
    throw error;
  });
  // The holder died before it finished: the turn goes on here, as one interrupted.
  if (ended === 'driver-gone') return resumeOnAgent(runner, (await journal.turn(turn.id))!, 'interrupted', input, false);
  return endedElsewhere(journal, ended, emit, (text) => runner.outputOf(text));
}

/**
 * Goes on with a turn on this session's agent: reopened in this process (or the one that ran the
 * turn here), told what happened, the calls it makes again answered from the journal. An agent
 * that did not reopen its session cannot finish the turn: it is recorded as failed, with a clear
 * error, never quietly started over.
 */
export async function resumeOnAgent(runner: TakeUpPort, turn: TurnRecord, reason: ResumeReason, input: TurnHooks, announce = true): Promise<TurnResult> {
  const { journal, driver, sessionId, settings, log } = runner.options;
  // This process drives the turn now: recorded before its agent starts, so no other process starts one beside it.
  await driver.hold(turn.id);
  let agent: AgentSide;
  try {
    agent = await runner.agentReady();
  } catch (error) {
    await driver.release();
    throw error;
  }
  if (!agent.reopened && !agent.ranTurns.has(turn.id)) {
    const why = `${settings.harnessId} could not reopen its session (it offers neither session/resume nor session/load, or no longer knows the session)`;
    await journal.fail(turn.id, `not finished: ${why}`);
    await driver.release();
    log.error('acp turn not finished', { turn: turn.id, reason: why });
    throw new AcxError('acp-turn-lost', `Turn ${turn.id} of session ${sessionId} did not finish, and ${why}, so it cannot be finished without starting it over. It is recorded as failed.`, {
      hint: 'Check what its host tool calls did (the journal has them), then send the message again as a new turn.',
    });
  }
  const calls = await journal.calls(turn.id);
  await journal.supersede(calls);
  const request = await journal.prompt(turn.id);
  const active = runner.newTurn(turn.id, input);
  active.recorded = new RecordedCalls(calls);
  active.claimed = true;
  await journal.running(turn.id);
  log.info('acp turn taken up', { turn: turn.id, reason, calls: calls.length });
  try {
    await runner.begin(active, agent, input, { hold: false, announce, prompt: request });
    runner.send(active, agent, [{ type: 'text', text: resumeNote(reason, request, calls) }], undefined);
    return await runner.drive(active, input, true);
  } finally {
    if (!active.outcome) runner.end(active);
  }
}
