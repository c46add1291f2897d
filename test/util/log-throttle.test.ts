// The log throttle on an injected clock and scheduler: a flood of one line writes the first few,
// then one line per window with the count it left out; other events keep their own windows.
import { describe, expect, it } from 'vitest';
import { createLogThrottle } from '../../src/util/log-throttle.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';

function setUp() {
  const logger = createMemoryLogger('debug');
  let clock = 1_000_000;
  const due: Array<{ at: number; task: () => void; cancelled: boolean }> = [];
  const throttle = createLogThrottle(logger, {
    burst: 3,
    windowMs: 60_000,
    now: () => clock,
    schedule: (task, ms) => {
      const entry = { at: clock + ms, task, cancelled: false };
      due.push(entry);
      return () => void (entry.cancelled = true);
    },
  });
  /** Moves the clock on and runs the timers that have come due, as the event loop would. */
  const advance = (ms: number) => {
    clock += ms;
    for (const entry of due.splice(0)) {
      if (entry.cancelled) continue;
      if (entry.at <= clock) entry.task();
      else due.push(entry);
    }
  };
  return { logger, throttle, advance, due };
}

describe('createLogThrottle', () => {
  it('writes the first lines of a window, then one line with how many it suppressed when the window closes', () => {
    const { logger, throttle, advance } = setUp();
    for (let i = 1; i <= 1000; i++) throttle.log('warn', 'router delivery refused', { n: i });
    expect(logger.lines).toEqual(['WARNING router delivery refused n=1', 'WARNING router delivery refused n=2', 'WARNING router delivery refused n=3']);
    advance(59_999);
    expect(logger.lines).toHaveLength(3);
    advance(1);
    expect(logger.lines.slice(3)).toEqual(['WARNING router delivery refused suppressed=997 window=60.00s']);
    // The next line opens a new window: written again.
    throttle.log('warn', 'router delivery refused', { n: 1001 });
    expect(logger.lines.slice(4)).toEqual(['WARNING router delivery refused n=1001']);
  });

  it('a line after the window closed reports the count first when no timer ran', () => {
    const { logger, throttle, advance, due } = setUp();
    for (let i = 1; i <= 5; i++) throttle.log('warn', 'refused', { n: i });
    due.length = 0; // the timer never fires (e.g. the process was busy): the next line still settles the count
    advance(61_000);
    throttle.log('warn', 'refused', { n: 6 });
    expect(logger.lines).toEqual(['WARNING refused n=1', 'WARNING refused n=2', 'WARNING refused n=3', 'WARNING refused suppressed=2 window=60.00s', 'WARNING refused n=6']);
  });

  it('counts each event on its own and writes no summary for a window that suppressed nothing', () => {
    const { logger, throttle, advance } = setUp();
    for (let i = 0; i < 4; i++) throttle.log('warn', 'a', {});
    throttle.log('info', 'b', {});
    advance(60_000);
    expect(logger.lines).toEqual(['WARNING a', 'WARNING a', 'WARNING a', 'INFO b', 'WARNING a suppressed=1 window=60.00s']);
  });

  it('flush writes the pending counts at once (shutdown) and each count only once', () => {
    const { logger, throttle, advance, due } = setUp();
    for (let i = 0; i < 10; i++) throttle.log('warn', 'a', {});
    throttle.flush();
    expect(logger.lines.at(-1)).toBe('WARNING a suppressed=7 window=60.00s');
    expect(due.filter((entry) => !entry.cancelled)).toEqual([]); // no timer left behind
    advance(60_000);
    throttle.flush();
    expect(logger.lines.filter((line) => line.includes('suppressed='))).toEqual(['WARNING a suppressed=7 window=60.00s']);
  });
});
