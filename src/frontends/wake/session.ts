import type { HarnessTurnResult } from '../../harness/harness-results.ts';
import type { ApprovalRequest } from '../../engine/events.ts';
import { type BreakerSettings, currentHolder, type InboxItem, openBatchIn, type WakeEvent, type WakeStore } from '../../store/wake-store.ts';
import { errorMessage, isLeaseLost } from '../../core/errors.ts';
import { nodeCrypto } from '../../util/node-crypto.ts';
import type { Logger } from '../../util/logger.ts';
import type { AgentSession, HarnessAgent } from '../../harness/harness-agent.ts';
import { refuseUnattended, WAKE_APPROVAL_REMEDY } from '../unattended-approvals.ts';
import { DEFAULT_PACING, type PacingSettings, readAtHumanSpeed } from './pacing.ts';

export { DEFAULT_PACING, type PacingSettings };

/**
 * Wake mode: one process per event. The event is recorded before anything else, the session's
 * pending events are answered together in one turn (a batch, fixed before the turn starts), and
 * the process exits. Events are done only once their turn completed; a wake that dies mid-turn
 * leaves them pending, and the next wake finishes the same turn by evidence (its turn id is
 * derived from the batch), so nothing is lost and no side effect runs twice. A live wake's lease
 * is never taken over, a circuit breaker caps how often one session may be woken, a peer AI's
 * message is read at human speed before it is answered, and a message that lands while a turn
 * generates gets the turn built again rather than an answer one turn late.
 */
export interface WakeOptions {
  /**
   * The agent, or how to make it: a function is called only once this wake holds the session's
   * lease, so a duplicate, busy or declined wake never pays for start-up (model client, MCP
   * servers), and an agent that cannot start leaves the event recorded for a later wake.
   */
  agent: HarnessAgent | (() => Promise<HarnessAgent>);
  store: WakeStore;
  sessionId: string;
  /** The event that caused this wake; absent to answer only what is pending. */
  event?: WakeEvent | undefined;
  breaker: BreakerSettings;
  /** Read-speed pacing for peer AIs' messages (default: on, 17 chars/s, 20 s floor). */
  pacing?: PacingSettings | undefined;
  /** Attempts an event gets before it is set aside as failed (default 3). */
  maxAttempts?: number;
  /**
   * The agent's own handle where the events come from: an event whose sender is this handle is
   * the agent's own message routed back, recorded but never answered (no self-conversation).
   */
  selfHandle?: string | undefined;
  /** Correlation id from the router that ran this wake; rides both bookend log lines. */
  deliveryId?: string | undefined;
  /** What the bookend lines name, so a log answers "which model, how many steps of the budget". */
  model?: { provider: string; modelId: string } | undefined;
  maxSteps?: number | undefined;
  logger: Logger;
  /** Called with each answered batch of events (one turn) before they are marked done. */
  onReply?: (items: readonly InboxItem[], result: HarnessTurnResult) => void | Promise<void>;
  /** Wake mode has no one to ask: tool approvals are answered by this (default: deny, saying why). */
  onApprovalRequest?: (request: ApprovalRequest) => Promise<{ approved: boolean; reason?: string }>;
  /** For tests: the clock and the wait pacing uses. */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export type WakeOutcome =
  | { outcome: 'answered' | 'nothing-new'; answered: number; failedEvents: string[] }
  /** The lease was lost mid-wake (PostgreSQL: not renewed within its TTL): another wake answers what is pending. */
  | { outcome: 'lease-lost'; answered: number; failedEvents: string[] }
  | { outcome: 'busy'; answered: 0; failedEvents: [] }
  | { outcome: 'declined'; answered: 0; failedEvents: [] };

export const DEFAULT_BREAKER: BreakerSettings = { max: 10, windowMs: 60_000, cooldownMs: 60_000 };
export const DEFAULT_MAX_ATTEMPTS = 3;

/**
 * The engine turn that answers a build of a batch: the same batch and build always map to the
 * same turn, so a wake that takes it up again continues it by evidence.
 */
export function turnIdFor(sessionId: string, batchId: string, build = 1): string {
  const key = build === 1 ? `${sessionId}\n${batchId}` : `${sessionId}\n${batchId}\n${build}`;
  return `wake-${nodeCrypto().createHash('sha256').update(key).digest('hex').slice(0, 32)}`;
}

const messageLine = (item: InboxItem) => `[${item.receivedAt}] ${item.sender ?? 'unknown'}: ${item.text}`;

/**
 * What the model reads for a batch: a lone message without a sender as it is; otherwise each
 * message on its own line with when it arrived and who wrote it.
 */
export function batchPrompt(items: readonly InboxItem[]): string {
  if (items.length === 1 && !items[0]!.sender) return items[0]!.text;
  const lines = items.map(messageLine);
  return items.length === 1 ? lines[0]! : `${items.length} messages arrived since your last reply:\n\n${lines.join('\n\n')}`;
}

/**
 * What the model reads for a rebuild: the messages that arrived while it was answering, and that
 * the answer it just wrote was not delivered, so it answers everything again.
 */
export function rebuildPrompt(late: readonly InboxItem[]): string {
  const count = late.length === 1 ? 'another message' : `${late.length} more messages`;
  return (
    `While you were answering, ${count} arrived, so nothing from that answer has been delivered. ` +
    `Answer again, taking ${late.length === 1 ? 'it' : 'them'} into account:\n\n${late.map(messageLine).join('\n\n')}`
  );
}

/** The prompt of a batch's current build: the batch itself, or what a rebuild folded in. */
function promptFor(batch: readonly InboxItem[], build: number): string {
  const joined = batch.filter((item) => item.build === build);
  return build === 1 ? batchPrompt(joined) : rebuildPrompt(joined);
}

export async function wake(options: WakeOptions): Promise<WakeOutcome> {
  const { store, sessionId, event, logger } = options;
  const started = performance.now();
  const elapsed = () => `${((performance.now() - started) / 1000).toFixed(2)}s`;
  const delivery = options.deliveryId ? { delivery: options.deliveryId } : {};
  const own = event !== undefined && options.selfHandle !== undefined && event.sender === options.selfHandle;
  const admission = await store.admit(sessionId, event && own ? { ...event, own } : event, options.breaker);
  logger.info('wake start', {
    session: sessionId,
    event: event?.id,
    new_event: event ? admission.eventIsNew : undefined,
    own: own || undefined,
    provider: options.model?.provider,
    model: options.model?.modelId,
    ...delivery,
  });

  const breakerFields = { max: options.breaker.max, window: `${options.breaker.windowMs / 1000}s`, ...delivery };
  if (admission.breaker === 'tripped') {
    // Loud once, when it trips; the wakes it declines afterwards each end with an INFO line.
    logger.warn('wake breaker tripped', { session: sessionId, wakes: admission.wakesInWindow, ...breakerFields, note: 'wakes are declined (their events kept) until it resets' });
  } else if (admission.breaker === 'reset') {
    logger.info('wake breaker reset', { session: sessionId, ...breakerFields });
  }
  if (admission.kind === 'declined') {
    logger.info('wake end', {
      session: sessionId,
      outcome: 'declined',
      reason: 'circuit breaker tripped',
      wakes: admission.wakesInWindow,
      note: 'the event is kept and answered by the first wake after the breaker resets',
      ...breakerFields,
    });
    return { outcome: 'declined', answered: 0, failedEvents: [] };
  }
  if (admission.kind === 'busy') {
    logger.info('wake end', { session: sessionId, outcome: 'busy', holder_pid: admission.holder.pid, ...delivery });
    return { outcome: 'busy', answered: 0, failedEvents: [] };
  }

  const holder = currentHolder();
  // Aborted if the lease lapses while this wake answers (PostgreSQL: not renewed within its TTL):
  // another wake may have taken the session over, so this one stops, even mid-turn, rather than
  // run a second turn of the session beside it.
  const leaseLost = store.leaseLost(sessionId);
  const stopIfLeaseLost = () => {
    if (leaseLost.aborted) throw leaseLost.reason;
  };
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  const onApprovalRequest = options.onApprovalRequest ?? refuseUnattended(logger, { subject: 'a wake', remedy: WAKE_APPROVAL_REMEDY, fields: { session: sessionId, ...delivery } });
  const pacing = options.pacing ?? DEFAULT_PACING;
  let answered = 0;
  let turns = 0;
  let steps = 0;
  let attemptedBatch: string | undefined;
  let attempt = 0;
  const failedEvents: string[] = [];
  // The agent starts only when there is something to answer: a repeated, own or already
  // answered event costs no start-up.
  let opened: { agent: HarnessAgent; session: AgentSession } | undefined;
  const open = async () => {
    if (!opened) {
      const agent = typeof options.agent === 'function' ? await options.agent() : options.agent;
      opened = { agent, session: await agent.createSession({ sessionId }) };
    }
    return opened;
  };
  try {
    for (;;) {
      stopIfLeaseLost();
      const pending = await store.pending(sessionId);
      // A batch an earlier wake fixed and did not finish is answered again as it was.
      let batch = openBatchIn(pending);
      if (!batch) {
        if (pending.length === 0) {
          if (await store.release(sessionId, holder)) break;
          continue; // an event arrived while we were answering: its wake saw our lease
        }
        const settled = await pace(pending, options);
        const batchId = await store.fixBatch(
          sessionId,
          settled.map((item) => item.eventId),
        );
        // What openBatch would now read: none of these was in a batch, and only this wake fixes batches.
        batch = settled.map((item) => ({ ...item, batchId, build: 1 }));
      }
      const batchId = batch[0]!.batchId!;
      const build = Math.max(...batch.map((item) => item.build));
      const ids = batch.map((item) => item.eventId);
      // Started before the attempt is counted: an agent that cannot start is the operator's
      // problem, not the event's, and must not use up its attempts.
      const { agent, session } = await open();
      stopIfLeaseLost();
      // One attempt per wake that takes the batch up, however many builds it takes.
      if (attemptedBatch !== batchId) {
        attempt = await store.markAttempt(sessionId, ids);
        attemptedBatch = batchId;
      }
      let result: HarnessTurnResult;
      try {
        result = await agent.generate({
          session,
          prompt: promptFor(batch, build),
          turnId: turnIdFor(sessionId, batchId, build),
          // A batch calls for a reply if any of its messages does.
          addressed: batch.some((item) => item.addressed),
          onApprovalRequest,
          abortSignal: leaseLost,
        });
      } catch (error) {
        // Stopped for a lost lease: not the events' failure, and the journal holds the turn so far.
        // (The harness's own session lease lost alone: the wake gives its lease back, below.)
        stopIfLeaseLost();
        if (isLeaseLost(error)) throw error;
        await store.recordError(sessionId, ids, errorMessage(error));
        if (attempt < maxAttempts) throw error;
        logger.error('wake event failed', { session: sessionId, event: ids.join(','), attempts: attempt, error: errorMessage(error) });
        await store.markFailed(sessionId, ids, errorMessage(error));
        failedEvents.push(...ids);
        continue;
      }
      turns += 1;
      steps += result.stepCount;
      // Lost as the turn ended: the wake that took over delivers its answer (the turn is done in the journal), not this one.
      stopIfLeaseLost();
      // Loop 2: messages that arrived while this build generated are folded in and the turn is
      // built again, unless it already called a tool (its effects are real) or this build stands.
      const late = pacing.enabled && build < pacing.maxBuilds && !acted(result) ? (await store.pending(sessionId)).filter((item) => item.batchId === null) : [];
      if (late.length > 0) {
        const next = await store.growBatch(
          sessionId,
          batchId,
          late.map((item) => item.eventId),
        );
        logger.info('wake rebuild', { session: sessionId, batch: batchId, build: next, late: late.map((item) => item.eventId).join(','), ...delivery });
        continue;
      }
      await options.onReply?.(batch, result);
      await store.markDone(sessionId, ids, result.text);
      answered += ids.length;
      // Given back at once unless more is pending (release looks, under the session's lock): no
      // batch can be open now, as only this wake, holding the lease, fixes batches.
      stopIfLeaseLost();
      if (await store.release(sessionId, holder)) break;
    }
  } catch (error) {
    if (leaseLost.aborted) {
      // Not released: the session is no longer this wake's, and its batch stays pending for the
      // wake that took it over, which continues the same turn by evidence from the journal.
      logger.warn('wake end', {
        session: sessionId,
        outcome: 'lease-lost',
        answered,
        reason: errorMessage(leaseLost.reason),
        note: 'the turn was stopped; the wake that took the session over answers what is pending',
        turns,
        steps,
        duration: elapsed(),
        ...delivery,
      });
      return { outcome: 'lease-lost', answered, failedEvents };
    }
    await store.abandon(sessionId, holder);
    logger.error('wake end', {
      session: sessionId,
      outcome: 'error',
      answered,
      error: errorMessage(error),
      note: 'pending events stay in the inbox for the next wake',
      turns,
      steps,
      duration: elapsed(),
      ...delivery,
    });
    throw error;
  }
  const outcome = answered > 0 ? 'answered' : 'nothing-new';
  logger.info('wake end', {
    session: sessionId,
    outcome,
    events: answered || undefined,
    turns,
    // A sum over the wake's turns (one per batch, plus rebuilds): it may exceed the per-turn budget.
    steps,
    max_steps: options.maxSteps,
    failed: failedEvents.length || undefined,
    duration: elapsed(),
    ...delivery,
  });
  return { outcome, answered, failedEvents };
}

/** Whether a turn did anything beyond writing text: a tool call, or one still waiting. */
function acted(result: HarnessTurnResult): boolean {
  return result.toolCalls.length > 0 || result.pendingApprovals.length > 0 || result.pendingToolCalls.length > 0;
}

/** Loop 1 of read-speed pacing over the session's inbox: a peer AI's newest message is read first. */
function pace(pending: InboxItem[], options: WakeOptions): Promise<readonly InboxItem[]> {
  return readAtHumanSpeed(pending, {
    pacing: options.pacing ?? DEFAULT_PACING,
    logger: options.logger,
    fields: { session: options.sessionId },
    idField: 'event',
    describe: (item) => ({ id: item.eventId, fromPeerAi: item.senderKind === 'ai', text: item.text, at: Date.parse(item.receivedAt) }),
    reread: () => options.store.pending(options.sessionId),
    now: options.now,
    sleep: options.sleep,
  });
}
