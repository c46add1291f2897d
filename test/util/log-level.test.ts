// ACX_LOG_LEVEL takes a name or a number; anything else is refused with what to set, because a
// silent fallback would hide the log trail an operator asked for.
import { describe, expect, it } from 'vitest';
import { createLogger, parseLogLevel, parseLogTime } from '../../src/util/logger.ts';

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

describe('ACX_LOG_TIME', () => {
  it.each([
    [undefined, false],
    ['', false],
    ['0', false],
    ['false', false],
    ['1', true],
    ['TRUE', true],
    ['iso', true],
  ])('%o reads as %s', (value, time) => {
    expect(parseLogTime(value)).toBe(time);
  });

  it('refuses anything else as a usage error that names the variable', () => {
    expect(() => parseLogTime('yes please')).toThrow(/ACX_LOG_TIME must be 1 \(each line starts with its ISO time\) or 0, not "yes please"/);
  });

  it('starts each line, a child logger\'s too, with its ISO time when asked, and only then', () => {
    const lines: string[] = [];
    const sink = { write: (line: string) => lines.push(line) };
    const timed = createLogger({ level: 'info', sink, time: true });
    const before = Date.now();
    timed.info('wake start', { agent: 'lex' });
    timed.child({ wake: 'w1' }).warn('queue error', { error: 'gone' });
    createLogger({ level: 'info', sink }).info('plain');
    const after = Date.now();
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO wake start agent=lex\n$/);
    expect(lines[1]).toMatch(/^\S+Z WARNING queue error wake=w1 error=gone\n$/);
    for (const line of lines.slice(0, 2)) {
      const at = Date.parse(line.split(' ')[0]!);
      expect(at).toBeGreaterThanOrEqual(before - 1);
      expect(at).toBeLessThanOrEqual(after);
    }
    expect(lines[2]).toBe('INFO plain\n');
  });
});
