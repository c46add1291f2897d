import type { LogFields, Logger } from '../../core/logger.ts';

/**
 * Read-speed pacing: before answering a peer AI's message, wait as long as a person would take to
 * read it (minus the time it has already waited), then take in whatever arrived meanwhile. It
 * keeps an AI-to-AI exchange readable and well under the breaker's trip line. People's messages
 * are answered at once. One rule for both kinds of wake: a session wake paces its inbox, a
 * timeline wake the unseen messages it reads from the platform.
 */
export interface PacingSettings {
  /** Off turns off both loops: the read-speed wait and the rebuild for late messages. */
  enabled: boolean;
  charsPerSecond: number;
  floorMs: number;
  /**
   * Loop 2, for every sender: when messages arrive while a batch's turn is generating, the turn
   * is built again with them folded in, up to this many builds in all (the last one stands). A
   * build that called a tool is never rebuilt: its effects are real. 1 turns rebuilding off.
   */
  maxBuilds: number;
}

export const DEFAULT_PACING: PacingSettings = { enabled: true, charsPerSecond: 17, floorMs: 20_000, maxBuilds: 3 };

/** How many times pacing restarts its read on a newer AI message before it answers anyway. */
const MAX_SETTLE_ROUNDS = 5;

/** What pacing needs to know of one message. */
export interface PacedMessage {
  /** Identifies it: a newer message is one with another id at the end of the list. */
  id: string;
  /** A peer AI wrote it (not a person; the agent's own messages never reach pacing). */
  fromPeerAi: boolean;
  text: string;
  /** When it was written or received, ms since the epoch: the time already waited counts. */
  at: number;
}

export interface ReadPacing<T> {
  pacing: PacingSettings;
  logger: Logger;
  /** Who is paced, first on the log line (`session=…` or `timeline=…`). */
  fields: LogFields;
  /** The log field that names the message read (`event` for a session, `message` for a timeline). */
  idField: string;
  describe: (item: T) => PacedMessage;
  /** The messages to answer again, oldest first: called after each wait to fold in what arrived. */
  reread: () => Promise<readonly T[]> | readonly T[];
  /** For tests: the clock and the wait. */
  now?: (() => number) | undefined;
  sleep?: ((ms: number) => Promise<void>) | undefined;
}

/**
 * Loop 1 of read-speed pacing: while the newest message to answer is a peer AI's, wait out the
 * rest of its reading time (its length at the reading speed, never under the floor), then look
 * again; a newer message restarts the read on it. Returns the messages as last read.
 */
export async function readAtHumanSpeed<T>(items: readonly T[], options: ReadPacing<T>): Promise<readonly T[]> {
  const { pacing } = options;
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  let current = items;
  for (let round = 0; pacing.enabled && round < MAX_SETTLE_ROUNDS && current.length > 0; round++) {
    const newest = options.describe(current.at(-1)!);
    if (!newest.fromPeerAi) break;
    const readMs = Math.max(pacing.floorMs, (newest.text.length / pacing.charsPerSecond) * 1000);
    const owed = readMs - (now() - newest.at);
    if (owed <= 0) break;
    options.logger.info('wake pacing', { ...options.fields, [options.idField]: newest.id, read: `${(readMs / 1000).toFixed(1)}s`, wait: `${(owed / 1000).toFixed(1)}s` });
    await sleep(owed);
    const again = await options.reread();
    const newestAgain = again.at(-1);
    current = again;
    if (newestAgain === undefined || options.describe(newestAgain).id === newest.id) break;
  }
  return current;
}
