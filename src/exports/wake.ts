/**
 * `acx/wake` — an agent woken once per event: `wake()` records the event, takes the session's
 * lease, answers every pending event in order (batched, paced, behind a circuit breaker) and is
 * safe to deliver twice or to kill at any moment; `openWakeStore` opens its inbox (`WakeStore`):
 * the SQLite file in the agent's state directory, or PostgreSQL given a postgres:// URL;
 * `createLogger` makes the logger it writes its `wake start` / `wake end` lines to.
 */
import '../node-guard.ts';
export { wake, turnIdFor, DEFAULT_BREAKER, DEFAULT_PACING, DEFAULT_MAX_ATTEMPTS } from '../frontends/wake/session.ts';
export type { PacingSettings, WakeOptions, WakeOutcome } from '../frontends/wake/session.ts';
export { openWakeStore, wakeStorePath } from '../store/open-wake-store.ts';
export type { OpenWakeStoreOptions } from '../store/open-wake-store.ts';
export { SqliteWakeStore } from '../store/sqlite-wake-store.ts';
export type { BreakerSettings, InboxItem, WakeEvent, WakeStore } from '../store/wake-store.ts';
// What a caller must hand wake() besides the agent and the store: a logger for its bookend lines.
export { createLogger } from '../util/logger.ts';
export type { CreateLoggerOptions, LogFields, Logger, LogLevel } from '../util/logger.ts';
