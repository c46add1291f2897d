import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createSqliteMemoryProvider,
  formatExchange,
  safeContext,
  safeObserve,
  type MemoryExchange,
  type MemoryProvider,
} from '../../src/memory/provider.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';

let dir: string;
let path: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'acx-memory-provider-'));
  path = join(dir, 'home', 'memory.db');
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function exchange(overrides: Partial<MemoryExchange>): MemoryExchange {
  return { agentId: 'ada', sessionId: 's1', prompt: '', text: '', unspoken: true, toolCalls: [], ...overrides };
}

describe('sqlite memory provider', () => {
  it('recalls a fact told in one session from another session, after a restart', async () => {
    const first = createSqliteMemoryProvider({ path });
    expect(first.name).toBe('sqlite');
    await first.observe(
      exchange({
        sessionId: 'github:pr-123',
        prompt: 'I shipped the retry fix on PR #123.',
        text: 'Noted: the retry fix shipped.',
        toolCalls: [{ name: 'messages', input: { text: 'Congrats on the retry fix!' } }],
      }),
    );
    await first.observe(exchange({ sessionId: 'github:pr-123', prompt: 'My home city is Dallas, Texas.' }));
    await first.close();

    const second = createSqliteMemoryProvider({ path });
    try {
      const recalled = await second.context({ agentId: 'ada', sessionId: 'timeline:abc', query: 'What did you ship?' });
      expect(recalled).toBeDefined();
      expect(recalled).toMatch(/^Relevant memories/);
      expect(recalled).toContain('retry fix');
      expect(recalled).toContain('observed/github_pr-123/');
      expect(recalled).not.toContain('Dallas');

      const city = await second.context({ agentId: 'ada', sessionId: 'timeline:abc', query: 'Which city is home?' });
      expect(city).toContain('Dallas, Texas');
    } finally {
      await second.close();
    }
  });

  it('stores unspoken narration and tool calls, scrubbed of credentials', async () => {
    const provider = createSqliteMemoryProvider({ path });
    try {
      await provider.observe(
        exchange({
          prompt: 'deploy with token sk-ant-abcdefghijklmnopqrstuvwxyz123456 as AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
          text: 'I decided to wait for the nightly build.',
          toolCalls: [{ name: 'tasks', input: { title: 'nightly build check' } }],
        }),
      );
      const [record] = await provider.store.list({ prefix: 'observed/s1/' });
      expect(record).toBeDefined();
      expect(record!.value).toContain('Agent (unspoken): I decided to wait for the nightly build.');
      expect(record!.value).toContain('tasks({"title":"nightly build check"})');
      expect(record!.value).toContain('User: deploy with token [REDACTED] as [REDACTED] [REDACTED]');
      expect(record!.source).toBe('session:s1');
      expect(record!.tags).toEqual(['observed', 'agent:ada']);
    } finally {
      await provider.close();
    }
  });

  it('injects nothing when nothing matches, for stopword-only prompts, and for its own session', async () => {
    const provider = createSqliteMemoryProvider({ path });
    try {
      expect(await provider.context({ agentId: 'ada', sessionId: 's9', query: 'anything at all' })).toBeUndefined();
      await provider.observe(exchange({ sessionId: 's1', prompt: 'The launch code word is pineapple.' }));
      expect(await provider.context({ agentId: 'ada', sessionId: 's2', query: 'what did you do?' })).toBeUndefined();
      expect(await provider.context({ agentId: 'ada', sessionId: 's1', query: 'pineapple' })).toBeUndefined();
      expect(await provider.context({ agentId: 'ada', sessionId: 's2', query: 'pineapple' })).toContain('pineapple');
      // An empty exchange records nothing.
      await provider.observe(exchange({ sessionId: 's3' }));
      expect(await provider.store.count('observed/s3/')).toBe(0);
    } finally {
      await provider.close();
    }
  });

  it('remember() writes a keyed record the tools and context can find', async () => {
    const provider = createSqliteMemoryProvider({ path });
    try {
      await provider.remember('compaction/s1/1', 'Summary: we agreed to migrate the billing service to Postgres.');
      await expect(provider.remember('bad key', 'x')).rejects.toThrow(/not valid/);
      expect((await provider.store.read('compaction/s1/1')).source).toBe('engine');
      expect(await provider.context({ agentId: 'ada', sessionId: 's2', query: 'billing database?' })).toContain('Postgres');
      const search = provider.tools().find((t) => t.name === 'memory_search')!;
      expect(await search.execute!({ query: 'postgres' }, {} as never)).toContain('compaction/s1/1');
    } finally {
      await provider.close();
    }
  });

  it('opens its file lazily: listing tools creates nothing', async () => {
    const provider = createSqliteMemoryProvider({ path });
    expect(provider.tools().map((t) => t.name)).toEqual(['memory_write', 'memory_read', 'memory_list', 'memory_search', 'memory_delete']);
    expect(Object.keys(provider.roleTools())).toEqual(['acx:memory.write', 'acx:search']);
    expect(existsSync(path)).toBe(false);
    await provider.close();
  });

  it('observe can be turned off', async () => {
    const provider = createSqliteMemoryProvider({ path, observe: false });
    await provider.observe(exchange({ prompt: 'remember this' }));
    expect(await provider.store.count()).toBe(0);
    await provider.close();
  });

  it('formatExchange bounds long input', () => {
    const text = formatExchange(
      exchange({
        prompt: 'p'.repeat(10_000),
        toolCalls: Array.from({ length: 15 }, (_, i) => ({ name: `t${i}`, input: { x: 'y'.repeat(1000) } })),
      }),
    )!;
    expect(text.length).toBeLessThan(8000);
    expect(text).toContain('… 5 more');
  });
});

describe('safe wrappers', () => {
  function failing(overrides: Partial<MemoryProvider>): MemoryProvider {
    return {
      name: 'broken',
      tools: () => [],
      observe: async () => {
        throw new Error('disk on fire');
      },
      context: async () => {
        throw new Error('index corrupt');
      },
      remember: async () => undefined,
      close: () => undefined,
      ...overrides,
    };
  }

  it('log a failed observe as a WARNING and swallow it', async () => {
    const logger = createMemoryLogger();
    await expect(safeObserve(failing({}), exchange({ prompt: 'secret plans' }), logger)).resolves.toBeUndefined();
    expect(logger.lines).toHaveLength(1);
    expect(logger.lines[0]).toMatch(/^WARNING memory\.observe_failed provider=broken session=s1 error="disk on fire"$/);
    expect(logger.lines[0]).not.toContain('secret plans');
  });

  it('turn a failed, synchronous-throwing, hanging or non-text context into no injection', async () => {
    const logger = createMemoryLogger();
    const scope = { agentId: 'ada', sessionId: 's1', query: 'q' };
    expect(await safeContext(failing({}), scope, logger)).toBeUndefined();
    const sync = failing({
      context: (() => {
        throw new Error('sync boom');
      }) as never,
    });
    expect(await safeContext(sync, scope, logger)).toBeUndefined();
    const hanging = failing({ context: () => new Promise(() => undefined) });
    expect(await safeContext(hanging, scope, logger, { timeoutMs: 20 })).toBeUndefined();
    const numeric = failing({ context: async () => 42 as never });
    expect(await safeContext(numeric, scope, logger)).toBeUndefined();
    const blank = failing({ context: async () => '   ' });
    expect(await safeContext(blank, scope, logger)).toBeUndefined();
    expect(logger.lines.map((line) => line.split(' ').slice(0, 2).join(' '))).toEqual([
      'WARNING memory.context_failed',
      'WARNING memory.context_failed',
      'WARNING memory.context_failed',
      'WARNING memory.context_invalid',
    ]);
    expect(logger.lines[2]).toContain('no answer within 20 ms');
  });

  it('pass a working provider through untouched', async () => {
    const logger = createMemoryLogger();
    const provider = createSqliteMemoryProvider({ path, logger });
    try {
      await safeObserve(provider, exchange({ sessionId: 'a', prompt: 'Ada prefers tea over coffee.' }), logger);
      expect(await safeContext(provider, { agentId: 'ada', sessionId: 'b', query: 'tea or coffee?' }, logger)).toContain('prefers tea');
      expect(logger.lines.filter((l) => l.startsWith('WARNING'))).toEqual([]);
    } finally {
      await provider.close();
    }
  });

  it('a closed provider fails its hooks, and the wrappers absorb that', async () => {
    const logger = createMemoryLogger();
    const provider = createSqliteMemoryProvider({ path });
    await provider.close();
    await safeObserve(provider, exchange({ prompt: 'x' }), logger);
    expect(await safeContext(provider, { agentId: 'ada', sessionId: 's', query: 'x' }, logger)).toBeUndefined();
    expect(logger.lines).toHaveLength(2);
  });
});
