import { randomUUID } from 'node:crypto';
import type { ModelMessage } from 'ai';
import { AcxError, GuardrailTrippedError } from '../core/errors.ts';
import type { JournalStore } from '../store/journal-store.ts';
import type { TurnRecord } from '../store/journal.ts';
import { abandonTurn } from './closing.ts';
import { compactNow } from './compaction-triggers.ts';
import type { ContextBudget } from './context-budget.ts';
import { createEngineContext, type EngineContext, type ResolvedEngineOptions } from './engine-context.ts';
import type { CompactionReport } from './events.ts';
import { drive } from './loop.ts';
import { continueTurn, rerunTurn } from './recovery.ts';
import { newState, traced } from './turn-state.ts';
import type { ContinueInput, EngineOptions, TurnInput, TurnResult } from './turn-types.ts';

/**
 * The native engine: a think → act loop over any AI SDK LanguageModel, one model call per step,
 * the engine (not the SDK) running tools, everything journaled as it happens.
 *
 * This class is the façade; each job is a module of its own:
 *   loop.ts                 the steps of a turn (drive), the final text, the step budget's reserve
 *   persistence.ts          the journal writes, and the durability rules they keep
 *   recovery.ts             continuing an unfinished turn by evidence, a turn id delivered again
 *   approvals.ts            approvals and suspending a turn
 *   calls.ts                running a step's calls: ledger order, idempotency keys
 *   compaction-triggers.ts  when a session is compacted (compaction.ts: how)
 *   retries.ts              model-call retries and the context-overflow rescue (faults.ts: fault kinds)
 *   endings.ts              a turn that is done, cancelled or failed
 *   closing.ts              a turn given up from outside (abandonTurn), its open calls answered
 *   turn-state.ts           one turn's state in this process; engine-context.ts: the engine's
 */
export { DEFAULT_MAX_STEPS } from './caps.ts';
export { DEFAULT_RETRIES } from './caps.ts';
export { pendingOf, suspendReasonOf } from './approvals.ts';
export { hasToolCalls, textOf } from './transcript.ts';
export type {
  ApprovalDecision,
  Checkpoint,
  ContinueInput,
  EngineMemory,
  EngineOptions,
  SuspendReason,
  TurnHooks,
  TurnInput,
  TurnResult,
  TurnToolCall,
} from './turn-types.ts';

export class Engine {
  readonly options: ResolvedEngineOptions;
  readonly journal: JournalStore;
  readonly budget: ContextBudget;
  private readonly context: EngineContext;

  constructor(options: EngineOptions) {
    this.context = createEngineContext(options);
    this.options = this.context.options;
    this.journal = this.context.journal;
    this.budget = this.context.budget;
  }

  async hasUnfinishedTurn(sessionId: string): Promise<boolean> {
    return (await this.journal.unfinishedTurn(sessionId)) !== undefined;
  }

  /**
   * Gives up a running or suspended turn for good (its caller set its message aside): its open
   * calls are answered saying so, the turn stays in the journal as cancelled, saying why, and no
   * longer holds back the session's next turn. False when the session has no such turn unfinished.
   */
  abandonTurn(sessionId: string, turnId: string, reason: string): Promise<boolean> {
    return abandonTurn(this.context, sessionId, turnId, reason);
  }

  /** Runs one turn for a new user message. An unfinished earlier turn must be continued first. */
  async runTurn(input: TurnInput): Promise<TurnResult> {
    const { sessionId } = input;
    const { journal } = this;
    const { turn: existing, unfinished } = input.turnId
      ? await journal.turnAndUnfinished(input.turnId, sessionId)
      : { turn: undefined, unfinished: await journal.unfinishedTurn(sessionId) };
    if (existing) return rerunTurn(this.context, existing, input);
    if (unfinished) {
      throw new AcxError('turn-unfinished', `Session ${sessionId} has an unfinished turn (${unfinished.id}).`, {
        hint: 'Continue it first (continueTurn / acx run resumes it automatically).',
      });
    }
    await this.checkInput(input);
    const turnId = input.turnId ?? randomUUID();
    const message: ModelMessage = { role: 'user', content: input.prompt };
    // The session (if new), the turn and its message are one commit: a turn on record always has
    // the message it answers. On PostgreSQL that is one round trip, and the turn is not read back.
    const turn = await journal.transaction(async () => {
      await journal.ensureSession(sessionId);
      return journal.startTurn(turnId, sessionId, message);
    });
    this.options.checkpoint?.({ at: 'turn-started', turnId });
    const state = await newState(this.context, turn, input, {
      addressed: input.addressed ?? false,
      resumed: false,
    });
    return traced(this.context, state, () => drive(this.context, state));
  }

  /**
   * The input guardrails on a new message, before anything of it is journaled: a message that
   * trips one never reaches the model, nor the transcript a later turn's model reads.
   */
  private async checkInput(input: TurnInput): Promise<void> {
    const trip = await this.options.guards?.checkInput({ sessionId: input.sessionId, prompt: input.prompt });
    if (!trip) return;
    this.context.logger.warn('guardrail tripped', { session: input.sessionId, kind: trip.kind, guardrail: trip.guardrail, reason: trip.reason });
    throw new GuardrailTrippedError(trip);
  }

  /** Continues a session's unfinished turn by evidence: what the journal shows already happened. */
  continueTurn(input: ContinueInput): Promise<TurnResult> {
    return continueTurn(this.context, input);
  }

  /** Compacts a session between turns (see compaction-triggers.ts, compactNow). */
  compactNow(sessionId: string, options: { abortSignal?: AbortSignal | undefined } = {}): Promise<CompactionReport | { compacted: false; reason: string }> {
    return compactNow(this.context, sessionId, options);
  }
}
