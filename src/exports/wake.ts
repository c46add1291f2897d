/**
 * `acx/wake` — an agent woken once per event: `wake()` records the event, takes the session's
 * lease, answers every pending event in order (batched, paced, behind a circuit breaker) and is
 * safe to deliver twice or to kill at any moment; `WakeStore` is its SQLite inbox.
 */
import '../node-guard.ts';
export { wake, turnIdFor, DEFAULT_BREAKER, DEFAULT_PACING, DEFAULT_MAX_ATTEMPTS } from '../frontends/wake/session.ts';
export type { PacingSettings, WakeOptions, WakeOutcome } from '../frontends/wake/session.ts';
export { WakeStore, wakeStorePath } from '../store/wake-store.ts';
export type { BreakerSettings, InboxItem, WakeEvent } from '../store/wake-store.ts';
