// ACX_LOG_LEVEL takes a name or a number; anything else is refused with what to set, because a
// silent fallback would hide the log trail an operator asked for.
import { describe, expect, it } from 'vitest';
import { parseLogLevel } from '../../src/util/logger.ts';

describe('parseLogLevel', () => {
  it.each([
    [undefined, 'warn'],
    ['', 'warn'],
    ['DEBUG', 'debug'],
    ['info', 'info'],
    ['Warning', 'warn'],
    ['error', 'error'],
    ['critical', 'error'],
    ['10', 'debug'],
    ['20', 'info'],
    ['30', 'warn'],
    ['40', 'error'],
    ['50', 'error'],
  ])('%o reads as %s (default warn)', (value, level) => {
    expect(parseLogLevel(value, 'warn')).toBe(level);
  });

  it('refuses anything else as a usage error that names the variable and the values', () => {
    expect(() => parseLogLevel('loud')).toThrow(/ACX_LOG_LEVEL must be debug, info, warn, error or a number \(10-50\), not "loud"/);
    let caught: unknown;
    try {
      parseLogLevel('-1');
    } catch (error) {
      caught = error;
    }
    expect(caught).toMatchObject({ code: 'usage' });
  });
});
