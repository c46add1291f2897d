import { createHash } from 'node:crypto';
import type { CallRecord } from '../store/journal.ts';
import type { FileChangeEntry } from '../store/session-branches.ts';
import { runTool, type ToolRunOutcome } from '../tools/run.ts';
import { errorMessage } from '../core/errors.ts';
import type { ToolContext } from '../tools/tool.ts';
import { logSeconds } from '../util/duration.ts';
import { decidedInput } from '../core/hooks.ts';
import { approve } from './approvals.ts';
import { afterCall, decideCalls } from './guard-points.ts';
import type { EngineContext, RegisteredTool } from './engine-context.ts';
import { recordResult } from './persistence.ts';
import { fileChangeEntry, recordingBudget } from './file-record.ts';
import { errorOutput, toToolResultOutput } from './tool-output.ts';
import type { TurnState } from './turn-state.ts';
import type { ApprovalDecision } from './turn-types.ts';

/**
 * A call's idempotency key, derived (never stored) from the agent, the turn, the step and the
 * call's place in it: the same call gets the same key in every process and on every re-run after
 * a crash, so a tool that passes it on (a platform create) takes effect once. Changing this
 * derivation breaks the dedup of calls journaled before the change.
 */
export function idempotencyKey(agentId: string, turnId: string, step: number, ordinal: number): string {
  return createHash('sha256').update(`${agentId}\n${turnId}\n${step}\n${ordinal}`).digest('hex').slice(0, 32);
}

/**
 * Runs a step's calls in parallel, once the guards decided about all of them (guard-points.ts);
 * returns 'suspended' when some wait for the host.
 */
export async function runStepCalls(
  ctx: EngineContext,
  state: TurnState,
  calls: CallRecord[],
  decisions?: ReadonlyMap<string, ApprovalDecision>,
): Promise<'suspended' | 'complete'> {
  await decideCalls(ctx, state, calls);
  const waiting: string[] = [];
  // Settled, not all: a call that interrupts the turn (runTool) is thrown only once its siblings
  // have recorded their results, so nothing writes to the journal after the turn has stopped.
  const ran = await Promise.allSettled(
    calls.map(async (call) => {
      if (call.status === 'done' || call.status === 'settled') return;
      const entry = ctx.tools.get(call.toolName);
      if (!entry) {
        await recordResult(ctx, state, call, errorOutput(`There is no tool named ${call.toolName}.`));
        return;
      }
      if (call.decision?.decision === 'deny') return deny(ctx, state, call, call.decision.reason);
      // A hook's allow is the host's approval: nothing more is asked.
      const approval = call.decision?.decision === 'allow' ? undefined : await approve(ctx, state, call, entry.tool, decisions);
      if (approval === 'waiting') {
        waiting.push(call.callId);
        return;
      }
      if (approval && !approval.approved) return deny(ctx, state, call, approval.reason ?? 'The host denied this call.');
      if (!entry.tool.execute) {
        await ctx.journal.setCallStatus(call, 'awaiting-result');
        waiting.push(call.callId);
        return;
      }
      await execute(ctx, state, call, entry, calls.length === 1);
    }),
  );
  const failed = ran.find((outcome) => outcome.status === 'rejected');
  if (failed) throw failed.reason;
  return waiting.length > 0 ? 'suspended' : 'complete';
}

/** Answers a call that will not run (a hook or the host denied it): the model reads `reason`. */
async function deny(ctx: EngineContext, state: TurnState, call: CallRecord, reason: string): Promise<void> {
  const input = decidedInput(call);
  await recordResult(ctx, state, call, { type: 'execution-denied', reason });
  state.emit({ type: 'tool-output-denied', toolCallId: call.callId, toolName: call.toolName, reason, input });
  state.results.push({ toolCallId: call.callId, toolName: call.toolName, input, output: undefined, error: reason });
}

/**
 * Runs one call, with the arguments its decision gave it. Durability: an unsafe tool's `started` mark is committed before it runs (the
 * evidence that it may have had an effect, which recovery.ts reads); a read-only or idempotent
 * call found without a result is simply run again, so it needs none. Parallel calls record their
 * results as they finish, so one slow call cannot hold the others hostage (when a result may
 * wait instead: persistence.ts, recordResult).
 */
async function execute(ctx: EngineContext, state: TurnState, call: CallRecord, entry: RegisteredTool, alone: boolean): Promise<void> {
  const { options, journal, logger } = ctx;
  const { tool, schema } = entry;
  const input = decidedInput(call);
  state.toolsRan += 1;
  await inLedgerOrder(state, async () => {
    if (tool.effect === 'unsafe') await journal.setCallStatus(call, 'started');
    options.checkpoint?.({ at: 'tool-started', turnId: state.turn.id, step: call.step, toolName: tool.name, callId: call.callId });
  });
  // The speaking tool is a visible action by definition, whatever the tool itself declares.
  const speech = options.speech;
  if (tool.visible || (speech.mode === 'tool' && tool.name === speech.tool)) state.visibleActions += 1;
  const started = performance.now();
  const changed: FileChangeEntry[] = [];
  const budget = recordingBudget();
  const ran = await state.telemetry.toolRun({ toolCallId: call.callId, toolName: tool.name, input }, () =>
    runOrInterrupt(ctx, tool.name, started, () => runTool(tool, schema, input, {
      toolCallId: call.callId,
      sessionId: state.sessionId,
      idempotencyKey: idempotencyKey(options.agentId, state.turn.id, call.step, call.ordinal),
      earlierCalls: async () =>
        (await journal.turnCalls(state.turn.id))
          .filter((earlier) => earlier.step < call.step || (earlier.step === call.step && earlier.ordinal < call.ordinal))
          .map(({ toolName, input }) => ({ toolName, input })),
      abortSignal: state.hooks.abortSignal ?? new AbortController().signal,
      logger,
      onFileChange: (change) => {
        const entry = fileChangeEntry(change, { turnId: state.turn.id, callId: call.callId, toolName: tool.name }, budget);
        if (entry) changed.push(entry);
        state.emit({ type: 'file-change', toolCallId: call.callId, toolName: tool.name, path: change.path, kind: change.kind });
      },
      ...elicitFor(state, call, tool.name),
    })),
  );
  // Recorded before the result: the journal never holds a call's result without the changes it made.
  if (changed.length > 0) await journal.branches?.recordFileChanges(changed);
  const outcome = await afterCall(ctx, state, call, input, ran);
  const output = outcome.ok
    ? toToolResultOutput(outcome.output, {
        vision: options.model.vision,
        // Said loudly: the model never sees this image, only a line saying it was there.
        onImageDescribed: (mediaType) => logger.info('image described', { tool: tool.name, media_type: mediaType, reason: 'the model reads text only' }),
      })
    : errorOutput(outcome.error);
  await inLedgerOrder(state, async () => {
    await recordResult(ctx, state, call, output, alone && tool.effect !== 'unsafe');
    options.checkpoint?.({ at: 'tool-finished', turnId: state.turn.id, step: call.step, toolName: tool.name, callId: call.callId });
  });
  const duration = logSeconds(performance.now() - started);
  if (outcome.ok) {
    logger.info('tool', { name: tool.name, duration, outcome: 'ok' });
    state.emit({ type: 'tool-result', toolCallId: call.callId, toolName: tool.name, input, output: outcome.output });
    state.results.push({ toolCallId: call.callId, toolName: tool.name, input, output: outcome.output });
  } else {
    logger.warn('tool', { name: tool.name, duration, outcome: 'error', error: outcome.error });
    state.emit({ type: 'tool-error', toolCallId: call.callId, toolName: tool.name, input, error: outcome.error });
    state.results.push({ toolCallId: call.callId, toolName: tool.name, input, output: undefined, error: outcome.error });
  }
}

/** Runs a call; one that interrupts its turn is said (the turn stops with its call left open) and passed on. */
async function runOrInterrupt(ctx: EngineContext, toolName: string, started: number, run: () => Promise<ToolRunOutcome>): Promise<ToolRunOutcome> {
  try {
    return await run();
  } catch (error) {
    ctx.logger.warn('tool', { name: toolName, duration: logSeconds(performance.now() - started), outcome: 'interrupted', error: errorMessage(error), note: 'the turn stops; continuing it runs the call again' });
    throw error;
  }
}

/** The call's way to ask the user, bound to the turn's onElicitation (none when nobody can answer). */
function elicitFor(state: TurnState, call: CallRecord, toolName: string): Pick<ToolContext, 'elicit'> {
  const answer = state.hooks.onElicitation;
  return answer ? { elicit: (request) => answer({ ...request, toolCallId: call.callId, toolName }) } : {};
}

/**
 * Runs one ledger write of a call (and its checkpoint) after those of the step's calls that got
 * there first. However long a store takes to write, what the journal holds at any instant is a
 * prefix of one order (c1 started, c2 started, c1 finished, ...): recovery by evidence, and the
 * crash suite's numbered checkpoints, then mean the same on every store.
 */
function inLedgerOrder(state: TurnState, write: () => Promise<void>): Promise<void> {
  const turn = state.ledger.then(write);
  state.ledger = turn.catch(() => {});
  return turn;
}
