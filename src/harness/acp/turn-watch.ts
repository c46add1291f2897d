import { errorMessage } from '../../core/errors.ts';
import type { TurnRecord } from '../../store/journal.ts';
import type { Logger } from '../../util/logger.ts';
import type { TurnDriver } from './turn-driver.ts';
import type { TurnJournal } from './turn-journal.ts';

/**
 * Watching a turn in the journal for what another process does to it. Processes share nothing
 * but the journal, so each side reads it every WATCH_EVERY_MS:
 *   - the process holding a paused turn (its agent waiting with a request open) learns that the
 *     turn was claimed and answered elsewhere, or that its hold ran out (holdPausedTurn);
 *   - the process that answered waits for the holder to finish the turn — or to die, and then
 *     takes the turn up itself (awaitTurnElsewhere).
 */

export const WATCH_EVERY_MS = 250;

export interface PausedHold {
  stop(): void;
}

/**
 * Keeps watching a paused turn: `answered` when another session object claimed it (its answers
 * are in the journal) or ended it, `expired` when it is still unclaimed after `holdMs`.
 */
export function holdPausedTurn(
  journal: TurnJournal,
  turnId: string,
  options: { holdMs: number; log: Logger; answered: (turn: TurnRecord) => void; expired: () => void },
): PausedHold {
  const until = performance.now() + options.holdMs;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const check = async () => {
    const turn = await journal.turn(turnId).catch((error: unknown) => {
      options.log.warn('acp paused turn not read', { turn: turnId, reason: errorMessage(error) });
      return 'unread' as const;
    });
    if (stopped) return;
    if (turn === 'unread' || turn?.status === 'suspended') {
      if (performance.now() < until) return schedule();
      stopped = true;
      return options.expired();
    }
    stopped = true;
    if (turn) options.answered(turn);
  };
  const schedule = () => {
    timer = setTimeout(() => void check(), Math.min(WATCH_EVERY_MS, Math.max(0, until - performance.now())));
    timer.unref();
  };
  schedule();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

/**
 * Waits while another session object drives the claimed turn: its record once it is no longer
 * running (done, failed, cancelled, or suspended again), or `driver-gone` when it is still running
 * and its driver is not alive any more.
 */
export async function awaitTurnElsewhere(journal: TurnJournal, driver: TurnDriver, turnId: string, signal: AbortSignal | undefined): Promise<TurnRecord | 'driver-gone'> {
  for (;;) {
    signal?.throwIfAborted();
    // The driver first: a driver that finished the turn wrote its end before it let go.
    const live = (await driver.elsewhere())?.turnId === turnId;
    const turn = await journal.turn(turnId);
    if (!turn) throw new Error(`Turn ${turnId} is no longer in the journal.`);
    if (turn.status !== 'running') return turn;
    if (!live) return 'driver-gone';
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, WATCH_EVERY_MS);
      signal?.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });
  }
}
