import type { AssistantModelMessage, ModelMessage, ToolResultPart } from 'ai';
import type { ToolResultOutput } from '@ai-sdk/provider-utils';
import type { CallRecord } from '../store/journal.ts';
import { withoutUndefinedKeys } from '../util/undefined-keys.ts';
import { capArguments, STEP_ARGS_BUDGET, STEP_RESULT_BUDGET } from './caps.ts';
import type { EngineContext } from './engine-context.ts';
import { withAcxRecord, withSourcesRecorded } from './hosted.ts';
import { stepNote } from './brief.ts';
import type { ModelCallResult } from './model-call.ts';
import { capStepOutputs, errorOutput } from './tool-output.ts';
import { type Entry, hasToolCalls } from './transcript.ts';
import type { TurnState } from './turn-state.ts';

// The journal writes of a turn. Each durability rule they keep is stated once, at the function
// that keeps it: persistAssistant, settleStep (with commit) and recordResult.

function nextSeq(state: TurnState): number | undefined {
  const last = state.transcript.at(-1);
  return last ? last.seq + 1 : undefined;
}

export async function appendEntry(ctx: EngineContext, state: TurnState, kind: Entry['kind'], message: ModelMessage): Promise<number> {
  const seq = await ctx.journal.appendMessage(state.sessionId, state.turn.id, kind, message, nextSeq(state));
  state.transcript.push({ seq, turnId: state.turn.id, kind, message });
  return seq;
}

/** One journal transaction for this turn, carrying any settlement still waiting to be written (see settleStep). */
export async function commit(ctx: EngineContext, state: TurnState, write?: () => Promise<void>): Promise<void> {
  const settle = state.pendingSettle;
  if (!settle && !write) return;
  state.pendingSettle = undefined;
  await ctx.journal.transaction(async () => {
    await settle?.();
    await write?.();
  });
}

/**
 * Commits a step's assistant message, with results for the calls that cannot run at all.
 * Durability: the message naming a step's calls is committed before any of them runs, so a crash
 * leaves every call on record as evidence, never an effect the journal does not know of.
 */
export async function persistAssistant(ctx: EngineContext, state: TurnState, result: ModelCallResult): Promise<CallRecord[]> {
  const response = result.responseMessages.find((m) => m.role === 'assistant') as AssistantModelMessage | undefined;
  const assistant = withAcxRecord(
    withSourcesRecorded<AssistantModelMessage>(
      // The SDK's response messages carry keys set to undefined (a tool call's providerExecuted and
      // providerOptions). Without them the message is what the journal reads back, so the journal
      // keeps this very object for the session's next turn, whose provider prompt then reuses its
      // conversion instead of converting the last turn's messages again (provider-prompt.ts).
      response ? withoutUndefinedKeys(response) : { role: 'assistant', content: result.text },
      result.sources,
    ),
    // The step ledger: each step's note (which step of the budget, and when) stays in the
    // transcript for an audit, beside the message, never replayed to the model.
    'step',
    stepNote(state.step, ctx.options.maxSteps, ctx.now()),
  );
  const records: CallRecord[] = result.toolCalls.map((call, ordinal) => ({
    turnId: state.turn.id,
    step: state.step,
    callId: call.toolCallId,
    ordinal,
    toolName: call.toolName,
    input: call.input,
    status: 'pending',
    result: null,
    approval: null,
    decision: null,
  }));
  await commit(ctx, state, async () => {
    await appendEntry(ctx, state, 'assistant', assistant);
    for (const [ordinal, call] of result.toolCalls.entries()) {
      const record = records[ordinal]!;
      if (call.invalidReason) {
        const known = ctx.tools.has(call.toolName);
        await recordResult(
          ctx,
          state,
          record,
          errorOutput(
            known
              ? `The call to ${call.toolName} could not be parsed: ${call.invalidReason}`
              : `There is no tool named ${call.toolName}. Available tools: ${[...ctx.tools.keys()].join(', ') || 'none'}.`,
          ),
        );
      }
    }
  });
  for (const call of result.toolCalls) {
    state.calls.push({ toolCallId: call.toolCallId, toolName: call.toolName, input: call.input });
    state.emit({ type: 'tool-call', toolCallId: call.toolCallId, toolName: call.toolName, input: call.input });
  }
  return records;
}

/**
 * Records a call's result: kept in memory for the step's settlement, and written now unless
 * `defer`. Durability: only safe evidence may wait in memory. An unsafe call's result is written
 * the moment it arrives; only a lone read-only or idempotent call defers its result to the
 * settlement, because a crash that loses it only re-runs a call that is safe to re-run.
 */
export function recordResult(ctx: EngineContext, state: TurnState, call: CallRecord, output: ToolResultOutput, defer = false): Promise<void> {
  state.outputs.set(call.callId, output);
  call.status = 'done';
  return defer ? Promise.resolve() : ctx.journal.recordCallResult(call, output);
}

/**
 * A step settles when every call has a result: the capped results and capped arguments are
 * written in one transaction, and the full results leave the ledger.
 * Durability: a step's results are durable before the next step is. The settlement waits in
 * `pendingSettle` and is committed in the same transaction as the turn's next write (commit: the
 * next assistant message, or the turn's end, suspension, cancellation or compaction), so a step
 * costs one commit and the journal never holds a step without the results of the one before it.
 */
export function settleStep(ctx: EngineContext, state: TurnState, step: number, calls: readonly CallRecord[]): void {
  const fullOutputs = calls.map((call) => (state.outputs.get(call.callId) ?? call.result) as ToolResultOutput);
  state.outputs.clear();
  const assistantIndex = findLastIndex(
    state.transcript,
    (entry) => entry.turnId === state.turn.id && entry.kind === 'assistant' && hasToolCalls(entry.message),
  );
  const seq = nextSeq(state) ?? 1;
  // The model reads the full results for the rest of this turn; the journal keeps the capped ones.
  const message = toolMessageOf(calls, fullOutputs);
  const write = settlementWrite(ctx, { sessionId: state.sessionId, turnId: state.turn.id, step, assistant: state.transcript[assistantIndex]!, calls, outputs: fullOutputs, seq, message });
  state.transcript.push({ seq, turnId: state.turn.id, kind: 'tool', message });
  const previous = state.pendingSettle;
  state.pendingSettle = async () => {
    await previous?.();
    await write();
  };
  ctx.options.checkpoint?.({ at: 'step-settled', turnId: state.turn.id, step });
}

/**
 * The journal writes that settle a step: the capped arguments in the assistant message that named
 * its calls, the capped results as one tool message (at `seq`, or the next free one), the ledger
 * rows settled. The caller runs them inside a transaction. `message`, the tool message of the full
 * results the turn goes on with, is journaled itself when capping changed nothing: the journal then
 * hands the session's next turn that same object, whose provider message is already converted.
 */
export function settlementWrite(
  ctx: EngineContext,
  step: { sessionId: string; turnId: string; step: number; assistant: Entry; calls: readonly CallRecord[]; outputs: readonly ToolResultOutput[]; seq?: number; message?: ModelMessage },
): () => Promise<void> {
  const { journal, options } = ctx;
  const { sessionId, turnId, assistant, calls } = step;
  const capped = capStepOutputs(step.outputs, options.stepResultBudget ?? STEP_RESULT_BUDGET);
  const cappedInputs = capArguments(
    calls.map((call) => call.input),
    STEP_ARGS_BUDGET,
  );
  const cappedAssistant = replaceToolInputs(
    assistant.message as AssistantModelMessage,
    new Map(calls.map((call, index) => [call.callId, cappedInputs[index]])),
  );
  const argsCapped = calls.some((call, index) => cappedInputs[index] !== call.input && JSON.stringify(cappedInputs[index]) !== JSON.stringify(call.input));
  const uncapped = step.message && capped.every((output, index) => output === step.outputs[index]);
  const journaled = uncapped ? step.message! : toolMessageOf(calls, capped);
  return async () => {
    if (argsCapped) await journal.replaceMessage(sessionId, assistant.seq, cappedAssistant);
    await journal.appendMessage(sessionId, turnId, 'tool', journaled, step.seq);
    await journal.settleStep(turnId, step.step);
  };
}

function toolMessageOf(calls: readonly CallRecord[], outputs: readonly ToolResultOutput[]): ModelMessage {
  return {
    role: 'tool',
    content: calls.map(
      (call, index): ToolResultPart => ({
        type: 'tool-result',
        toolCallId: call.callId,
        toolName: call.toolName,
        output: outputs[index]!,
      }),
    ),
  };
}

function replaceToolInputs(message: AssistantModelMessage, inputs: Map<string, unknown>): AssistantModelMessage {
  if (typeof message.content === 'string') return message;
  return {
    ...message,
    content: message.content.map((part) =>
      part.type === 'tool-call' && inputs.has(part.toolCallId) ? { ...part, input: inputs.get(part.toolCallId) } : part,
    ),
  };
}

function findLastIndex<T>(items: readonly T[], predicate: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (predicate(items[i]!)) return i;
  return -1;
}
