import type { ToolResultOutput } from '@ai-sdk/provider-utils';
import { safeContext } from '../memory/provider.ts';
import type { TurnRecord } from '../store/journal.ts';
import { openCallsOf } from '../store/journal-rows.ts';
import type { Addressed } from './brief.ts';
import type { EngineContext } from './engine-context.ts';
import { emptyUsage, type HarnessStreamPart, partSink, type Usage } from './events.ts';
import { recordedSources } from './hosted.ts';
import type { ModelSource } from './model-call.ts';
import type { ProviderPrompt } from './provider-prompt.ts';
import { NO_TELEMETRY, startTurnTelemetry, type TurnTelemetry } from './telemetry.ts';
import { type Entry, loadTranscript, textOf, toolsRanIn } from './transcript.ts';
import { turnActivity } from './turn-activity.ts';
import type { TurnHooks, TurnResult, TurnToolCall } from './turn-types.ts';

/** One turn in this process: what it has read, done and still owes the journal. */
export interface TurnState {
  turn: TurnRecord;
  sessionId: string;
  hooks: TurnHooks;
  emit: (part: HarnessStreamPart) => void;
  transcript: Entry[];
  step: number;
  usage: Usage;
  lastInputTokens: number | undefined;
  toolsRan: number;
  visibleActions: number;
  addressed: Addressed;
  nudged: boolean;
  repairedOutput: boolean;
  overflowRescued: boolean;
  prompt: string;
  turnContext: string[];
  calls: TurnToolCall[];
  results: Array<TurnToolCall & { output: unknown; error?: string }>;
  started: number;
  resumed: boolean;
  /**
   * Full results produced in this process for the open step, by call id. A safe lone call's
   * result lives only here until the step's settlement is written.
   */
  outputs: Map<string, ToolResultOutput>;
  /** The ledger writes of parallel calls (a start mark, a result), one at a time: see inLedgerOrder. */
  ledger: Promise<void>;
  /** The transcript as the provider reads it, converted once per message: the session's, taken for this turn (see traced). */
  providerPrompt: ProviderPrompt;
  /** A settled step's journal writes, waiting for the turn's next commit (see persistence.ts, settleStep). */
  pendingSettle: (() => Promise<void>) | undefined;
  /** What the provider's built-ins cited and produced in this turn's calls, for the reply's footers. */
  sources: ModelSource[];
  files: string[];
  telemetry: TurnTelemetry;
}

/** Takes up a turn (new or resumed) in this process: its transcript, its steps so far, its context lines. */
export async function newState(
  ctx: EngineContext,
  turn: TurnRecord,
  hooks: TurnHooks,
  flags: { addressed: Addressed; resumed: boolean },
): Promise<TurnState> {
  const { options, journal, logger } = ctx;
  const transcript = await loadTranscript(journal, turn.sessionId);
  // The turn's own messages: everything below reads only them. A turn's question is its first
  // message (appended with the turn, engine.ts) and its only 'user' one, so when the transcript
  // ends with it the turn has just started and holds nothing else; otherwise one pass finds them.
  const last = transcript.at(-1);
  const own = last?.turnId === turn.id && last.kind === 'user' ? [last] : transcript.filter((entry) => entry.turnId === turn.id);
  const userEntry = own.find((entry) => entry.kind === 'user');
  const prompt = userEntry ? textOf(userEntry.message) : '';
  const steps = own.filter((entry) => entry.kind === 'assistant').length;
  // A resumed turn reports the calls it made before this process took it up, too.
  const earlier = turnActivity(own, turn.id);
  const telemetry = await startTurnTelemetry(options.telemetry, {
    sessionId: turn.sessionId,
    turnId: turn.id,
    streaming: hooks.emit !== undefined,
    model: { provider: options.model.provider, modelId: options.model.modelId },
    prompt,
  });
  const sink = partSink(hooks);
  const state: TurnState = {
    turn,
    sessionId: turn.sessionId,
    hooks,
    emit: telemetry === NO_TELEMETRY ? sink : (part) => (telemetry.observe(part), sink(part)),
    transcript,
    step: steps,
    usage: emptyUsage(),
    lastInputTokens: undefined,
    // The open step's calls from the transcript just read, and its ledger rows: the same evidence
    // journal.openCalls reads, without scanning the session's every message for the turn's. A
    // turn begun by this call has no rows yet (a call is recorded after its step's message).
    toolsRan: flags.resumed ? toolsRanIn(own, turn.id, openCallsOf(turn.id, own, await journal.calls(turn.id))) : 0,
    visibleActions: 0,
    addressed: flags.addressed,
    nudged: turn.nudged,
    repairedOutput: false,
    overflowRescued: false,
    prompt,
    turnContext: [],
    calls: earlier.calls,
    results: earlier.results,
    started: performance.now(),
    resumed: flags.resumed,
    outputs: new Map(),
    ledger: Promise.resolve(),
    providerPrompt: ctx.prompts.take(turn.sessionId),
    pendingSettle: undefined,
    // A resumed turn's earlier steps: their sources were journaled with their assistant messages.
    sources: recordedSources(own.map((entry) => entry.message)),
    files: [],
    telemetry,
  };
  state.turnContext = await composeTurnContext(ctx, state);
  const images = hooks.attachments ?? [];
  // Said loudly: a model without vision reads what the images were, never the pixels.
  if (images.length > 0 && !options.model.vision) logger.warn('image degraded to text', { session: turn.sessionId, turn: turn.id, images: images.length, reason: 'the model reads text only' });
  logger.info('turn start', {
    session: state.sessionId,
    turn: turn.id,
    provider: options.model.provider,
    model: options.model.modelId,
    resumed: flags.resumed || undefined,
  });
  state.emit({ type: 'start', sessionId: state.sessionId, turnId: turn.id, resumed: flags.resumed });
  return state;
}

async function composeTurnContext(ctx: EngineContext, state: TurnState): Promise<string[]> {
  const { options, output } = ctx;
  const lines = [...(options.briefLines ?? [])];
  if (options.memory) {
    // Bounded in time and never throws: a memory backend failure must not break a turn.
    const context = await safeContext(options.memory, { agentId: options.agentId, sessionId: state.sessionId, query: state.prompt }, ctx.logger);
    if (context) lines.push(context);
  }
  if (output) {
    lines.push(
      `When you finish, reply with only a JSON value (no prose, no code fence) that matches this JSON Schema: ${JSON.stringify(output.jsonSchema)}`,
    );
  }
  return lines;
}

/** A turn's result as this process saw it, with the fields its ending decides. */
export function turnResult(
  state: TurnState,
  fields: Pick<TurnResult, 'text' | 'unspoken' | 'output' | 'finishReason'> &
    Partial<Pick<TurnResult, 'pendingApprovals' | 'pendingToolCalls' | 'suspendedBy'>>,
): TurnResult {
  return {
    sessionId: state.sessionId,
    turnId: state.turn.id,
    usage: state.usage,
    steps: state.step,
    toolCalls: state.calls,
    toolResults: state.results,
    pendingApprovals: [],
    pendingToolCalls: [],
    resumed: state.resumed,
    ...fields,
  };
}

/** Runs a turn's body with its telemetry ended, and its session's provider prompt given back, however the body ends. */
export async function traced(ctx: EngineContext, state: TurnState, body: () => Promise<TurnResult>): Promise<TurnResult> {
  try {
    const result = await body();
    state.telemetry.end({ text: result.text || result.unspoken || '', finishReason: result.finishReason, usage: result.usage });
    return result;
  } catch (error) {
    state.telemetry.end({ error });
    throw error;
  } finally {
    ctx.prompts.giveBack(state.sessionId, state.providerPrompt);
  }
}
