import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PausableDeadline } from '../../src/util/deadline.ts';

/** A time limit that stands still while paused (faked timers: no real time passes). */
describe('PausableDeadline', () => {
  beforeEach(() => void vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] }));
  afterEach(() => void vi.useRealTimers());

  it('aborts its signal when the limit is reached, not counting the time it was paused', () => {
    const deadline = new PausableDeadline(100);
    vi.advanceTimersByTime(60);
    deadline.pause();
    vi.advanceTimersByTime(10_000);
    expect([deadline.expired, deadline.signal.aborted]).toEqual([false, false]);
    deadline.resume();
    vi.advanceTimersByTime(39);
    expect(deadline.expired).toBe(false);
    vi.advanceTimersByTime(1);
    expect([deadline.expired, deadline.signal.aborted]).toEqual([true, true]);
  });

  it('nested pauses hold the clock until the last resumes; clear() disarms it for good', () => {
    const deadline = new PausableDeadline(50);
    deadline.pause();
    deadline.pause();
    deadline.resume();
    vi.advanceTimersByTime(1_000);
    expect(deadline.expired).toBe(false);
    deadline.resume();
    vi.advanceTimersByTime(50);
    expect(deadline.expired).toBe(true);
    const cleared = new PausableDeadline(10);
    cleared.clear();
    cleared.resume();
    vi.advanceTimersByTime(1_000);
    expect(cleared.expired).toBe(false);
  });
});
