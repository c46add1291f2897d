import { afterEach, expect, it } from 'vitest';
import { scaled, testTimeScale } from './time-scale.ts';

const saved = process.env.ACX_TEST_TIME_SCALE;
afterEach(() => {
  if (saved === undefined) delete process.env.ACX_TEST_TIME_SCALE;
  else process.env.ACX_TEST_TIME_SCALE = saved;
});

it('durations are as written unless ACX_TEST_TIME_SCALE stretches them', () => {
  delete process.env.ACX_TEST_TIME_SCALE;
  expect([testTimeScale(), scaled(400)]).toEqual([1, 400]);
  process.env.ACX_TEST_TIME_SCALE = '';
  expect(scaled(400)).toBe(400);
  process.env.ACX_TEST_TIME_SCALE = '2.5';
  expect([testTimeScale(), scaled(400), scaled(3)]).toEqual([2.5, 1000, 8]);
});

it('a scale that is not a number of at least 1 is refused, naming the variable and the value', () => {
  for (const bad of ['0.5', '0', '-2', 'fast', 'Infinity']) {
    process.env.ACX_TEST_TIME_SCALE = bad;
    expect(() => scaled(400), bad).toThrow(`ACX_TEST_TIME_SCALE must be a number of at least 1 (how many times slower than usual this machine runs), not "${bad}".`);
  }
});
