import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildLazySchemas, isOwnSchema, lazySchema } from '../../src/core/lazy-schema.ts';

describe('lazySchema', () => {
  it('builds nothing until asked, then always hands out the same schema', () => {
    let builds = 0;
    const input = lazySchema(() => {
      builds++;
      return z.object({ path: z.string() });
    });
    expect(builds).toBe(0);
    const first = input();
    expect(input()).toBe(first);
    expect(builds).toBe(1);
    expect(isOwnSchema(first)).toBe(true);
  });

  it('buildLazySchemas builds every one made so far: the objects their tools then carry', () => {
    let builds = 0;
    const input = lazySchema(() => {
      builds++;
      return z.object({ query: z.string() });
    });
    const built = buildLazySchemas();
    expect(builds).toBe(1);
    expect(built).toContain(input());
    expect(builds).toBe(1);
  });
});
