import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryInputError } from '../../src/memory/keys.ts';
import { openMemoryStore, type MemoryStore } from '../../src/memory/store.ts';
import {
  createAddMemoryTool,
  createMemoryTools,
  createSearchMemoryTool,
  summaryKey,
} from '../../src/memory/tools.ts';
import { normalizeSchema } from '../../src/tools/schema.ts';
import type { Tool, ToolContext } from '../../src/tools/tool.ts';
import { silentLogger } from '../../src/util/logger.ts';

let dir: string;
let store: MemoryStore;
let tools: Map<string, Tool>;

const ctx: ToolContext = {
  toolCallId: 'call-1',
  sessionId: 's1',
  idempotencyKey: 'k1',
  abortSignal: new AbortController().signal,
  logger: silentLogger,
};

async function run(name: string, input: unknown): Promise<string> {
  const tool = tools.get(name)!;
  const output = await tool.execute!(input, ctx);
  expect(typeof output).toBe('string');
  return output as string;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'acx-memory-tools-'));
  store = openMemoryStore(join(dir, 'memory.db'));
  tools = new Map(
    [...createMemoryTools(store), createAddMemoryTool(store), createSearchMemoryTool(store)].map((t) => [t.name, t]),
  );
});

afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('memory tools', () => {
  it('declare kinds and effects that permission modes and crash recovery rely on', () => {
    const shape = Object.fromEntries([...tools.values()].map((t) => [t.name, [t.kind, t.effect, [...t.capabilityScopes]]]));
    expect(shape).toEqual({
      memory_write: ['edit', 'idempotent', ['memory.write']],
      memory_read: ['read', 'read-only', ['memory.read']],
      memory_list: ['read', 'read-only', ['memory.read']],
      memory_search: ['read', 'read-only', ['search', 'memory.read']],
      memory_delete: ['edit', 'idempotent', ['memory.write']],
      add_memory: ['edit', 'idempotent', ['memory.write']],
      search_memory: ['read', 'read-only', ['search', 'memory.read']],
    });
  });

  it('write, read, list, search and delete, in model-readable text', async () => {
    expect(await run('memory_write', { key: 'home_city', value: 'Dallas, Texas' })).toBe('Saved "home_city".');
    expect(await run('memory_write', { key: 'home_city', value: 'Dallas, Texas, USA' })).toMatch(/^Updated "home_city" \(first saved /);
    expect(await run('memory_read', { key: 'home_city' })).toMatch(/^home_city \(saved .*\):\nDallas, Texas, USA$/);
    await run('memory_write', { key: 'projects/acx/owner', value: 'Ada' });
    expect(await run('memory_list', {})).toBe('2 memories:\nhome_city: Dallas, Texas, USA\nprojects/acx/owner: Ada');
    expect(await run('memory_list', { prefix: 'projects/' })).toBe('1 memories under "projects/":\nprojects/acx/owner: Ada');
    expect(await run('memory_list', { limit: 1 })).toBe('2 memories; the first 1:\nhome_city: Dallas, Texas, USA');
    expect(await run('memory_list', { prefix: 'zzz' })).toBe('No memories under "zzz".');
    expect(await run('memory_search', { query: 'texas' })).toBe('Memories matching "texas":\nhome_city: Dallas, Texas, USA');
    expect(await run('memory_search', { query: 'NEAR("unbalanced' })).toMatch(/^No memories match/);
    expect(await run('memory_delete', { key: 'home_city' })).toBe('Deleted "home_city".');
    expect(await run('memory_delete', { key: 'home_city' })).toBe('Nothing to delete: no memory under "home_city".');
  });

  it('a read miss is an ordinary result that names the nearest keys', async () => {
    expect(await run('memory_read', { key: 'anything' })).toBe('No memory under "anything": the memory is empty.');
    await run('memory_write', { key: 'home_city', value: 'Dallas' });
    await run('memory_write', { key: 'work_city', value: 'Austin' });
    expect(await run('memory_read', { key: 'home_town' })).toBe('No memory under "home_town". Nearest existing keys: home_city, work_city.');
  });

  it('reject malformed input with a clear error and write nothing', async () => {
    await expect(run('memory_write', { key: 'home city', value: 'Dallas' })).rejects.toThrow(/Try "home_city"/);
    await expect(run('memory_write', { key: 'home_city' })).rejects.toThrow(MemoryInputError);
    await expect(run('memory_write', { key: 'home_city', value: '' })).rejects.toThrow(/value/);
    await expect(run('memory_search', { query: '' })).rejects.toThrow(/Invalid input for memory_search: query/);
    await expect(run('memory_list', { limit: 0 })).rejects.toThrow(/limit/);
    await expect(run('memory_read', {})).rejects.toThrow(/key/);
    await expect(run('memory_read', null)).rejects.toThrow(/key/);
    expect(store.count()).toBe(0);
  });

  it('long values are previewed in lists and shown whole by read', async () => {
    const long = `start ${'word '.repeat(400)}end`;
    await run('memory_write', { key: 'essay', value: long });
    const listed = await run('memory_list', {});
    expect(listed).toContain('more chars; memory_read for all');
    expect(listed.length).toBeLessThan(400);
    expect(await run('memory_read', { key: 'essay' })).toContain(long);
  });
});

describe('contract-shaped tools', () => {
  it('advertise schemas that accept the cartridge contract shapes', () => {
    const add = normalizeSchema(tools.get('add_memory')!.inputSchema).jsonSchema as { required: string[]; properties: Record<string, { type: string }> };
    expect(add.required).toEqual(['summary']);
    expect(add.properties.summary!.type).toBe('string');
    const search = normalizeSchema(tools.get('search_memory')!.inputSchema).jsonSchema as { required: string[]; properties: Record<string, { type: string }> };
    expect(search.required).toEqual(['query']);
    expect(search.properties.query!.type).toBe('string');
  });

  it('add_memory appends under a derived key, idempotently, and search_memory finds it', async () => {
    const summary = 'The user lives in Dallas, Texas and works on acx.';
    const first = await run('add_memory', { summary });
    const key = summaryKey(summary);
    expect(key).toMatch(/^notes\/the-user-lives-in-dallas_-texas-[0-9a-f]{8}$/);
    expect(first).toBe(`Saved as "${key}".`);
    expect(await run('add_memory', { summary })).toBe(`Already remembered; updated "${key}".`);
    expect(store.count()).toBe(1);
    await run('add_memory', { summary: 'Deploys happen on Fridays.', key: 'deploy_day' });
    expect(store.read('deploy_day').value).toBe('Deploys happen on Fridays.');
    expect(await run('search_memory', { query: 'where does the user live?' })).toContain(`${key}: ${summary}`);
    await expect(run('add_memory', {})).rejects.toThrow(/summary/);
  });

  it('summaryKey survives text with no ASCII words', () => {
    expect(summaryKey('東京に住んでいる')).toMatch(/^notes\/[0-9a-f]{8}$/);
    expect(summaryKey('a/b: c.d')).toMatch(/^notes\/a-b-c-d-[0-9a-f]{8}$/);
  });
});
