import type { LogFields, Logger } from '../core/logger.ts';
import { logSeconds } from './duration.ts';

/**
 * Repeated log lines of one kind, bounded. Where a stranger decides how often a line is written
 * (a forged request refused, an unauthorized call), writing each one lets them fill the disk and
 * bury everything else. Per event name, the first `burst` lines within a window are written; the
 * rest are counted, and when the window closes one line of that event says how many were
 * suppressed (`suppressed=N window=60.00s`). The next line after that opens a new window.
 *
 * Windows are kept per event name, so pass only the caller's fixed names (never a value a
 * sender chose), and put the varying parts in the fields.
 */
export interface LogThrottleOptions {
  /** Lines of one event written per window before the rest are counted (default 5). */
  burst?: number;
  /** The window's length (default 60 s). */
  windowMs?: number;
  /** The clock (default Date.now). */
  now?: () => number;
  /** Runs `task` after `ms` and returns what cancels it (default an unref'd setTimeout). */
  schedule?: (task: () => void, ms: number) => () => void;
}

type Level = 'debug' | 'info' | 'warn' | 'error';

export interface LogThrottle {
  log(level: Level, event: string, fields?: LogFields): void;
  /** Writes the summary of every open window that suppressed lines, now (on shutdown). */
  flush(): void;
}

interface Window {
  level: Level;
  start: number;
  written: number;
  suppressed: number;
  cancel?: () => void;
}

export const DEFAULT_LOG_BURST = 5;
export const DEFAULT_LOG_WINDOW_MS = 60_000;

const unrefTimer = (task: () => void, ms: number): (() => void) => {
  const timer = setTimeout(task, ms);
  timer.unref();
  return () => clearTimeout(timer);
};

export function createLogThrottle(logger: Logger, options: LogThrottleOptions = {}): LogThrottle {
  const burst = options.burst ?? DEFAULT_LOG_BURST;
  const windowMs = options.windowMs ?? DEFAULT_LOG_WINDOW_MS;
  const now = options.now ?? Date.now;
  const schedule = options.schedule ?? unrefTimer;
  const windows = new Map<string, Window>();

  const close = (event: string, window: Window) => {
    if (windows.get(event) !== window) return; // already closed, by the timer or by a later line
    windows.delete(event);
    window.cancel?.();
    if (window.suppressed > 0) logger[window.level](event, { suppressed: window.suppressed, window: logSeconds(windowMs) });
  };

  return {
    log(level, event, fields) {
      const at = now();
      let window = windows.get(event);
      if (window && at - window.start >= windowMs) {
        close(event, window);
        window = undefined;
      }
      if (!window) {
        window = { level, start: at, written: 0, suppressed: 0 };
        windows.set(event, window);
      }
      if (window.written < burst) {
        window.written += 1;
        logger[level](event, fields);
        return;
      }
      window.suppressed += 1;
      // The summary is due when the window closes, whether or not another line comes.
      const open = window;
      open.cancel ??= schedule(() => close(event, open), open.start + windowMs - at);
    },
    flush() {
      for (const [event, window] of [...windows]) close(event, window);
    },
  };
}
