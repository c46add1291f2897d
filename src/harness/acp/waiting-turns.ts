import type { HarnessContinueInput, HarnessRunInput } from '../harness.ts';
import type { ApprovalDecision, TurnHooks, TurnResult } from '../../engine/engine.ts';
import { emptyUsage, type HarnessStreamPart } from '../../engine/events.ts';
import type { TurnTelemetry } from '../../engine/telemetry.ts';
import type { SuspendReason } from '../../engine/turn-types.ts';
import type { TurnRecord } from '../../store/journal.ts';
import type { ToolOutput } from '../../tools/tool.ts';
import { AcxError, errorMessage } from '../../core/errors.ts';
import { type ActiveTurn, pendingOf } from './active-turn.ts';
import { waitRow } from './host-calls.ts';
import { DEFAULT_PAUSED_TURN_HOLD_MS } from './settings.ts';
import { resumeOnAgent, type TakeUpPort } from './taking-up.ts';
import type { HostOutcome } from './turn-journal.ts';
import { finishOfSuspension, resultOf } from './turn-results.ts';
import { holdPausedTurn, type PausedHold } from './turn-watch.ts';

/**
 * The turns of a session that wait for the caller: paused for approvals or host tool results
 * (their ACP requests held open), or suspended by suspendTurn(). A waiting turn is journaled as
 * suspended; with a durable journal this process holds it — its agent kept waiting — for the
 * hold time, watching the journal for an answer given in another process (the turn then goes on
 * here), and then lets it go: the agent is stopped and the turn waits in the journal, to be
 * taken up wherever it is answered (taking-up.ts).
 */

/** What waiting turns use of the session's TurnRunner. */
export interface WaitingPort extends TakeUpPort {
  busy: boolean;
  readonly cancelGraceMs: number;
  cancel(active: ActiveTurn): void;
  stopAgent(): Promise<void>;
  telemetryFor(turnId: string, hooks: TurnHooks, prompt: HarnessRunInput['prompt']): Promise<TurnTelemetry>;
}

export class WaitingTurns {
  /** A turn that returned with pending calls while its session/prompt is still in flight. */
  paused: ActiveTurn | undefined;
  /** A suspended turn this process holds (its agent waiting), watched for answers given elsewhere. */
  private held: { turnId: string; watch: PausedHold } | undefined;
  private readonly runner: WaitingPort;

  constructor(runner: WaitingPort) {
    this.runner = runner;
  }

  /** Returns from run()/continue() while the turn waits for the caller; later parts are buffered for continue(). */
  async pause(active: ActiveTurn, resumed: boolean): Promise<TurnResult> {
    const { journal, sessionId, log } = this.runner.options;
    await active.writes;
    await journal.suspend(active.turnId);
    const pendingToolCalls = pendingOf(active);
    const pendingApprovals = [...active.approvals.values()].map((a) => a.request);
    const suspendedBy: SuspendReason = pendingApprovals.length > 0 ? 'approval' : 'tool-result';
    const finishReason = finishOfSuspension(suspendedBy);
    const usage = emptyUsage();
    const result = resultOf(sessionId, active, resumed, { finishReason, usage, suspendedBy, pendingApprovals, pendingToolCalls });
    active.translator.pause();
    active.emit({ type: 'finish', finishReason, totalUsage: usage });
    active.telemetry.end({ finishReason, usage });
    const buffer: HarnessStreamPart[] = [];
    active.buffer = buffer;
    active.emit = (part) => buffer.push(part);
    this.paused = active;
    if (journal.durable) this.hold(active.turnId, active);
    log.info('acp turn paused', { by: suspendedBy, awaiting_results: pendingToolCalls.length, awaiting_approvals: pendingApprovals.length });
    return result;
  }

  /** suspendTurn() stopped the agent's turn: it is suspended, to be continued (here or, reopening the session, anywhere). */
  async suspendOnRequest(active: ActiveTurn, resumed: boolean): Promise<TurnResult> {
    const { journal, sessionId, log } = this.runner.options;
    await journal.suspend(active.turnId);
    const usage = emptyUsage();
    const result = resultOf(sessionId, active, resumed, { finishReason: 'other', usage, suspendedBy: 'request' });
    active.translator.pause();
    active.emit({ type: 'finish', finishReason: 'other', totalUsage: usage });
    active.telemetry.end({ finishReason: 'other', usage });
    this.hold(active.turnId, undefined);
    log.info('acp turn paused', { by: 'request' });
    return result;
  }

  /** Answers a turn paused here, its ACP requests still open: the answers go straight to them. */
  async continuePaused(active: ActiveTurn, input: HarnessContinueInput): Promise<TurnResult> {
    const { journal, sessionId } = this.runner.options;
    const results = input.toolResults ?? [];
    const approvals = input.approvals ?? [];
    const unknown = [...results.filter((r) => !active.held.has(r.toolCallId)).map((r) => r.toolCallId), ...approvals.filter((a) => !active.approvals.has(a.approvalId)).map((a) => a.approvalId)];
    if (unknown.length > 0) {
      throw new AcxError('acp-unknown-tool-call', `No paused tool call or approval of this ACP session has the id ${unknown.join(', ')}.`, {
        hint: `Pending tool calls: ${[...active.held.keys()].join(', ') || 'none'}; pending approvals: ${[...active.approvals.keys()].join(', ') || 'none'}.`,
      });
    }
    this.runner.busy = true;
    try {
      await this.runner.claim(active.turnId, input, active);
      this.paused = undefined;
      const buffered = active.buffer ?? [];
      active.buffer = undefined;
      active.hooks = input;
      active.emit = input.emit ?? input.observe ?? (() => {});
      active.telemetry = await this.runner.telemetryFor(active.turnId, input, await journal.prompt(active.turnId));
      active.emit({ type: 'start', sessionId, turnId: active.turnId, resumed: true });
      if (!input.abortSignal?.aborted) await this.answer(active, approvals, results);
      active.translator.resume();
      for (const part of buffered) active.emit(part);
      return await this.runner.drive(active, input, true);
    } finally {
      this.runner.busy = false;
    }
  }

  /** Hands answers to the turn's open requests, each journaled first. */
  private async answer(active: ActiveTurn, approvals: readonly ApprovalDecision[], results: ReadonlyArray<{ toolCallId: string; output: unknown }>): Promise<void> {
    const { journal } = this.runner.options;
    for (const r of results) {
      const held = active.held.get(r.toolCallId);
      if (!held) continue; // listed twice
      active.held.delete(r.toolCallId);
      await journal.answerResult(waitRow(active, held), r.output);
      active.emit({ type: 'tool-result', toolCallId: held.toolCallId, toolName: held.toolName, input: held.input, output: r.output, providerExecuted: false } as HarnessStreamPart);
      active.translator.toolResults.push({ toolCallId: held.toolCallId, toolName: held.toolName, input: held.input, output: r.output });
      held.resolve(r.output as ToolOutput);
    }
    for (const decision of approvals) {
      const pending = active.approvals.get(decision.approvalId);
      if (!pending) continue;
      await journal.answerApproval(waitRow(active, pending.request), decision);
      pending.settle(decision);
    }
  }

  /** This process stops watching the turn it held (the caller goes on with it, or the session closes). */
  stopHolding(): void {
    this.held?.watch.stop();
    this.held = undefined;
  }

  /**
   * Holds a suspended turn: the agent waits with its requests open while the journal is watched.
   * Claimed elsewhere, the turn goes on here with the answers found there; unclaimed after the
   * hold time, it is let go (release).
   */
  private hold(turnId: string, active: ActiveTurn | undefined): void {
    const { journal, settings, log, driver } = this.runner.options;
    this.stopHolding();
    const watch = holdPausedTurn(journal, turnId, {
      holdMs: settings.pausedTurnHoldMs ?? DEFAULT_PAUSED_TURN_HOLD_MS,
      log,
      answered: (turn) => {
        this.held = undefined;
        void this.goOnAnsweredElsewhere(turn, active).catch((error: unknown) => log.warn('acp turn answered elsewhere did not go on', { turn: turnId, reason: errorMessage(error) }));
      },
      expired: () => {
        this.held = undefined;
        if (active && this.paused === active) void this.release(active, 'its hold time ran out');
        else void this.runner.stopAgent().then(() => driver.release());
      },
    });
    this.held = { turnId, watch };
  }

  /** Another process answered (claimed) the turn this one holds: it goes on here, its parts unseen, its end journaled for that caller. */
  private async goOnAnsweredElsewhere(turn: TurnRecord, active: ActiveTurn | undefined): Promise<void> {
    const { journal, log, driver } = this.runner.options;
    if (turn.status !== 'running') {
      // Ended elsewhere (abandoned): nothing goes on.
      if (active && this.paused === active) {
        this.runner.cancel(active);
        this.runner.end(active);
      }
      await driver.release();
      return;
    }
    if (this.runner.busy) return log.warn('acp turn answered elsewhere while this session is busy', { turn: turn.id });
    log.info('acp turn answered elsewhere', { turn: turn.id });
    this.runner.busy = true;
    try {
      if (!active || this.paused !== active) {
        await resumeOnAgent(this.runner, turn, 'request', {});
        return;
      }
      this.paused = undefined;
      const calls = await journal.calls(turn.id);
      Object.assign(active, { buffer: undefined, hooks: {}, emit: () => {}, claimed: true });
      for (const held of [...active.held.values()]) {
        const row = calls.find((c) => c.callId === held.toolCallId && c.status === 'done');
        if (!row) continue;
        active.held.delete(held.toolCallId);
        held.resolve((row.result as HostOutcome & { ok: true }).output as ToolOutput);
      }
      for (const pending of [...active.approvals.values()]) {
        const row = calls.find((c) => c.callId === pending.request.approvalId && c.approval);
        if (row) pending.settle(row.approval!);
      }
      active.translator.resume();
      await this.runner.drive(active, {}, true);
    } finally {
      this.runner.busy = false;
    }
  }

  /**
   * A paused turn this session object lets go: the agent is told to cancel; with a durable journal
   * it is stopped and the turn waits there, answerable from any process; without one it is cancelled.
   */
  async release(active: ActiveTurn, why: string): Promise<void> {
    const { journal, driver, log } = this.runner.options;
    active.released = true;
    if (this.paused === active) this.paused = undefined;
    this.runner.cancel(active);
    this.runner.end(active);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([active.outcome, new Promise<void>((r) => (timer = setTimeout(r, Math.min(this.runner.cancelGraceMs, 2000))))]);
    clearTimeout(timer);
    if (journal.durable) {
      await this.runner.stopAgent();
      await driver.release();
      log.info('acp paused turn released', { turn: active.turnId, why, note: 'it waits in the journal; answering it reopens the agent session' });
    } else {
      await journal.cancel(active.turnId);
    }
  }
}
