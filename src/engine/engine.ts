import { createHash, randomUUID } from 'node:crypto';
import type { AssistantModelMessage, ModelMessage, ToolResultPart, UserContent } from 'ai';
import type { ToolResultOutput } from '@ai-sdk/provider-utils';
import { type MemoryProvider, safeContext, safeObserve } from '../memory/provider.ts';
import type { ModelParams } from '../model/params.ts';
import type { ResolvedModel } from '../model/providers.ts';
import type { CallRecord, StoredMessage, TurnRecord } from '../store/journal.ts';
import type { JournalStore } from '../store/journal-store.ts';
import { needsApproval, type PermissionMode } from '../tools/permission.ts';
import { runTool } from '../tools/run.ts';
import { type InputSchema, type NormalizedSchema, normalizeSchema } from '../tools/schema.ts';
import type { Tool } from '../tools/tool.ts';
import { AcxError, errorMessage, TurnAbortedError } from '../core/errors.ts';
import { type Logger, silentLogger } from '../util/logger.ts';
import { logSeconds } from '../util/duration.ts';
import { NO_TELEMETRY, startTurnTelemetry, type TelemetrySettings, type TurnTelemetry } from './telemetry.ts';
import { type Addressed, composeBrief, fallbackReserveNote, isUnspoken, nudgeNote, reserveBrief, type SpeechMode } from './brief.ts';
import { callCostUsd } from '../model/call-cost.ts';
import { capArguments, DEFAULT_MAX_STEPS, STEP_ARGS_BUDGET, STEP_RESULT_BUDGET } from './caps.ts';
import { compactSession, type CompactionOutcome } from './compaction.ts';
import { checkHeadroom, type ContextBudget, resolveContextBudget } from './context-budget.ts';
import {
  addUsage,
  type ApprovalRequest,
  type CompactionReport,
  emptyUsage,
  type FinishReason,
  type HarnessStreamPart,
  type Usage,
} from './events.ts';
import { classifyFault, RATE_LIMIT_RETRIES, retryDelayMs } from './faults.ts';
import { describeProviderFailure } from './provider-failure.ts';
import { callModel, type ModelCallResult, type ModelSource, type ModelTool, toolSet } from './model-call.ts';
import { addSources, callToolSet, recordedSources, withFooters, withSourcesRecorded } from './hosted.ts';
import type { ProviderBuiltins } from '../model/builtins.ts';
import { ProviderPrompt } from './provider-prompt.ts';
import type { ToolSet } from 'ai';
import { parseStructuredOutput } from './structured-output.ts';
import { capStepOutputs, errorOutput, toToolResultOutput } from './tool-output.ts';
import { turnActivity } from './turn-activity.ts';

/**
 * The native engine: a think → act loop over any AI SDK LanguageModel, one model call per step,
 * the engine (not the SDK) running tools, everything journaled as it happens.
 */
export { DEFAULT_MAX_STEPS } from './caps.ts';
export const DEFAULT_RETRIES = 2;

/** The memory operations the engine uses; a MemoryProvider satisfies it. */
export type EngineMemory = Pick<MemoryProvider, 'name' | 'observe' | 'context' | 'remember'>;

/** Durability boundaries, reported so tests can kill the process exactly there. */
export type Checkpoint =
  | { at: 'turn-started'; turnId: string }
  | { at: 'model-call'; turnId: string; step: number }
  | { at: 'assistant-persisted'; turnId: string; step: number }
  | { at: 'tool-started'; turnId: string; step: number; toolName: string; callId: string }
  | { at: 'tool-finished'; turnId: string; step: number; toolName: string; callId: string }
  | { at: 'step-settled'; turnId: string; step: number }
  | { at: 'turn-ended'; turnId: string };

export interface EngineOptions {
  model: ResolvedModel;
  journal: JournalStore;
  agentId?: string;
  instructions?: string;
  tools?: readonly Tool[];
  /** The provider's server-side built-ins (web search, code execution): declared, never run here. */
  builtins?: ProviderBuiltins | undefined;
  maxSteps?: number;
  speech?: SpeechMode;
  permissionMode?: PermissionMode;
  params?: ModelParams;
  /** The configured context ceiling in tokens; 0 disables compaction. */
  contextTokens?: number;
  retries?: number;
  retryBaseMs?: number;
  memory?: EngineMemory;
  output?: InputSchema;
  logger?: Logger;
  clock?: () => Date;
  checkpoint?: (event: Checkpoint) => void;
  /** Extra standing lines for every step's brief (e.g. which optional tools are absent). */
  briefLines?: readonly string[];
  /** Characters of tool results one step keeps in the journal (default 4,096; a cartridge policy may lower it). */
  stepResultBudget?: number;
  /**
   * Whether this engine checks the compaction headroom and warns when it is too small (default
   * true). A harness opening many sessions on one configuration checks it once, not per session.
   */
  warnHeadroom?: boolean;
  /** OpenTelemetry spans for turns, steps, model calls and tool runs (telemetry.ts); off when absent. */
  telemetry?: TelemetrySettings;
}

export interface ApprovalDecision {
  approvalId: string;
  approved: boolean;
  reason?: string;
}

export interface TurnHooks {
  abortSignal?: AbortSignal | undefined;
  /** Receives the turn's parts as they happen, and asks for streamed model calls (text arrives in deltas). */
  emit?: ((part: HarnessStreamPart) => void) | undefined;
  /**
   * Receives the turn's parts without asking for streamed model calls: a step's text and
   * reasoning arrive as one delta each, after its model call (what generate() reads steps from).
   */
  observe?: ((part: HarnessStreamPart) => void) | undefined;
  /** Answer approvals inline; without it the turn suspends and waits for `continueTurn`. */
  onApprovalRequest?: ((request: ApprovalRequest) => Promise<{ approved: boolean; reason?: string }>) | undefined;
  /**
   * Asked at each safe point — before every model call, when the previous step has settled and no
   * call is open — whether to pause there. True suspends the turn (journaled, resumable with
   * `continueTurn` from any process); nothing is lost or re-run.
   */
  pauseRequested?: (() => boolean) | undefined;
}

export interface TurnInput extends TurnHooks {
  sessionId: string;
  prompt: string | UserContent;
  /**
   * The message calls for a reply (a mention, a one-on-one): arms the one nudge in tool speech
   * mode, worded for the reason given (a mention wins when both hold).
   */
  addressed?: Addressed;
  /**
   * The turn's id, chosen by the caller to make delivering the same message twice safe (a queue
   * or router that delivers at least once). If the session already has a turn with this id, its
   * message is not taken again: a finished turn returns what it recorded and runs nothing; an
   * unfinished, failed or cancelled one is continued by evidence.
   */
  turnId?: string;
}

export interface ContinueInput extends TurnHooks {
  sessionId: string;
  approvals?: readonly ApprovalDecision[];
  /** Results for calls of tools that have no executor in this host. */
  toolResults?: ReadonlyArray<{ toolCallId: string; output: unknown }>;
  /**
   * The id of the suspended turn this call means to answer: it is claimed first (see
   * Journal.claimSuspended), and a turn another caller already took is refused, not run twice.
   */
  claimSuspended?: string | undefined;
}

export interface TurnToolCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
}

export interface TurnResult {
  sessionId: string;
  turnId: string;
  /** The reply. Empty in tool speech mode, where the final text is unspoken narration. */
  text: string;
  unspoken: string | undefined;
  output: unknown;
  finishReason: FinishReason;
  usage: Usage;
  steps: number;
  /**
   * Every tool call of the turn, including those made before it was resumed or continued (their
   * inputs and results then as the journal kept them, so possibly capped).
   */
  toolCalls: TurnToolCall[];
  toolResults: Array<TurnToolCall & { output: unknown; error?: string }>;
  pendingApprovals: ApprovalRequest[];
  pendingToolCalls: TurnToolCall[];
  resumed: boolean;
  /** Why a suspended turn waits: approvals, results of host-run tools, or a caller's pause request. */
  suspendedBy?: SuspendReason;
}

export type SuspendReason = 'approval' | 'tool-result' | 'request';

/** A suspended turn's open calls, as the caller answers them. */
export function pendingOf(open: readonly CallRecord[]): Pick<TurnResult, 'pendingApprovals' | 'pendingToolCalls'> {
  return {
    pendingApprovals: open
      .filter((call) => call.status === 'awaiting-approval')
      .map((call) => ({ approvalId: call.callId, toolCallId: call.callId, toolName: call.toolName, input: call.input })),
    pendingToolCalls: open
      .filter((call) => call.status === 'awaiting-result')
      .map((call) => ({ toolCallId: call.callId, toolName: call.toolName, input: call.input })),
  };
}

/** What a suspended turn waits for, read from its pending calls. */
export function suspendReasonOf(pending: Pick<TurnResult, 'pendingApprovals' | 'pendingToolCalls'>): SuspendReason {
  return pending.pendingApprovals.length > 0 ? 'approval' : pending.pendingToolCalls.length > 0 ? 'tool-result' : 'request';
}

/** The step's stated cost, as a part field (absent when the provider states none). */
function costOf(result: ModelCallResult): { costUsd?: number } {
  const cost = callCostUsd(result.providerMetadata);
  return cost === undefined ? {} : { costUsd: cost };
}

/** Where a turn's parts go: the streaming sink, the observer, both, or nowhere. */
function partSink(hooks: TurnHooks): (part: HarnessStreamPart) => void {
  const { emit, observe } = hooks;
  if (emit && observe) return (part) => (emit(part), observe(part));
  return emit ?? observe ?? (() => {});
}

/** A non-streamed model call's reasoning and text, told to an observer as one delta each. */
function observeWhole(state: TurnState, result: { text: string; reasoning?: string | undefined }): void {
  if (result.reasoning) state.emit({ type: 'reasoning-delta', id: `reasoning-${state.step}`, text: result.reasoning });
  if (result.text) state.emit({ type: 'text-delta', id: `text-${state.step}`, text: result.text });
}

interface Entry {
  seq: number;
  turnId: string | null;
  kind: StoredMessage['kind'];
  message: ModelMessage;
}

interface TurnState {
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
  /** The transcript as the provider reads it, converted once per message for this turn. */
  providerPrompt: ProviderPrompt;
  /**
   * A settled step's journal writes, committed with the next write of the turn (the next
   * assistant message, or the turn's end) so a step costs one commit. Safe because a step only
   * waits here when every unfinished piece of evidence it holds is safe to re-create: results of
   * unsafe calls are always committed as they arrive.
   */
  pendingSettle: (() => Promise<void>) | undefined;
  /** What the provider's built-ins cited and produced in this turn's calls, for the reply's footers. */
  sources: ModelSource[];
  files: string[];
  telemetry: TurnTelemetry;
}

export class Engine {
  readonly options: Required<
    Pick<EngineOptions, 'maxSteps' | 'speech' | 'permissionMode' | 'params' | 'retries' | 'retryBaseMs' | 'agentId' | 'instructions'>
  > &
    EngineOptions;
  readonly journal: JournalStore;
  readonly budget: ContextBudget;
  private readonly logger: Logger;
  private readonly tools = new Map<string, { tool: Tool; schema: NormalizedSchema }>();
  private readonly modelTools: ModelTool[] = [];
  private readonly sdkTools: ToolSet | undefined;
  private readonly callTools: (functions: ToolSet | undefined) => ToolSet | undefined;
  private readonly output: NormalizedSchema | undefined;

  constructor(options: EngineOptions) {
    const maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS;
    if (!Number.isInteger(maxSteps) || maxSteps <= 0) {
      throw new AcxError('config', `The step budget must be a positive whole number (got ${maxSteps}).`, {
        hint: `Leave it unset for the default of ${DEFAULT_MAX_STEPS}, or pass a value like 12.`,
      });
    }
    this.options = {
      ...options,
      maxSteps,
      speech: options.speech ?? { mode: 'final-text' },
      permissionMode: options.permissionMode ?? 'allow-edits',
      params: options.params ?? {},
      retries: options.retries ?? DEFAULT_RETRIES,
      retryBaseMs: options.retryBaseMs ?? 500,
      agentId: options.agentId ?? 'agent',
      instructions: options.instructions ?? '',
    };
    this.journal = options.journal;
    this.logger = options.logger ?? silentLogger;
    for (const tool of options.tools ?? []) {
      if (this.tools.has(tool.name)) {
        throw new AcxError('config', `Two tools are named "${tool.name}".`, { hint: 'Tool names must be unique.' });
      }
      const schema = normalizeSchema(tool.inputSchema);
      this.tools.set(tool.name, { tool, schema });
      this.modelTools.push({ name: tool.name, description: tool.description, schema });
    }
    this.sdkTools = toolSet(this.modelTools);
    for (const name of options.builtins?.names ?? []) {
      if (this.tools.has(name)) {
        throw new AcxError('config', `A tool and the provider's server-side built-in are both named "${name}".`, {
          hint: `Rename the tool, or revoke the ${name} grant (delete tools/${name}.enabled in the config home).`,
        });
      }
    }
    this.callTools = callToolSet(options.builtins);
    const speech = this.options.speech;
    if (speech.mode === 'tool' && !this.tools.has(speech.tool)) {
      throw new AcxError('config', `Speech mode "tool" names the tool "${speech.tool}", which is not registered.`, {
        hint: 'Register the speaking tool, or use the final-text speech mode.',
      });
    }
    this.output = options.output ? normalizeSchema(options.output) : undefined;
    this.budget = resolveContextBudget({
      configured: options.contextTokens,
      modelLimit: options.model.contextWindowTokens,
    });
    this.logger.info('context limit', {
      limit: this.budget.limit,
      source: this.budget.source,
      compact_at: this.budget.enabled ? this.budget.compactAt : 'disabled',
    });
    if (options.warnHeadroom !== false) checkHeadroom(this.budget, maxSteps, this.logger);
  }

  async hasUnfinishedTurn(sessionId: string): Promise<boolean> {
    return (await this.journal.unfinishedTurn(sessionId)) !== undefined;
  }

  /**
   * Gives up a running or suspended turn for good (its caller set its message aside): the turn
   * stays in the journal as cancelled, saying why, and no longer holds back the session's next
   * turn. False when the session has no such turn unfinished.
   */
  async abandonTurn(sessionId: string, turnId: string, reason: string): Promise<boolean> {
    const turn = await this.journal.turn(turnId);
    if (!turn || turn.sessionId !== sessionId || (turn.status !== 'running' && turn.status !== 'suspended')) return false;
    await this.journal.updateTurn(turnId, { status: 'cancelled', error: `abandoned: ${reason}` });
    this.logger.warn('turn abandoned', { session: sessionId, turn: turnId, reason });
    return true;
  }

  /** Runs one turn for a new user message. An unfinished earlier turn must be continued first. */
  async runTurn(input: TurnInput): Promise<TurnResult> {
    const { sessionId } = input;
    await this.journal.ensureSession(sessionId);
    const existing = input.turnId ? await this.journal.turn(input.turnId) : undefined;
    if (existing) return this.rerunTurn(existing, input);
    const unfinished = await this.journal.unfinishedTurn(sessionId);
    if (unfinished) {
      throw new AcxError('turn-unfinished', `Session ${sessionId} has an unfinished turn (${unfinished.id}).`, {
        hint: 'Continue it first (continueTurn / acx run resumes it automatically).',
      });
    }
    const turnId = input.turnId ?? randomUUID();
    const message: ModelMessage = { role: 'user', content: input.prompt };
    await this.journal.transaction(async () => {
      await this.journal.startTurn(turnId, sessionId);
      await this.journal.appendMessage(sessionId, turnId, 'user', message);
    });
    this.options.checkpoint?.({ at: 'turn-started', turnId });
    const state = await this.newState((await this.journal.turn(turnId))!, input, {
      addressed: input.addressed ?? false,
      resumed: false,
    });
    return this.traced(state, () => this.drive(state));
  }

  /** The same turn id again: never take its message twice (see TurnInput.turnId). */
  private async rerunTurn(turn: TurnRecord, input: TurnInput): Promise<TurnResult> {
    if (turn.sessionId !== input.sessionId) {
      throw new AcxError('turn-id-taken', `Turn id ${turn.id} belongs to another session (${turn.sessionId}).`, {
        hint: 'Derive turn ids from the session and the message, so that they are unique per session.',
      });
    }
    const { onApprovalRequest, abortSignal, emit, observe, pauseRequested } = input;
    const hooks: ContinueInput = { sessionId: turn.sessionId, onApprovalRequest, abortSignal, emit, observe, pauseRequested };
    if (turn.status === 'done') {
      this.logger.info('turn already done', { session: turn.sessionId, turn: turn.id });
      return await this.recordedResult(turn);
    }
    const newer = await this.journal.unfinishedTurn(turn.sessionId);
    if (newer && newer.id !== turn.id) {
      throw new AcxError('turn-unfinished', `Session ${turn.sessionId} has another unfinished turn (${newer.id}).`, {
        hint: 'Continue it first.',
      });
    }
    if (turn.status === 'failed' || turn.status === 'cancelled') {
      // A compaction after it may have summarised its messages away: then there is no evidence
      // left of what it already did, and continuing it could repeat its side effects.
      const evidence = (await this.loadTranscript(turn.sessionId)).some((entry) => entry.turnId === turn.id && entry.kind === 'user');
      if (!evidence) {
        this.logger.error('turn abandoned', { session: turn.sessionId, turn: turn.id, status: turn.status, reason: 'its messages were compacted away' });
        throw new AcxError('turn-compacted', `Turn ${turn.id} ${turn.status === 'failed' ? 'failed' : 'was cancelled'} and its messages have since been compacted into a summary; it cannot be continued safely.`, {
          hint: 'If the message still needs an answer, send it as a new turn (another turn id).',
        });
      }
      // Its settled steps stand; the turn picks up where it stopped, by evidence.
      await this.journal.updateTurn(turn.id, { status: 'running', error: null });
    }
    return this.continueTurn(hooks);
  }

  /** What a finished turn recorded, for a caller that delivered its message again. */
  private async recordedResult(turn: TurnRecord): Promise<TurnResult> {
    const text = turn.finalText ?? '';
    const unspoken = isUnspoken(this.options.speech);
    const parsed = this.output ? parseStructuredOutput(text, this.output) : undefined;
    const activity = turnActivity(await this.loadTranscript(turn.sessionId), turn.id);
    return {
      sessionId: turn.sessionId,
      turnId: turn.id,
      text: unspoken ? '' : text,
      unspoken: unspoken ? text : undefined,
      output: parsed?.ok ? parsed.value : undefined,
      finishReason: 'stop',
      usage: emptyUsage(),
      steps: turn.steps,
      toolCalls: activity.calls,
      toolResults: activity.results,
      pendingApprovals: [],
      pendingToolCalls: [],
      resumed: true,
    };
  }

  /** Continues a session's unfinished turn by evidence: what the journal shows already happened. */
  async continueTurn(input: ContinueInput): Promise<TurnResult> {
    const turn = await this.journal.unfinishedTurn(input.sessionId);
    if (!turn) {
      throw new AcxError('no-unfinished-turn', `Session ${input.sessionId} has no unfinished turn to continue.`, {
        hint: 'Send a new message instead.',
      });
    }
    if (input.claimSuspended !== undefined && (turn.id !== input.claimSuspended || !(await this.journal.claimSuspended(turn.id)))) {
      throw new AcxError('turn-claimed', `Turn ${input.claimSuspended} of session ${input.sessionId} is already being continued (by another process or call).`, {
        hint: 'List the paused turns again (agent.listSuspended()); answer only those still listed.',
      });
    }
    const state = await this.newState(turn, input, { addressed: false, resumed: true });
    return this.traced(state, () => this.resume(state, input));
  }

  private async resume(state: TurnState, input: ContinueInput): Promise<TurnResult> {
    const { turn } = state;
    this.logger.info('turn resume', { session: input.sessionId, turn: turn.id, steps: state.step });
    const settled = await this.settleOpenStep(state, input);
    if (settled === 'suspended') return this.suspend(state);
    if (settled === 'none') {
      const last = [...state.transcript].reverse().find((entry) => entry.turnId === turn.id);
      if (last?.kind === 'assistant' && !hasToolCalls(last.message)) {
        // The turn reached its final text before the process stopped: commit it, re-run nothing.
        return this.finish(state, textOf(last.message), 'stop');
      }
    }
    return this.drive(state);
  }

  /** Runs a turn's body with its telemetry ended however the body ends. */
  private async traced(state: TurnState, body: () => Promise<TurnResult>): Promise<TurnResult> {
    try {
      const result = await body();
      state.telemetry.end({ text: result.text || result.unspoken || '', finishReason: result.finishReason, usage: result.usage });
      return result;
    } catch (error) {
      state.telemetry.end({ error });
      throw error;
    }
  }

  // ---- the loop --------------------------------------------------------------------------

  private async newState(
    turn: TurnRecord,
    hooks: TurnHooks,
    flags: { addressed: Addressed; resumed: boolean },
  ): Promise<TurnState> {
    const transcript = await this.loadTranscript(turn.sessionId);
    const userEntry = transcript.find((entry) => entry.turnId === turn.id && entry.kind === 'user');
    const prompt = userEntry ? textOf(userEntry.message) : '';
    const steps = transcript.filter((entry) => entry.turnId === turn.id && entry.kind === 'assistant').length;
    // A resumed turn reports the calls it made before this process took it up, too.
    const earlier = turnActivity(transcript, turn.id);
    const telemetry = await startTurnTelemetry(this.options.telemetry, {
      sessionId: turn.sessionId,
      turnId: turn.id,
      streaming: hooks.emit !== undefined,
      model: { provider: this.options.model.provider, modelId: this.options.model.modelId },
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
      toolsRan: toolsRanIn(transcript, turn.id, await this.journal.openCalls(turn.id)),
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
      providerPrompt: new ProviderPrompt(),
      pendingSettle: undefined,
      // A resumed turn's earlier steps: their sources were journaled with their assistant messages.
      sources: recordedSources(transcript.filter((entry) => entry.turnId === turn.id).map((entry) => entry.message)),
      files: [],
      telemetry,
    };
    state.turnContext = await this.composeTurnContext(state);
    this.logger.info('turn start', {
      session: state.sessionId,
      turn: turn.id,
      provider: this.options.model.provider,
      model: this.options.model.modelId,
      resumed: flags.resumed || undefined,
    });
    state.emit({ type: 'start', sessionId: state.sessionId, turnId: turn.id, resumed: flags.resumed });
    return state;
  }

  private async composeTurnContext(state: TurnState): Promise<string[]> {
    const lines = [...(this.options.briefLines ?? [])];
    if (this.options.memory) {
      // Bounded in time and never throws: a memory backend failure must not break a turn.
      const context = await safeContext(
        this.options.memory,
        { agentId: this.options.agentId, sessionId: state.sessionId, query: state.prompt },
        this.logger,
      );
      if (context) lines.push(context);
    }
    if (this.output) {
      lines.push(
        `When you finish, reply with only a JSON value (no prose, no code fence) that matches this JSON Schema: ${JSON.stringify(this.output.jsonSchema)}`,
      );
    }
    return lines;
  }

  private async drive(state: TurnState): Promise<TurnResult> {
    const { maxSteps } = this.options;
    for (;;) {
      await this.throwIfAborted(state);
      if (state.hooks.pauseRequested?.()) return this.suspend(state);
      if (state.step >= maxSteps) return this.reserve(state);
      state.step += 1;
      state.emit({ type: 'start-step', step: state.step });
      this.options.checkpoint?.({ at: 'model-call', turnId: state.turn.id, step: state.step });
      const stepStarted = performance.now();
      const result = await this.callWithRescue(state);
      const calls = result.toolCalls;
      const records = await this.persistAssistant(state, result);
      this.options.checkpoint?.({ at: 'assistant-persisted', turnId: state.turn.id, step: state.step });
      await this.keepHosted(state, result);
      // Like the AI SDK, a step finishes after its tools ran.
      const finishStep = () =>
        state.emit({
          type: 'finish-step',
          step: state.step,
          finishReason: calls.length > 0 ? 'tool-calls' : normalizeFinish(result.finishReason),
          usage: result.usage,
          ...costOf(result),
        });

      if (calls.length === 0) {
        finishStep();
        this.logger.info(`step ${state.step}/${maxSteps}: final reply`, {
          duration: logSeconds(performance.now() - stepStarted),
        });
        const decided = await this.onFinalText(state, result.text);
        if (decided === 'continue') continue;
        return decided;
      }

      const outcome = await this.runStepCalls(state, records);
      finishStep();
      this.logger.info(`step ${state.step}/${maxSteps}: tools=${calls.map((c) => c.toolName).join(',')}`, {
        duration: logSeconds(performance.now() - stepStarted),
      });
      if (outcome === 'suspended') return this.suspend(state);
      this.settleStep(state, state.step, records);
      await this.throwIfAborted(state);
    }
  }

  /** Decides what a step without tool calls means: the final reply, or one more nudge/repair. */
  private async onFinalText(state: TurnState, text: string): Promise<TurnResult | 'continue'> {
    const speech = this.options.speech;
    if (speech.mode === 'tool' && state.addressed !== false && state.visibleActions === 0 && !state.nudged) {
      state.nudged = true;
      await this.commit(state, async () => {
        await this.appendEntry(state, 'note', { role: 'user', content: nudgeNote(speech, state.addressed) });
        await this.journal.updateTurn(state.turn.id, { nudged: true });
      });
      this.logger.info('nudge', { session: state.sessionId, tool: speech.tool, ...(typeof state.addressed === 'string' ? { addressed: state.addressed } : {}) });
      return 'continue';
    }
    if (this.output && !state.repairedOutput) {
      const parsed = parseStructuredOutput(text, this.output);
      if (!parsed.ok) {
        state.repairedOutput = true;
        await this.commit(state, async () => {
          await this.appendEntry(state, 'note', {
            role: 'user',
            content: `[harness] Your final answer is not valid for the required output schema: ${parsed.error}. Reply again with only the JSON value.`,
          });
        });
        return 'continue';
      }
    }
    return this.finish(state, text, 'stop');
  }

  private async finish(state: TurnState, text: string, finishReason: FinishReason): Promise<TurnResult> {
    let output: unknown;
    let failure: string | undefined;
    if (this.output) {
      const parsed = parseStructuredOutput(text, this.output);
      if (parsed.ok) output = parsed.value;
      else failure = parsed.error;
    }
    // A structured answer stays bare JSON; any other reply carries what the built-ins cited and made.
    if (!this.output) text = withFooters(text, state.sources, state.files);
    const unspoken = isUnspoken(this.options.speech);
    await this.commit(state, () =>
      this.journal.updateTurn(state.turn.id, {
        status: failure ? 'failed' : 'done',
        finalText: text,
        steps: state.step,
        ...(failure ? { error: `output invalid: ${failure}` } : {}),
      }),
    );
    this.options.checkpoint?.({ at: 'turn-ended', turnId: state.turn.id });
    if (unspoken && text) {
      this.logger.info('unspoken', { session: state.sessionId, kind: 'narration', chars: text.length, text });
      state.emit({ type: 'unspoken', text });
    }
    this.logger.info('turn end', {
      session: state.sessionId,
      turn: state.turn.id,
      outcome: failure ? 'error' : 'ok',
      steps: `${state.step}/${this.options.maxSteps}`,
      tools: state.toolsRan,
      duration: logSeconds(performance.now() - state.started),
    });
    await this.observe(state, text, unspoken);
    await this.maybeCompact(state);
    if (failure) {
      throw new AcxError('output-invalid', `The model's final answer does not match the output schema: ${failure}`, {
        hint: 'The answer is kept in the journal; refine the instructions or the schema and ask again.',
      });
    }
    state.emit({ type: 'finish', finishReason, totalUsage: state.usage });
    return this.result(state, { text: unspoken ? '' : text, unspoken: unspoken ? text : undefined, output, finishReason });
  }

  private result(
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

  private async suspend(state: TurnState): Promise<TurnResult> {
    await this.commit(state, () => this.journal.updateTurn(state.turn.id, { status: 'suspended' }));
    const pending = pendingOf(await this.journal.openCalls(state.turn.id));
    const suspendedBy = suspendReasonOf(pending);
    this.logger.info('turn suspended', {
      session: state.sessionId,
      turn: state.turn.id,
      by: suspendedBy,
      approvals: pending.pendingApprovals.length,
      awaiting_results: pending.pendingToolCalls.length,
    });
    const finishReason: FinishReason = { approval: 'tool-approval', 'tool-result': 'tool-calls', request: 'other' }[suspendedBy] as FinishReason;
    state.emit({ type: 'finish', finishReason, totalUsage: state.usage });
    return this.result(state, { text: '', unspoken: undefined, output: undefined, finishReason, ...pending, suspendedBy });
  }

  /** Budget spent while the model still calls tools: one call with tools withheld for its own report. */
  private async reserve(state: TurnState): Promise<TurnResult> {
    const { maxSteps, speech } = this.options;
    this.logger.warn('step budget exhausted', { session: state.sessionId, steps: `${state.step}/${maxSteps}` });
    let text: string;
    try {
      const result = await this.callWithRetries(state, {
        brief: reserveBrief({ now: this.now(), maxSteps, speech }),
        toolChoice: 'none',
      });
      text = result.text.trim() || fallbackReserveNote(maxSteps, 'the report was empty');
    } catch (error) {
      if (classifyFault(error) === 'aborted') throw await this.abortTurn(state);
      this.logger.warn('reserve summary failed', { session: state.sessionId, error: errorMessage(error) });
      text = fallbackReserveNote(maxSteps, errorMessage(error));
    }
    await this.commit(state, async () => {
      await this.appendEntry(state, 'assistant', { role: 'assistant', content: text });
    });
    return this.finish(state, text, 'length');
  }

  // ---- model calls ----------------------------------------------------------------------

  private now(): Date {
    return this.options.clock?.() ?? new Date();
  }

  private async callWithRescue(state: TurnState): Promise<ModelCallResult> {
    const brief = composeBrief({
      now: this.now(),
      step: state.step,
      maxSteps: this.options.maxSteps,
      speech: this.options.speech,
      turnContext: state.turnContext,
    });
    try {
      return await this.callWithRetries(state, { brief });
    } catch (error) {
      const fault = classifyFault(error);
      if (fault === 'aborted') throw await this.abortTurn(state);
      if (fault === 'context-overflow' && this.budget.enabled && !state.overflowRescued) {
        state.overflowRescued = true;
        this.logger.warn('context overflow', {
          session: state.sessionId,
          tools_ran: state.toolsRan,
          action: state.toolsRan === 0 ? 'hard compaction and one re-run' : 'hard compaction; no re-run after a tool ran',
        });
        const outcome = await this.compact(state, { hard: true, inputTokens: undefined, trigger: 'overflow' });
        if (state.toolsRan === 0 && outcome.compacted) {
          state.transcript = await this.loadTranscript(state.sessionId);
          try {
            return await this.callWithRetries(state, { brief });
          } catch (again) {
            if (classifyFault(again) === 'aborted') throw await this.abortTurn(state);
            await this.failTurn(state, again);
            throw again;
          }
        }
      }
      await this.failTurn(state, error);
      throw error;
    }
  }

  /**
   * One model call, re-issued while its fault allows (see faults.ts): transient faults up to
   * `retries` extra attempts with backoff, a 429 on its own terms. Every retry is a WARNING; a
   * failure that was retried ends in one ERROR naming the attempts. What finally fails is thrown
   * as a ProviderError that says what went wrong and what to do.
   */
  private async callWithRetries(
    state: TurnState,
    call: { brief: string; toolChoice?: 'auto' | 'none' },
  ): Promise<ModelCallResult> {
    const { retries, retryBaseMs, model } = this.options;
    const rateLimit = { retried: 0, sleptMs: 0 };
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await state.telemetry.modelCall(() =>
          callModel({
          model,
          system: this.options.instructions,
          messages: state.transcript.map((entry) => entry.message),
          brief: call.brief,
          prompt: state.providerPrompt,
          tools: this.callTools(this.sdkTools),
          ...(call.toolChoice ? { toolChoice: call.toolChoice } : {}),
          params: this.options.params,
          sessionId: state.sessionId,
          abortSignal: state.hooks.abortSignal,
          emit: state.hooks.emit,
        }),
        );
        this.logModelCall(result);
        if (!state.hooks.emit) observeWhole(state, result);
        state.usage = addUsage(state.usage, result.usage);
        state.lastInputTokens = result.usage.inputTokens;
        return result;
      } catch (error) {
        const fault = classifyFault(error);
        if (fault === 'aborted') throw error;
        const waitMs = retryDelayMs(fault, error, { attempt, retries, baseMs: retryBaseMs, rateLimit });
        if (waitMs === undefined) {
          if (attempt > 1) this.logger.error('model call failed', { fault, attempts: attempt, error: errorMessage(error) });
          throw describeProviderFailure(error, { model, attempts: attempt }) ?? error;
        }
        if (fault === 'rate-limited') {
          rateLimit.retried += 1;
          rateLimit.sleptMs += waitMs;
        }
        const of = (fault === 'rate-limited' ? Math.min(retries, RATE_LIMIT_RETRIES) : retries) + 1;
        this.logger.warn('model call retry', { fault, attempt, of, wait: logSeconds(waitMs), error: errorMessage(error) });
        state.emit({ type: 'retry', attempt, error: errorMessage(error) });
        await sleep(waitMs, state.hooks.abortSignal);
      }
    }
  }

  private logModelCall(result: ModelCallResult): void {
    const cost = callCostUsd(result.providerMetadata);
    this.logger.info('llm', {
      provider: this.options.model.provider,
      model: this.options.model.modelId,
      duration: logSeconds(result.durationMs),
      tokens_in: result.usage.inputTokens,
      tokens_out: result.usage.outputTokens,
      tokens_total: result.usage.totalTokens,
      cached_tokens: result.usage.inputTokenDetails.cacheReadTokens,
      cost,
    });
  }

  /**
   * What the provider's built-ins did in a step, once its assistant message (which carries their
   * calls and results, so a replay never re-runs them) is journaled: each is logged, cited URLs
   * are streamed as AI SDK `source` parts and kept for the Sources: footer, and what they
   * produced is kept (afterCall) for the Files: footer. Keeping a file is best effort: a failure
   * is a WARNING, the turn goes on.
   */
  private async keepHosted(state: TurnState, result: ModelCallResult): Promise<void> {
    for (const call of result.hosted) {
      this.logger.info('builtin', { session: state.sessionId, tool: call.toolName, call: call.toolCallId, provider: this.options.model.provider });
    }
    for (const source of addSources(state.sources, result.sources)) {
      state.emit({ type: 'source', sourceType: 'url', id: source.id, url: source.url, ...(source.title ? { title: source.title } : {}) });
    }
    const afterCall = this.options.builtins?.afterCall;
    if (!afterCall || (result.hosted.length === 0 && result.documents.length === 0)) return;
    try {
      for (const file of await afterCall({ hosted: result.hosted, documents: result.documents })) if (!state.files.includes(file)) state.files.push(file);
    } catch (error) {
      this.logger.warn('builtin output not kept', { session: state.sessionId, error: errorMessage(error) });
    }
  }

  // ---- journal writes -------------------------------------------------------------------

  private async loadTranscript(sessionId: string): Promise<Entry[]> {
    return (await this.journal.messages(sessionId)).map((m) => ({ ...m }));
  }

  private nextSeq(state: TurnState): number | undefined {
    const last = state.transcript.at(-1);
    return last ? last.seq + 1 : undefined;
  }

  private async appendEntry(state: TurnState, kind: Entry['kind'], message: ModelMessage): Promise<number> {
    const seq = await this.journal.appendMessage(state.sessionId, state.turn.id, kind, message, this.nextSeq(state));
    state.transcript.push({ seq, turnId: state.turn.id, kind, message });
    return seq;
  }

  /** One journal transaction for this turn, carrying any settlement still waiting to be written. */
  private async commit(state: TurnState, write?: () => Promise<void>): Promise<void> {
    const settle = state.pendingSettle;
    if (!settle && !write) return;
    state.pendingSettle = undefined;
    await this.journal.transaction(async () => {
      await settle?.();
      await write?.();
    });
  }

  /** The assistant message naming the calls is committed before any of them runs. */
  private async persistAssistant(state: TurnState, result: ModelCallResult): Promise<CallRecord[]> {
    const assistant = withSourcesRecorded<AssistantModelMessage>(
      (result.responseMessages.find((m) => m.role === 'assistant') as AssistantModelMessage | undefined) ?? { role: 'assistant', content: result.text },
      result.sources,
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
    }));
    await this.commit(state, async () => {
      await this.appendEntry(state, 'assistant', assistant);
      for (const [ordinal, call] of result.toolCalls.entries()) {
        const record = records[ordinal]!;
        if (call.invalidReason) {
          const known = this.tools.has(call.toolName);
          await this.recordResult(
            state,
            record,
            errorOutput(
              known
                ? `The call to ${call.toolName} could not be parsed: ${call.invalidReason}`
                : `There is no tool named ${call.toolName}. Available tools: ${[...this.tools.keys()].join(', ') || 'none'}.`,
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
   * `defer` (a safe lone call, whose result is written with the settlement).
   */
  private recordResult(state: TurnState, call: CallRecord, output: ToolResultOutput, defer = false): Promise<void> {
    state.outputs.set(call.callId, output);
    call.status = 'done';
    return defer ? Promise.resolve() : this.journal.recordCallResult(call, output);
  }

  /**
   * A step settles when every call has a result: the capped results and capped arguments are
   * written in one transaction, and the full results leave the ledger.
   */
  private settleStep(state: TurnState, step: number, calls: readonly CallRecord[]): void {
    const fullOutputs = calls.map((call) => (state.outputs.get(call.callId) ?? call.result) as ToolResultOutput);
    state.outputs.clear();
    const capped = capStepOutputs(fullOutputs, this.options.stepResultBudget ?? STEP_RESULT_BUDGET);
    const cappedInputs = capArguments(
      calls.map((call) => call.input),
      STEP_ARGS_BUDGET,
    );
    const assistantIndex = findLastIndex(
      state.transcript,
      (entry) => entry.turnId === state.turn.id && entry.kind === 'assistant' && hasToolCalls(entry.message),
    );
    const assistant = state.transcript[assistantIndex]!;
    const cappedAssistant = replaceToolInputs(
      assistant.message as AssistantModelMessage,
      new Map(calls.map((call, index) => [call.callId, cappedInputs[index]])),
    );
    const toolMessage = (outputs: ToolResultOutput[]): ModelMessage => ({
      role: 'tool',
      content: calls.map(
        (call, index): ToolResultPart => ({
          type: 'tool-result',
          toolCallId: call.callId,
          toolName: call.toolName,
          output: outputs[index]!,
        }),
      ),
    });
    const argsCapped = calls.some((call, index) => cappedInputs[index] !== call.input && JSON.stringify(cappedInputs[index]) !== JSON.stringify(call.input));
    const seq = this.nextSeq(state) ?? 1;
    const write = async () => {
      if (argsCapped) await this.journal.replaceMessage(state.sessionId, assistant.seq, cappedAssistant);
      await this.journal.appendMessage(state.sessionId, state.turn.id, 'tool', toolMessage(capped), seq);
      await this.journal.settleStep(state.turn.id, step);
    };
    // The model reads the full results for the rest of this turn; the journal keeps the capped ones.
    state.transcript.push({ seq, turnId: state.turn.id, kind: 'tool', message: toolMessage(fullOutputs) });
    const previous = state.pendingSettle;
    state.pendingSettle = async () => {
      await previous?.();
      await write();
    };
    this.options.checkpoint?.({ at: 'step-settled', turnId: state.turn.id, step });
  }

  // ---- tools ----------------------------------------------------------------------------

  private idempotencyKey(turnId: string, step: number, ordinal: number): string {
    return createHash('sha256').update(`${this.options.agentId}\n${turnId}\n${step}\n${ordinal}`).digest('hex').slice(0, 32);
  }

  /** Runs a step's calls in parallel; returns 'suspended' when some wait for the host. */
  private async runStepCalls(state: TurnState, calls: CallRecord[], decisions?: ReadonlyMap<string, ApprovalDecision>) {
    const waiting: string[] = [];
    await Promise.all(
      calls.map(async (call) => {
        if (call.status === 'done' || call.status === 'settled') return;
        const entry = this.tools.get(call.toolName);
        if (!entry) {
          await this.recordResult(state, call, errorOutput(`There is no tool named ${call.toolName}.`));
          return;
        }
        const decision = await this.approve(state, call, entry.tool, decisions);
        if (decision === 'waiting') {
          waiting.push(call.callId);
          return;
        }
        if (decision && !decision.approved) {
          const reason = decision.reason ?? 'The host denied this call.';
          await this.recordResult(state, call, { type: 'execution-denied', reason });
          state.emit({ type: 'tool-output-denied', toolCallId: call.callId, toolName: call.toolName, reason });
          state.results.push({ toolCallId: call.callId, toolName: call.toolName, input: call.input, output: undefined, error: reason });
          return;
        }
        if (!entry.tool.execute) {
          await this.journal.setCallStatus(call, 'awaiting-result');
          waiting.push(call.callId);
          return;
        }
        await this.execute(state, call, entry, calls.length === 1);
      }),
    );
    return waiting.length > 0 ? 'suspended' : 'complete';
  }

  private async approve(
    state: TurnState,
    call: CallRecord,
    tool: Tool,
    decisions: ReadonlyMap<string, ApprovalDecision> | undefined,
  ): Promise<ApprovalDecision | 'waiting' | undefined> {
    if (call.approval) return { approvalId: call.callId, ...call.approval };
    if (!needsApproval(tool, this.options.permissionMode)) return undefined;
    const given = decisions?.get(call.callId);
    if (given) {
      await this.journal.recordApproval(call, { approved: given.approved, ...(given.reason ? { reason: given.reason } : {}) });
      return given;
    }
    const request: ApprovalRequest = {
      approvalId: call.callId,
      toolCallId: call.callId,
      toolName: call.toolName,
      input: call.input,
    };
    state.emit({ type: 'tool-approval-request', ...request });
    if (!state.hooks.onApprovalRequest) {
      await this.journal.setCallStatus(call, 'awaiting-approval');
      return 'waiting';
    }
    const answer = await state.hooks.onApprovalRequest(request);
    await this.journal.recordApproval(call, answer);
    this.logger.info('approval', { tool: call.toolName, approved: answer.approved });
    return { approvalId: call.callId, ...answer };
  }

  /**
   * Runs one call. Only an unsafe tool needs the `started` mark committed before it runs (the
   * evidence that it may have had an effect); a read-only or idempotent call found without a
   * result is simply run again. A lone call's result is written with the step's settlement;
   * parallel calls record theirs as they finish, so one slow call cannot hold the others hostage.
   */
  private async execute(
    state: TurnState,
    call: CallRecord,
    entry: { tool: Tool; schema: NormalizedSchema },
    alone: boolean,
  ): Promise<void> {
    const { tool, schema } = entry;
    state.toolsRan += 1;
    await this.inLedgerOrder(state, async () => {
      if (tool.effect === 'unsafe') await this.journal.setCallStatus(call, 'started');
      this.options.checkpoint?.({ at: 'tool-started', turnId: state.turn.id, step: call.step, toolName: tool.name, callId: call.callId });
    });
    // The speaking tool is a visible action by definition, whatever the tool itself declares.
    const speech = this.options.speech;
    if (tool.visible || (speech.mode === 'tool' && tool.name === speech.tool)) state.visibleActions += 1;
    const started = performance.now();
    const outcome = await state.telemetry.toolRun({ toolCallId: call.callId, toolName: tool.name, input: call.input }, () => runTool(tool, schema, call.input, {
      toolCallId: call.callId,
      sessionId: state.sessionId,
      idempotencyKey: this.idempotencyKey(state.turn.id, call.step, call.ordinal),
      earlierCalls: async () =>
        (await this.journal.turnCalls(state.turn.id))
          .filter((earlier) => earlier.step < call.step || (earlier.step === call.step && earlier.ordinal < call.ordinal))
          .map(({ toolName, input }) => ({ toolName, input })),
      abortSignal: state.hooks.abortSignal ?? new AbortController().signal,
      logger: this.logger,
      onFileChange: (change) => state.emit({ type: 'file-change', toolCallId: call.callId, toolName: tool.name, ...change }),
    }));
    const output = outcome.ok
      ? toToolResultOutput(outcome.output, {
          vision: this.options.model.vision,
          // Said loudly: the model never sees this image, only a line saying it was there.
          onImageDescribed: (mediaType) => this.logger.info('image described', { tool: tool.name, media_type: mediaType, reason: 'the model reads text only' }),
        })
      : errorOutput(outcome.error);
    await this.inLedgerOrder(state, async () => {
      await this.recordResult(state, call, output, alone && tool.effect !== 'unsafe');
      this.options.checkpoint?.({ at: 'tool-finished', turnId: state.turn.id, step: call.step, toolName: tool.name, callId: call.callId });
    });
    const duration = logSeconds(performance.now() - started);
    if (outcome.ok) {
      this.logger.info('tool', { name: tool.name, duration, outcome: 'ok' });
      state.emit({ type: 'tool-result', toolCallId: call.callId, toolName: tool.name, input: call.input, output: outcome.output });
      state.results.push({ toolCallId: call.callId, toolName: tool.name, input: call.input, output: outcome.output });
    } else {
      this.logger.warn('tool', { name: tool.name, duration, outcome: 'error', error: outcome.error });
      state.emit({ type: 'tool-error', toolCallId: call.callId, toolName: tool.name, input: call.input, error: outcome.error });
      state.results.push({ toolCallId: call.callId, toolName: tool.name, input: call.input, output: undefined, error: outcome.error });
    }
  }

  /**
   * Runs one ledger write of a call (and its checkpoint) after those of the step's calls that got
   * there first. However long a store takes to write, what the journal holds at any instant is a
   * prefix of one order (c1 started, c2 started, c1 finished, ...): recovery by evidence, and the
   * crash suite's numbered checkpoints, then mean the same on every store.
   */
  private inLedgerOrder(state: TurnState, write: () => Promise<void>): Promise<void> {
    const turn = state.ledger.then(write);
    state.ledger = turn.catch(() => {});
    return turn;
  }

  /**
   * Brings the newest unsettled step of a resumed turn to rest, by evidence:
   * a call that never started runs now; a call that started and has no result runs again only
   * when its tool is read-only or idempotent, otherwise the model is told the outcome is unknown.
   */
  private async settleOpenStep(state: TurnState, input: ContinueInput): Promise<'settled' | 'suspended' | 'none'> {
    const open = await this.journal.openCalls(state.turn.id);
    if (open.length === 0) return 'none';
    const step = open[0]!.step;
    const supplied = new Map((input.toolResults ?? []).map((r) => [r.toolCallId, r.output]));
    for (const call of open) {
      if (call.status === 'started') {
        const tool = this.tools.get(call.toolName)?.tool;
        const safe = tool && (tool.effect === 'read-only' || tool.effect === 'idempotent');
        if (safe) {
          this.logger.info('recovery re-run', { tool: call.toolName, call: call.callId, effect: tool.effect });
          await this.journal.setCallStatus(call, 'pending');
          call.status = 'pending';
        } else {
          this.logger.warn('recovery outcome unknown', { tool: call.toolName, call: call.callId });
          await this.recordResult(
            state,
            call,
            errorOutput(
              `The process running this turn stopped while ${call.toolName} was executing. Whether it took effect is unknown; ` +
                'it was not run again because it is not safe to repeat. Check its effect before you retry it.',
            ),
          );
        }
      } else if (call.status === 'awaiting-result' && supplied.has(call.callId)) {
        await this.recordResult(state, call, toToolResultOutput(supplied.get(call.callId), { vision: this.options.model.vision }));
      } else if (call.status === 'awaiting-approval' || call.status === 'awaiting-result') {
        await this.journal.setCallStatus(call, 'pending');
        call.status = 'pending';
      }
    }
    const decisions = new Map((input.approvals ?? []).map((d) => [d.approvalId, d]));
    const outcome = await this.runStepCalls(state, open, decisions);
    if (outcome === 'suspended') return 'suspended';
    this.settleStep(state, step, open);
    return 'settled';
  }

  // ---- endings --------------------------------------------------------------------------

  private async throwIfAborted(state: TurnState): Promise<void> {
    if (state.hooks.abortSignal?.aborted) throw await this.abortTurn(state);
  }

  private async abortTurn(state: TurnState): Promise<TurnAbortedError> {
    // Calls that never got a result are settled as cancelled so the transcript stays well-formed.
    await this.commit(state);
    const open = await this.journal.openCalls(state.turn.id);
    for (const call of open) {
      if (call.status !== 'done' && !state.outputs.has(call.callId)) {
        await this.recordResult(state, call, errorOutput('Cancelled by the user before it ran.'));
      }
    }
    if (open.length > 0) this.settleStep(state, open[0]!.step, open);
    await this.commit(state, () => this.journal.updateTurn(state.turn.id, { status: 'cancelled', steps: state.step }));
    this.logger.info('turn end', { session: state.sessionId, turn: state.turn.id, outcome: 'cancelled' });
    state.emit({ type: 'abort' });
    return new TurnAbortedError();
  }

  private async failTurn(state: TurnState, error: unknown): Promise<void> {
    await this.commit(state, () =>
      this.journal.updateTurn(state.turn.id, { status: 'failed', error: `[turn failed: ${errorMessage(error)}]` }),
    );
    // A bookend like the others (INFO): the error itself reaches the caller, who reports it once.
    this.logger.info('turn end', {
      session: state.sessionId,
      turn: state.turn.id,
      outcome: 'error',
      steps: `${state.step}/${this.options.maxSteps}`,
      error: errorMessage(error),
    });
  }

  private async observe(state: TurnState, text: string, unspoken: boolean): Promise<void> {
    if (!this.options.memory) return;
    await safeObserve(
      this.options.memory,
      {
        agentId: this.options.agentId,
        sessionId: state.sessionId,
        prompt: state.prompt,
        text,
        unspoken,
        toolCalls: state.calls.map((call) => ({ name: call.toolName, input: call.input })),
      },
      this.logger,
    );
  }

  private async maybeCompact(state: TurnState): Promise<void> {
    if (!this.budget.enabled || state.lastInputTokens === undefined) return;
    if (state.lastInputTokens <= this.budget.compactAt) return;
    await this.compact(state, { hard: false, inputTokens: state.lastInputTokens, trigger: 'threshold' });
  }

  private async compact(
    state: TurnState,
    options: { hard: boolean; inputTokens: number | undefined; trigger: CompactionReport['trigger'] },
  ): Promise<CompactionOutcome> {
    await this.commit(state); // compaction reads the journal: write any waiting settlement first
    const outcome = await this.compactJournal(state.sessionId, { ...options, abortSignal: state.hooks.abortSignal });
    const report = compactionReport(outcome, options.trigger);
    if (report) state.emit({ type: 'compaction', ...report });
    return outcome;
  }

  /**
   * Compacts a session now, between turns (a caller's `compact()`): the same rewrite a turn makes
   * past the threshold, keeping the recent window. Safe with a suspended turn: a cut lands only
   * before a user turn, so the unfinished turn's messages stay whole. Says why when it declined.
   */
  async compactNow(sessionId: string, options: { abortSignal?: AbortSignal | undefined } = {}): Promise<CompactionReport | { compacted: false; reason: string }> {
    const outcome = await this.compactJournal(sessionId, { hard: false, inputTokens: undefined, abortSignal: options.abortSignal });
    return compactionReport(outcome, 'manual') ?? { compacted: false, reason: outcome.reason ?? 'declined' };
  }

  private compactJournal(
    sessionId: string,
    options: { hard: boolean; inputTokens: number | undefined; abortSignal: AbortSignal | undefined },
  ): Promise<CompactionOutcome> {
    return compactSession({
      journal: this.journal,
      sessionId,
      model: this.options.model,
      params: this.options.params,
      budget: this.budget,
      hard: options.hard,
      ...(this.options.memory ? { memory: this.options.memory } : {}),
      logger: this.logger,
      now: this.now(),
      inputTokens: options.inputTokens,
      abortSignal: options.abortSignal,
    });
  }
}

// ---- helpers ----------------------------------------------------------------------------

function compactionReport(outcome: CompactionOutcome, trigger: CompactionReport['trigger']): CompactionReport | undefined {
  if (!outcome.compacted) return undefined;
  return {
    trigger,
    summary: outcome.summary ?? '',
    tokensBefore: outcome.tokensBefore,
    tokensAfter: outcome.tokensAfter,
    before: outcome.messagesBefore,
    after: outcome.messagesAfter,
    summarized: outcome.summarized,
  };
}


function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function normalizeFinish(reason: string): FinishReason {
  return (['stop', 'length', 'content-filter', 'tool-calls', 'error'] as const).includes(reason as never)
    ? (reason as FinishReason)
    : 'other';
}

export function textOf(message: ModelMessage): string {
  if (typeof message.content === 'string') return message.content;
  return (message.content as Array<{ type: string; text?: string }>)
    .filter((part) => part.type === 'text')
    .map((part) => part.text ?? '')
    .join('');
}

/**
 * How many calls of the turn ran, derived from evidence rather than a counter: every call of a
 * settled step (its result is in a tool message), and the open step's calls that started or
 * finished.
 */
function toolsRanIn(transcript: readonly Entry[], turnId: string, open: readonly CallRecord[]): number {
  let ran = open.filter((call) => call.status === 'started' || call.status === 'done').length;
  for (const entry of transcript) {
    if (entry.turnId === turnId && entry.kind === 'tool' && Array.isArray(entry.message.content)) {
      ran += entry.message.content.filter((part) => part.type === 'tool-result').length;
    }
  }
  return ran;
}

/** Whether an assistant message names calls acx runs (a provider-executed call already ran on the provider's side). */
export function hasToolCalls(message: ModelMessage): boolean {
  return (
    message.role === 'assistant' &&
    Array.isArray(message.content) &&
    message.content.some((part) => part.type === 'tool-call' && !part.providerExecuted)
  );
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
