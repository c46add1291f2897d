import type * as acp from '@agentclientprotocol/sdk';
import { AcxError, errorMessage, GuardrailTrippedError, HarnessCapabilityUnsupportedError } from '../../core/errors.ts';
import type { CallDecision, GuardrailTrip, ToolCallInfo, TurnGuards } from '../../core/hooks.ts';
import type { HostCallDecision, HostCallOutcome, HostToolCall } from '../../mcp/host-server.ts';
import type { CallIdentity } from '../../store/journal.ts';
import type { Logger } from '../../util/logger.ts';
import type { ActiveTurn } from './active-turn.ts';
import { answer } from './permissions.ts';
import type { TurnJournal } from './turn-journal.ts';

/**
 * An ACP session's hooks and guardrails at the points acx sees: the calls of its host tools (acx
 * runs them: decided before they run, their results through afterToolCall before the agent gets
 * them) and the agent's permission requests for its own tools (a hook can allow or deny them; it
 * cannot rewrite an input acx does not run). Each decision is journaled with the turn before the
 * call can go on (turn-journal.ts), so a turn taken up after a crash or in another process reads
 * the decision for a call the agent makes again (recorded-calls.ts) instead of asking the hooks
 * twice. A tripped guardrail (or a hook that throws) refuses the call and fails the turn with its
 * error.
 */
export interface GuardedCallsOptions {
  guards: TurnGuards;
  /** acx's session id. */
  sessionId: string;
  /** Where each decision is kept with its turn. */
  journal: TurnJournal;
  /** The turn running now, if any. */
  current(): ActiveTurn | undefined;
  /** Ends the current turn with `error` (the agent is told to cancel). */
  fail(error: AcxError): void;
  log: Logger;
}

export class GuardedCalls {
  private readonly options: GuardedCallsOptions;

  constructor(options: GuardedCallsOptions) {
    this.options = options;
  }

  /** A host tool call, before it runs. Outside a running turn there is nothing to decide for, so it is refused. */
  async decideHostCall(call: HostToolCall): Promise<HostCallDecision> {
    const active = this.live();
    if (!active) return { run: false, reason: `${call.tool.name} was not run: no turn of this session is running to decide about it.` };
    const decision = await this.decide(active, { toolCallId: call.toolCallId, toolName: call.tool.name, input: call.input, runBy: 'acx' });
    if (decision.decision === 'deny' || decision.decision === 'tripped') return { run: false, reason: refusal(decision) };
    return { run: true, input: 'input' in decision ? decision.input : call.input, approved: decision.decision === 'allow' };
  }

  /** A host tool call's outcome through the afterToolCall hooks; a hook that throws withholds the result. */
  async settleHostCall(call: HostToolCall, outcome: HostCallOutcome): Promise<HostCallOutcome> {
    const { guards, sessionId } = this.options;
    const active = this.options.current();
    if (!guards.hasAfterToolCall || !active) return outcome;
    const base = { sessionId, turnId: active.turnId, toolCallId: call.toolCallId, toolName: call.tool.name, input: call.input, runBy: 'acx' as const };
    try {
      const after = await guards.afterCall(outcome.error === undefined ? { ...base, output: outcome.output } : { ...base, error: outcome.error });
      return after.error === undefined ? { output: after.output } : { error: after.error };
    } catch (error) {
      this.options.log.warn('afterToolCall failed', { tool: call.tool.name, error: errorMessage(error) });
      return { error: `The result of ${call.tool.name} was withheld: ${errorMessage(error)}` };
    }
  }

  /**
   * The agent's permission request for one of its own tools: answered here when a hook allowed or
   * denied it (or a guardrail tripped); undefined leaves it to the permission mode and approvals.
   */
  async decidePermission(active: ActiveTurn, params: acp.RequestPermissionRequest, call: { toolCallId: string; toolName: string; input: unknown }): Promise<acp.RequestPermissionResponse | undefined> {
    const decision = await this.decide(active, { ...call, runBy: 'agent' });
    if (decision.decision === 'deny' || decision.decision === 'tripped') {
      active.translator.denied(call.toolCallId, refusal(decision));
      return answer(params.options, false);
    }
    if (!('input' in decision)) return decision.decision === 'allow' ? answer(params.options, true) : undefined;
    // A rewrite cannot be applied: the agent runs its own tool with its own arguments.
    this.options.fail(
      new HarnessCapabilityUnsupportedError(`A beforeToolCall hook rewrote the input of ${call.toolName}, one of the ACP agent's own tools: acx cannot change what the agent runs.`, {
        hint: 'Rewrite only host tools (runBy "acx"); for the agent\'s own tools, allow or deny.',
      }),
    );
    active.translator.denied(call.toolCallId, 'refused: its input cannot be rewritten');
    return answer(params.options, false);
  }

  /** The running turn, unless it already ended with a failure. */
  private live(): ActiveTurn | undefined {
    const active = this.options.current();
    return active && !active.cancelled && !active.failure ? active : undefined;
  }

  /**
   * The decision the journal recorded for this call when the turn was taken up, else the guards'
   * (journaled before it is acted on); a trip or a hook's error fails the turn (and comes back as
   * a refusal).
   */
  private async decide(active: ActiveTurn, call: Omit<ToolCallInfo, 'sessionId' | 'turnId'>): Promise<CallDecision> {
    const { guards, sessionId, journal, log } = this.options;
    let decision = active.recorded?.takeHookDecision(call.toolName, call.input);
    if (decision) {
      log.info('tool decision answered from the journal', { tool: call.toolName, runBy: call.runBy, decision: decision.decision });
    } else {
      try {
        decision = await guards.decideCall({ sessionId, turnId: active.turnId, ...call });
      } catch (error) {
        const failure = AcxError.isInstance(error) ? error : new AcxError('hook-failed', errorMessage(error), { cause: error });
        this.options.fail(failure);
        return { decision: 'deny', reason: `Not run: ${failure.message}` };
      }
      log.info('tool decision', { tool: call.toolName, runBy: call.runBy, decision: decision.decision });
      await journal.decided(decisionRow(active, call), decision).catch((error: unknown) => log.error('acp journal write failed', { reason: errorMessage(error) }));
    }
    if (decision.decision === 'tripped') this.options.fail(tripped({ guardrail: decision.guardrail, kind: 'tool', reason: decision.reason }, log));
    return decision;
  }
}

/** The error a trip fails the turn with, logged once. */
export function tripped(trip: GuardrailTrip, log: Logger): GuardrailTrippedError {
  log.warn('guardrail tripped', { kind: trip.kind, guardrail: trip.guardrail, reason: trip.reason });
  return new GuardrailTrippedError(trip);
}

/**
 * A decision's ledger row: its own call id (the call's run or approval keeps its row), at step 0
 * like the rows of waited-for calls, so it is found whatever step the turn is at.
 */
function decisionRow(active: ActiveTurn, call: { toolCallId: string; toolName: string; input: unknown }): CallIdentity {
  return { turnId: active.turnId, step: 0, callId: `decision:${call.toolCallId}`, ordinal: 0, toolName: call.toolName, input: call.input };
}

function refusal(decision: Extract<CallDecision, { decision: 'deny' | 'tripped' }>): string {
  return decision.decision === 'deny' ? decision.reason : `Not run: the tool guardrail "${decision.guardrail}" tripped: ${decision.reason}`;
}
