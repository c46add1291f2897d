import type { AssistantContent, ModelMessage, UserContent } from 'ai';
import type { CallDecision } from '../../core/hooks.ts';
import type { ApprovalRequest, FinishReason } from '../../engine/events.ts';
import type { TurnToolCall } from '../../engine/engine.ts';
import type { SuspendReason } from '../../engine/turn-types.ts';
import type { CallIdentity, CallRecord, TurnRecord } from '../../store/journal.ts';
import type { JournalStore } from '../../store/journal-store.ts';
import { turnActivity } from '../../engine/turn-activity.ts';
import { HARNESS_ATTRIBUTE, type TurnContinuation } from '../session-state.ts';
import type { ACPCheckpoint } from './settings.ts';

/**
 * An ACP session's turns in the journal, in the engine's own records, so that what an engine turn
 * promises after a crash an ACP turn can promise too:
 *   - a turn row: running, then suspended (waiting for an answer), done, failed or cancelled;
 *   - the prompt, as the turn's user message, written before it is sent to the agent;
 *   - each host tool call acx runs for the agent, in the call ledger: `started` before it runs,
 *     `done` with its outcome (`{ ok, output | error }`) before the agent gets it;
 *   - each call the turn waits for: `awaiting-approval` (its decision recorded on the row when it
 *     comes) or `awaiting-result` (`done` with the result supplied);
 *   - each call the session's hooks and tool guardrails decided (guarded-calls.ts): the decision,
 *     on a row of its own, `settled` (nothing waits on it), written before the call can go on;
 *   - at the end, the reply and the turn's tool activity as one assistant message and a tool
 *     message, read back (turnActivity) for a result built in another process.
 * A ledger row's step is the translator's inferred step; its call id is the host call's
 * idempotency key (or, for approvals, the ACP tool call id, which is also the approval id).
 */

export { HARNESS_ATTRIBUTE } from '../session-state.ts';

/** What a host tool call came to, as the ledger keeps it. */
export type HostOutcome = { ok: true; output: unknown } | { ok: false; error: string };

export interface TurnActivity {
  text: string;
  steps: number;
  finishReason: FinishReason;
  toolCalls: readonly TurnToolCall[];
  toolResults: ReadonlyArray<TurnToolCall & { output: unknown; error?: string }>;
}

export class TurnJournal {
  readonly store: JournalStore;
  readonly sessionId: string;
  /** The journal outlives this process (a file or a server), so other processes can read it. */
  readonly durable: boolean;
  private readonly checkpoint: ((event: ACPCheckpoint) => void) | undefined;

  constructor(store: JournalStore, sessionId: string, options: { durable: boolean; checkpoint?: ((event: ACPCheckpoint) => void) | undefined }) {
    this.store = store;
    this.sessionId = sessionId;
    this.durable = options.durable;
    this.checkpoint = options.checkpoint;
  }

  /** Marks the session as this harness's: a journal shared with the engine lists each one's paused turns apart. */
  async open(harnessId: string): Promise<void> {
    await this.store.setSessionAttribute(this.sessionId, HARNESS_ATTRIBUTE, harnessId);
  }

  /** The turn and its prompt, written before the prompt goes to the agent. */
  async startTurn(turnId: string, prompt: string | UserContent): Promise<void> {
    await this.store.transaction(async () => {
      await this.store.startTurn(turnId, this.sessionId);
      await this.store.appendMessage(this.sessionId, turnId, 'user', { role: 'user', content: prompt } as ModelMessage);
    });
    this.checkpoint?.({ at: 'turn-started', turnId });
  }

  async hostCallStarted(call: CallIdentity): Promise<void> {
    await this.store.setCallStatus(call, 'started');
    this.checkpoint?.({ at: 'host-call-started', turnId: call.turnId, toolName: call.toolName, callId: call.callId });
  }

  async hostCallFinished(call: CallIdentity, outcome: HostOutcome): Promise<void> {
    await this.store.recordCallResult(call, outcome);
    this.checkpoint?.({ at: 'host-call-finished', turnId: call.turnId, toolName: call.toolName, callId: call.callId });
  }

  awaiting(call: CallIdentity, status: 'awaiting-approval' | 'awaiting-result'): Promise<void> {
    return this.store.setCallStatus(call, status);
  }

  answerApproval(call: CallIdentity, decision: { approved: boolean; reason?: string | undefined }): Promise<void> {
    return this.store.recordApproval({ ...call, status: 'awaiting-approval' }, { approved: decision.approved, ...(decision.reason ? { reason: decision.reason } : {}) });
  }

  decided(call: CallIdentity, decision: CallDecision): Promise<void> {
    return this.store.recordDecision({ ...call, status: 'settled' }, decision);
  }

  answerResult(call: CallIdentity, output: unknown): Promise<void> {
    return this.store.recordCallResult(call, { ok: true, output } satisfies HostOutcome);
  }

  async suspend(turnId: string): Promise<void> {
    await this.store.updateTurn(turnId, { status: 'suspended' });
    this.checkpoint?.({ at: 'turn-suspended', turnId });
  }

  /** Takes a suspended turn for one continuation: true for exactly one caller, in any process. */
  claim(turnId: string): Promise<boolean> {
    return this.store.claimSuspended(turnId);
  }

  running(turnId: string): Promise<void> {
    return this.store.updateTurn(turnId, { status: 'running' });
  }

  /** The reply and the turn's activity, with the turn done, in one transaction. */
  async finish(turnId: string, activity: TurnActivity): Promise<void> {
    const content: AssistantContent = [
      ...activity.toolCalls.map((call) => ({ type: 'tool-call' as const, toolCallId: call.toolCallId, toolName: call.toolName, input: call.input, providerExecuted: true })),
      ...(activity.text ? [{ type: 'text' as const, text: activity.text }] : []),
    ];
    const results = activity.toolResults.map((result) => ({
      type: 'tool-result' as const,
      toolCallId: result.toolCallId,
      toolName: result.toolName,
      output: result.error !== undefined ? { type: 'error-text' as const, value: result.error } : { type: 'json' as const, value: (result.output ?? null) as never },
    }));
    await this.store.transaction(async () => {
      // The agent ran every call of the turn (acx's host tools too, for it): nothing here is open for recovery to run.
      await this.store.appendMessage(this.sessionId, turnId, 'assistant', { role: 'assistant', content, providerOptions: { acx: { finishReason: activity.finishReason } } });
      if (results.length > 0) await this.store.appendMessage(this.sessionId, turnId, 'tool', { role: 'tool', content: results });
      await this.store.updateTurn(turnId, { status: 'done', finalText: activity.text, steps: activity.steps });
    });
    this.checkpoint?.({ at: 'turn-ended', turnId });
  }

  fail(turnId: string, error: string): Promise<void> {
    return this.store.updateTurn(turnId, { status: 'failed', error });
  }

  cancel(turnId: string): Promise<void> {
    return this.store.updateTurn(turnId, { status: 'cancelled' });
  }

  unfinished(): Promise<TurnRecord | undefined> {
    return this.store.unfinishedTurn(this.sessionId);
  }

  turn(turnId: string): Promise<TurnRecord | undefined> {
    return this.store.turn(turnId);
  }

  calls(turnId: string): Promise<CallRecord[]> {
    return this.store.calls(turnId);
  }

  /** The turn's prompt, as its user message has it. */
  async prompt(turnId: string): Promise<string | UserContent> {
    const message = (await this.store.messages(this.sessionId)).find((m) => m.turnId === turnId && m.kind === 'user');
    return (message?.message.content as string | UserContent | undefined) ?? '';
  }

  /** What a turn finished in another process recorded: its reply, finish reason and tool calls. */
  async recordedResult(turn: TurnRecord): Promise<TurnActivity> {
    const entries = (await this.store.messages(this.sessionId)).filter((entry) => entry.turnId === turn.id);
    const activity = turnActivity(entries, turn.id);
    const reply = entries.findLast((entry) => entry.kind === 'assistant')?.message;
    const finishReason = (reply?.providerOptions?.acx?.finishReason as FinishReason | undefined) ?? 'stop';
    return { text: turn.finalText ?? '', steps: turn.steps, finishReason, toolCalls: activity.calls, toolResults: activity.results };
  }

  /** Calls the turn waited for that were never answered: the agent asks for them again, under new ids, once the turn goes on. */
  async supersede(calls: readonly CallRecord[]): Promise<void> {
    for (const call of calls) if ((call.status === 'awaiting-approval' && !call.approval) || call.status === 'awaiting-result') await this.store.setCallStatus(call, 'settled');
  }

  /** A journaled unfinished turn as a continuation: what it waits for, or `interrupted` when it was running. */
  async continuation(turn: TurnRecord): Promise<TurnContinuation> {
    const pending = pendingOf(await this.calls(turn.id));
    const suspendedBy: SuspendReason | 'interrupted' =
      turn.status !== 'suspended' ? 'interrupted' : pending.pendingApprovals.length > 0 ? 'approval' : pending.pendingToolCalls.length > 0 ? 'tool-result' : 'request';
    return { turnId: turn.id, suspendedBy, ...pending };
  }
}

/** The calls a suspended turn still waits for: approvals not decided, results not supplied. */
export function pendingOf(calls: readonly CallRecord[]): Pick<TurnContinuation, 'pendingApprovals' | 'pendingToolCalls'> {
  return {
    pendingApprovals: calls
      .filter((call) => call.status === 'awaiting-approval' && !call.approval)
      .map((call): ApprovalRequest => ({ approvalId: call.callId, toolCallId: call.callId, toolName: call.toolName, input: call.input })),
    pendingToolCalls: calls.filter((call) => call.status === 'awaiting-result').map((call) => ({ toolCallId: call.callId, toolName: call.toolName, input: call.input })),
  };
}
