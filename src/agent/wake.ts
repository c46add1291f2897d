import { createHash } from 'node:crypto';
import type { TurnResult } from '../engine/engine.ts';
import type { ApprovalRequest } from '../engine/events.ts';
import { type BreakerSettings, currentHolder, type InboxItem, type WakeEvent, type WakeStore } from '../store/wake-store.ts';
import { errorMessage } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import type { HarnessAgent } from './harness-agent.ts';

/**
 * Wake mode: one process per event. The event is recorded before anything else, the session's
 * pending events are answered in order, and the process exits. An event is done only once its
 * turn completed; a wake that dies mid-turn leaves it pending, and the next wake finishes the
 * same turn by evidence (its turn id is derived from the event), so nothing is lost and no side
 * effect runs twice. A live wake's lease is never taken over, and a circuit breaker caps how
 * often one session may be woken.
 */
export interface WakeOptions {
  agent: HarnessAgent;
  store: WakeStore;
  sessionId: string;
  /** The event that caused this wake; absent to answer only what is pending. */
  event?: WakeEvent | undefined;
  breaker: BreakerSettings;
  /** Attempts an event gets before it is set aside as failed (default 3). */
  maxAttempts?: number;
  /** Correlation id from the router that ran this wake; rides both bookend log lines. */
  deliveryId?: string | undefined;
  logger: Logger;
  /** Called with each answered event before it is marked done. */
  onReply?: (item: InboxItem, result: TurnResult) => void | Promise<void>;
  /** Wake mode has no one to ask: tool approvals are answered by this (default: deny, saying why). */
  onApprovalRequest?: (request: ApprovalRequest) => Promise<{ approved: boolean; reason?: string }>;
}

export type WakeOutcome =
  | { outcome: 'answered' | 'nothing-new'; answered: number; failedEvents: string[] }
  | { outcome: 'busy'; answered: 0; failedEvents: [] }
  | { outcome: 'declined'; answered: 0; failedEvents: [] };

export const DEFAULT_BREAKER: BreakerSettings = { max: 10, windowMs: 60_000, cooldownMs: 60_000 };
const DEFAULT_MAX_ATTEMPTS = 3;

/** The engine turn that answers an event: the same event always maps to the same turn. */
export function turnIdFor(sessionId: string, eventId: string): string {
  return `wake-${createHash('sha256').update(`${sessionId}\n${eventId}`).digest('hex').slice(0, 32)}`;
}

export async function wake(options: WakeOptions): Promise<WakeOutcome> {
  const { store, sessionId, event, logger } = options;
  const started = performance.now();
  const delivery = options.deliveryId ? { delivery: options.deliveryId } : {};
  const admission = store.admit(sessionId, event, options.breaker);
  logger.info('wake start', { session: sessionId, event: event?.id, new_event: event ? admission.eventIsNew : undefined, ...delivery });

  if (admission.kind === 'declined') {
    logger.warn('wake declined', {
      session: sessionId,
      reason: 'circuit breaker tripped',
      wakes: admission.wakesInWindow,
      max: options.breaker.max,
      window: `${options.breaker.windowMs / 1000}s`,
      note: 'the event is kept and answered by the first wake after the breaker resets',
      ...delivery,
    });
    return { outcome: 'declined', answered: 0, failedEvents: [] };
  }
  if (admission.kind === 'busy') {
    logger.info('wake end', { session: sessionId, outcome: 'busy', holder_pid: admission.holder.pid, ...delivery });
    return { outcome: 'busy', answered: 0, failedEvents: [] };
  }

  const holder = currentHolder();
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  const onApprovalRequest =
    options.onApprovalRequest ??
    (async (request: ApprovalRequest) => ({
      approved: false,
      reason: `Wake mode is non-interactive and ${request.toolName} needs approval; the operator can allow it with a wider permission mode.`,
    }));
  let answered = 0;
  const failedEvents: string[] = [];
  let steps = 0;
  try {
    const session = await options.agent.createSession({ sessionId });
    for (;;) {
      const item = store.nextPending(sessionId);
      if (!item) {
        if (store.release(sessionId, holder)) break;
        continue; // an event arrived while we were answering: its wake saw our lease
      }
      const attempt = store.markAttempt(sessionId, item.eventId);
      let result: TurnResult;
      try {
        result = await options.agent.generate({
          session,
          prompt: item.text,
          turnId: turnIdFor(sessionId, item.eventId),
          addressed: true,
          onApprovalRequest,
        });
      } catch (error) {
        store.recordError(sessionId, item.eventId, errorMessage(error));
        if (attempt < maxAttempts) throw error;
        logger.error('wake event failed', { session: sessionId, event: item.eventId, attempts: attempt, error: errorMessage(error) });
        store.markFailed(sessionId, item.eventId, errorMessage(error));
        failedEvents.push(item.eventId);
        continue;
      }
      await options.onReply?.(item, result);
      store.markDone(sessionId, item.eventId, result.text);
      answered += 1;
      steps += result.steps;
    }
  } catch (error) {
    store.abandon(sessionId, holder);
    logger.error('wake end', {
      session: sessionId,
      outcome: 'error',
      answered,
      error: errorMessage(error),
      note: 'pending events stay in the inbox for the next wake',
      duration: `${((performance.now() - started) / 1000).toFixed(2)}s`,
      ...delivery,
    });
    throw error;
  }
  const outcome = answered > 0 ? 'answered' : 'nothing-new';
  logger.info('wake end', {
    session: sessionId,
    outcome,
    turns: answered,
    steps,
    failed: failedEvents.length || undefined,
    duration: `${((performance.now() - started) / 1000).toFixed(2)}s`,
    ...delivery,
  });
  return { outcome, answered, failedEvents };
}
