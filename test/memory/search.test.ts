// What search returns once a memory is large enough that some words are in most records: a rare
// word's exact match comes first however old it is, a rare word decides a query it shares with
// common ones, and a query of common words only returns the newest records holding the most of
// them. (How fast: bench/memory-search.ts.)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RANK_BUDGET } from '../../src/memory/search.ts';
import { openMemoryStore, type MemoryStore } from '../../src/memory/store.ts';
import { scaled } from '../support/time-scale.ts';

/** Enough records that `deploy` (in every log) and `service` (in every other log) are too common to rank by. */
const LOGS = 2 * RANK_BUDGET + 4000;

let dir: string;
let store: MemoryStore;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'acx-memory-search-'));
  store = openMemoryStore(join(dir, 'memory.db'));
  // The oldest record: the only short one about Ada Lovelace.
  store.write('people/ada', 'Ada Lovelace wrote the first program');
  const essays = Array.from({ length: 30 }, (_, i) => ({
    key: `essays/${i}`,
    value: `An essay on engines, looms, punched cards and the history of computing machines, number ${i}, which mentions Lovelace once among many other names and places.`,
  }));
  store.writeMany(essays);
  const logs = Array.from({ length: LOGS }, (_, i) => ({
    key: `log/${i}`,
    value: `routine deploy of the ${i % 2 === 0 ? 'service' : 'batch job'}, run ${i}`,
    source: i >= LOGS - 5 ? 'session:now' : 'tool',
  }));
  logs.splice(LOGS / 2, 0, { key: 'log/kraken', value: 'routine deploy of the kraken', source: 'tool' });
  store.writeMany(logs);
}, scaled(120_000));

afterAll(() => {
  store?.close();
  rmSync(dir, { recursive: true, force: true });
});

const keys = (hits: { key: string }[]) => hits.map((hit) => hit.key);
const newestLogs = (count: number, step = 1, from = LOGS - 1) => Array.from({ length: count }, (_, i) => `log/${from - i * step}`);

describe('search in a large memory', () => {
  it("puts a rare word's exact match first, however old, and ranks the longer mentions after it", () => {
    const hits = store.search('lovelace', { limit: 31 });
    expect(hits[0]!.key).toBe('people/ada');
    expect(keys(hits).slice(1).sort()).toEqual(Array.from({ length: 30 }, (_, i) => `essays/${i}`).sort());
    expect(keys(store.search('Ada Lovelace', { limit: 1 }))).toEqual(['people/ada']);
    expect(keys(store.search('lovelace', { prefix: 'essays/', limit: 3 }))).toHaveLength(3);
    expect(store.search('lovelace', { prefix: 'essays/' }).every((hit) => hit.key.startsWith('essays/'))).toBe(true);
  });

  it('lets the rare word decide a query it shares with words found in every record', () => {
    expect(store.searchPlan('deploy kraken')).toMatchObject({ strategy: 'ranked', terms: [{ text: 'kraken' }] });
    expect(store.search('deploy kraken')[0]!.key).toBe('log/kraken');
    expect(keys(store.search('routine deploy lovelace', { limit: 1 }))).toEqual(['people/ada']);
  });

  it('answers a word found in most records with the newest records holding it', () => {
    expect(store.searchPlan('deploy').strategy).toBe('recent');
    const hits = store.search('deploy');
    expect(keys(hits)).toEqual(newestLogs(10));
    expect(hits.every((hit) => hit.score === -1)).toBe(true);
  });

  it('answers common words only with the records holding the most of them, newest first', () => {
    expect(store.searchPlan('deploy service').strategy).toBe('recent');
    const hits = store.search('deploy service', { limit: 5 });
    // log/<LOGS-1> (a batch job) is newer, but holds one of the two words.
    expect(keys(hits)).toEqual(newestLogs(5, 2, LOGS - 2));
    expect(hits.every((hit) => hit.score === -2)).toBe(true);
  });

  it('applies the source and key filters to common-word results', () => {
    expect(keys(store.search('routine deploy', { limit: 3, excludeSource: 'session:now' }))).toEqual(newestLogs(3, 1, LOGS - 6));
    expect(store.search('deploy', { prefix: 'essays/' })).toEqual([]);
  });
});
