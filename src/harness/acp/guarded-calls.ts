import type * as acp from '@agentclientprotocol/sdk';
import { AcxError, errorMessage, GuardrailTrippedError, HarnessCapabilityUnsupportedError } from '../../core/errors.ts';
import type { CallDecision, GuardrailTrip, ToolCallInfo, TurnGuards } from '../../core/hooks.ts';
import type { HostCallDecision, HostCallOutcome, HostToolCall } from '../../mcp/host-server.ts';
import type { Logger } from '../../util/logger.ts';
import type { ActiveTurn } from './active-turn.ts';
import { answer } from './permissions.ts';

/**
 * An ACP session's hooks and guardrails at the points acx sees: the calls of its host tools (acx
 * runs them: decided before they run, their results through afterToolCall before the agent gets
 * them) and the agent's permission requests for its own tools (a hook can allow or deny them; it
 * cannot rewrite an input acx does not run). A decision is kept with the call in this process —
 * an ACP turn paused for a host result is continued here or not at all, so nothing asks again.
 * A tripped guardrail (or a hook that throws) refuses the call and fails the turn with its error.
 */
export interface GuardedCallsOptions {
  guards: TurnGuards;
  /** acx's session id. */
  sessionId: string;
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

  /** Asks the guards; a trip or a hook's error fails the turn (and comes back as a refusal). */
  private async decide(active: ActiveTurn, call: Omit<ToolCallInfo, 'sessionId' | 'turnId'>): Promise<CallDecision> {
    const { guards, sessionId, log } = this.options;
    let decision: CallDecision;
    try {
      decision = await guards.decideCall({ sessionId, turnId: active.turnId, ...call });
    } catch (error) {
      const failure = AcxError.isInstance(error) ? error : new AcxError('hook-failed', errorMessage(error), { cause: error });
      this.options.fail(failure);
      return { decision: 'deny', reason: `Not run: ${failure.message}` };
    }
    log.info('tool decision', { tool: call.toolName, runBy: call.runBy, decision: decision.decision });
    if (decision.decision === 'tripped') this.options.fail(tripped({ guardrail: decision.guardrail, kind: 'tool', reason: decision.reason }, log));
    return decision;
  }
}

/** The error a trip fails the turn with, logged once. */
export function tripped(trip: GuardrailTrip, log: Logger): GuardrailTrippedError {
  log.warn('guardrail tripped', { kind: trip.kind, guardrail: trip.guardrail, reason: trip.reason });
  return new GuardrailTrippedError(trip);
}

function refusal(decision: Extract<CallDecision, { decision: 'deny' | 'tripped' }>): string {
  return decision.decision === 'deny' ? decision.reason : `Not run: the tool guardrail "${decision.guardrail}" tripped: ${decision.reason}`;
}
