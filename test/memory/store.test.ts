import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, userVersion } from '../../src/store/database.ts';
import { MemoryInputError } from '../../src/memory/keys.ts';
import { RANK_WINDOW } from '../../src/memory/search.ts';
import { MEMORY_MIGRATIONS, MemoryNotFoundError, openMemoryStore, type MemoryStore } from '../../src/memory/store.ts';

let dir: string;
let path: string;
let store: MemoryStore;
let clock: number;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'acx-memory-store-'));
  path = join(dir, 'memory.db');
  clock = Date.parse('2025-03-01T10:00:00.000Z');
  store = openMemoryStore(path, { now: () => new Date(clock) });
});

afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('MemoryStore write/read', () => {
  it('upserts and keeps created_at on update', () => {
    const first = store.write('home_city', 'Austin, Texas');
    expect(first.created).toBe(true);
    clock += 60_000;
    const second = store.write('home_city', 'Dallas, Texas');
    expect(second.created).toBe(false);
    expect(second.record).toMatchObject({
      key: 'home_city',
      value: 'Dallas, Texas',
      createdAt: '2025-03-01T10:00:00.000Z',
      updatedAt: '2025-03-01T10:01:00.000Z',
    });
    expect(store.read('home_city').value).toBe('Dallas, Texas');
    expect(store.count()).toBe(1);
  });

  it('keeps tags and source across an overwrite that does not name them', () => {
    store.write('pet', 'a cat', { tags: ['animal'], source: 'tool' });
    store.write('pet', 'a cat named Miso');
    expect(store.read('pet')).toMatchObject({ tags: ['animal'], source: 'tool', value: 'a cat named Miso' });
  });

  it('a miss names the nearest existing keys first', () => {
    for (const key of ['home_city', 'home_country', 'work_city', 'favourite_food', 'zebra']) store.write(key, `value of ${key}`);
    let error: unknown;
    try {
      store.read('home_citty');
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(MemoryNotFoundError);
    const miss = error as MemoryNotFoundError;
    expect(miss.code).toBe('memory-not-found');
    expect(miss.suggestions[0]).toBe('home_city');
    expect(miss.message).toContain('home_city');
    expect(miss.hint).toBeTruthy();
  });

  it('a malformed guess still gets suggestions, and an empty store says so', () => {
    expect(() => store.read('home_city')).toThrow(/memory is empty/);
    store.write('home_city', 'Dallas');
    expect(() => store.read('home city')).toThrow(/Nearest existing keys: home_city/);
  });

  it('bounds suggestions in a large store and still finds the near key', () => {
    const entries = [];
    for (let i = 0; i < 6000; i++) entries.push({ key: `notes/item-${i}`, value: `note number ${i}` });
    entries.push({ key: 'projects/acx/owner', value: 'Ada' });
    store.writeMany(entries);
    let error: MemoryNotFoundError | undefined;
    try {
      store.read('projects/acx/owners');
    } catch (caught) {
      error = caught as MemoryNotFoundError;
    }
    expect(error?.suggestions[0]).toBe('projects/acx/owner');
    expect(error!.suggestions.length).toBeLessThanOrEqual(10);
    expect(error!.message).toContain('6001 keys in all');
  });

  it('rejects bad keys and values with a hint, writing nothing', () => {
    expect(() => store.write('home city', 'Dallas')).toThrow(MemoryInputError);
    try {
      store.write('home city', 'Dallas');
    } catch (error) {
      expect((error as MemoryInputError).hint).toContain('home_city');
    }
    expect(() => store.write('', 'x')).toThrow(/key is required/);
    expect(() => store.write('/abs', 'x')).toThrow(MemoryInputError);
    expect(() => store.write('k'.repeat(201), 'x')).toThrow(/limit is 200/);
    expect(() => store.write('empty', '   ')).toThrow(/empty/);
    expect(() => store.writeMany([{ key: 'ok', value: 'fine' }, { key: 'bad key', value: 'x' }])).toThrow(MemoryInputError);
    expect(store.count()).toBe(0);
  });
});

describe('MemoryStore list/delete/search', () => {
  beforeEach(() => {
    store.write('home_city', 'Dallas, Texas');
    store.write('projects/acx/owner', 'Ada Lovelace maintains the harness');
    store.write('projects/acx/language', 'TypeScript on Node 24');
    store.write('pr/123', 'I shipped the retry fix on PR #123');
  });

  it('lists in key order, by prefix, with a limit', () => {
    expect(store.list().map((r) => r.key)).toEqual(['home_city', 'pr/123', 'projects/acx/language', 'projects/acx/owner']);
    expect(store.list({ prefix: 'projects/' }).map((r) => r.key)).toEqual(['projects/acx/language', 'projects/acx/owner']);
    expect(store.list({ limit: 1 }).map((r) => r.key)).toEqual(['home_city']);
    expect(store.list({ prefix: 'nothing/' })).toEqual([]);
    expect(store.count('projects/')).toBe(2);
    expect(() => store.list({ prefix: 'bad prefix' })).toThrow(MemoryInputError);
  });

  it('deletes, idempotently, and the index forgets the record', () => {
    expect(store.search('texas').map((h) => h.key)).toEqual(['home_city']);
    expect(store.delete('home_city')).toBe(true);
    expect(store.delete('home_city')).toBe(false);
    expect(store.get('home_city')).toBeUndefined();
    expect(store.search('texas')).toEqual([]);
  });

  it('searches values and keys, with stemming, ranked', () => {
    expect(store.search('texas').map((h) => h.key)).toEqual(['home_city']);
    // a key-only word
    expect(store.search('owner').map((h) => h.key)).toEqual(['projects/acx/owner']);
    // "ship" finds "shipped"
    expect(store.search('what did you ship?').map((h) => h.key)).toEqual(['pr/123']);
    // more matching terms rank first
    const hits = store.search('acx typescript');
    expect(hits[0]!.key).toBe('projects/acx/language');
    expect(hits.map((h) => h.key)).toContain('projects/acx/owner');
    expect(store.search('acx', { limit: 1 })).toHaveLength(1);
    expect(store.search('acx', { prefix: 'pr/' })).toEqual([]);
    expect(store.search('Lovel*').map((h) => h.key)).toEqual(['projects/acx/owner']);
  });

  it('stays ranked and bounded when a term matches more records than the ranking window', () => {
    const entries = [];
    for (let i = 0; i < RANK_WINDOW + 500; i++) entries.push({ key: `log/${i}`, value: `routine deploy number ${i}` });
    store.writeMany(entries);
    store.write('log/special', 'routine deploy of the kraken service');
    // The rare word decides, whatever the common one matches.
    expect(store.search('deploy kraken')[0]!.key).toBe('log/special');
    // Only common words: the newest RANK_WINDOW matches are ranked, best first.
    const hits = store.search('routine deploy', { limit: 3 });
    expect(hits).toHaveLength(3);
    for (const hit of hits) expect(Number(hit.key.slice('log/'.length))).toBeGreaterThanOrEqual(500);
    expect(hits[0]!.score).toBeLessThanOrEqual(hits[2]!.score);
  });

  it('re-indexes a record whose value changed', () => {
    store.write('home_city', 'Paris, France');
    expect(store.search('texas')).toEqual([]);
    expect(store.search('paris').map((h) => h.key)).toEqual(['home_city']);
    const check = store.database.prepare("INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)");
    expect(() => check.run()).not.toThrow();
  });

  it('never throws on hostile FTS syntax', () => {
    const hostile = [
      '',
      '   ',
      '"',
      '""',
      '"unbalanced',
      'texas"',
      "it's",
      'AND',
      'OR',
      'NOT',
      'texas AND',
      'OR texas OR',
      'NOT texas',
      'NEAR(texas dallas, 2)',
      'NEAR(',
      '*',
      '**',
      '*texas',
      'tex*',
      'key:texas',
      'value : dallas',
      ':',
      '(',
      ')',
      '((texas)',
      'texas)',
      '^texas',
      '+texas -dallas',
      '{key value}: texas',
      'a\u0000b',
      '🙂 émoji ünïcode',
      '%_\\',
      "'; DROP TABLE memories; --",
      'x'.repeat(5000),
      Array.from({ length: 200 }, (_, i) => `w${i}`).join(' '),
    ];
    for (const query of hostile) {
      expect(() => store.search(query), query.slice(0, 40)).not.toThrow();
    }
    expect(store.search('texas"').map((h) => h.key)).toEqual(['home_city']);
    expect(store.search('key:texas').map((h) => h.key)).toEqual(['home_city']);
    expect(store.search('((texas)').map((h) => h.key)).toEqual(['home_city']);
    expect(store.search('')).toEqual([]);
    expect(store.search('***')).toEqual([]);
    expect(store.count()).toBe(4);
  });
});

describe('MemoryStore migrations', () => {
  it('reopens a file at the current version with its records', () => {
    store.write('home_city', 'Dallas, Texas');
    store.close();
    store = openMemoryStore(path);
    expect(userVersion(store.database)).toBe(MEMORY_MIGRATIONS.length);
    expect(store.read('home_city').value).toBe('Dallas, Texas');
    expect(store.search('dallas').map((h) => h.key)).toEqual(['home_city']);
  });

  it('migrates a file written by an older schema forward, keeping its records', () => {
    const oldPath = join(dir, 'old.db');
    const old = openDatabase(oldPath, { migrations: MEMORY_MIGRATIONS.slice(0, 1) });
    old
      .prepare('INSERT INTO memories (key, value, created_at, updated_at) VALUES (?, ?, ?, ?)')
      .run('home_city', 'Dallas, Texas', '2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.000Z');
    expect(userVersion(old)).toBe(1);
    old.close();

    const upgraded = openMemoryStore(oldPath, { now: () => new Date(clock) });
    try {
      expect(userVersion(upgraded.database)).toBe(MEMORY_MIGRATIONS.length);
      expect(upgraded.search('texas').map((h) => h.key)).toEqual(['home_city']);
      const { record } = upgraded.write('home_city', 'Dallas', { source: 'tool' });
      expect(record).toMatchObject({ createdAt: '2024-01-01T00:00:00.000Z', source: 'tool' });
    } finally {
      upgraded.close();
    }
  });

  it('opens a memory a newer acx migrated, and reads, searches and writes it without disturbing what it added', () => {
    // The fixture: this acx's schema plus what a later one might add (a column with a default,
    // a second vector table, an index, a trigger, a second FTS index kept in step by triggers), with
    // records written by that later acx.
    const FUTURE = [
      `ALTER TABLE memories ADD COLUMN importance REAL NOT NULL DEFAULT 0.5;
       CREATE TABLE memory_chunk_vectors (
         memory_id INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
         model TEXT NOT NULL,
         vector BLOB NOT NULL
       );
       CREATE INDEX memories_importance ON memories(importance);
       CREATE TRIGGER memories_chunk_vectors_stale AFTER UPDATE OF value ON memories BEGIN
         DELETE FROM memory_chunk_vectors WHERE memory_id = new.id;
       END;`,
      `CREATE VIRTUAL TABLE memories_trigram USING fts5(value, content = 'memories', content_rowid = 'id', tokenize = 'trigram');
       INSERT INTO memories_trigram(memories_trigram) VALUES ('rebuild');
       CREATE TRIGGER memories_trigram_ai AFTER INSERT ON memories BEGIN
         INSERT INTO memories_trigram(rowid, value) VALUES (new.id, new.value);
       END;
       CREATE TRIGGER memories_trigram_ad AFTER DELETE ON memories BEGIN
         INSERT INTO memories_trigram(memories_trigram, rowid, value) VALUES ('delete', old.id, old.value);
       END;
       CREATE TRIGGER memories_trigram_au AFTER UPDATE OF value ON memories BEGIN
         INSERT INTO memories_trigram(memories_trigram, rowid, value) VALUES ('delete', old.id, old.value);
         INSERT INTO memories_trigram(rowid, value) VALUES (new.id, new.value);
       END;`,
    ];
    const newerSchema = [...MEMORY_MIGRATIONS, ...FUTURE];
    const newerPath = join(dir, 'newer.db');
    const newer = openDatabase(newerPath, { migrations: newerSchema });
    const insert = newer.prepare(
      'INSERT INTO memories (key, value, created_at, updated_at, importance) VALUES (?, ?, ?, ?, ?) RETURNING id',
    );
    const stamp = '2030-01-01T00:00:00.000Z';
    for (const [key, value, importance] of [
      ['home_city', 'Dallas, Texas', 0.9],
      ['pet', 'a cat named Miso', 0.7],
      ['old_job', 'worked at Initech', 0.2],
    ] as const) {
      const { id } = insert.get(key, value, stamp, stamp, importance) as { id: number };
      newer.prepare('INSERT INTO memory_chunk_vectors VALUES (?, ?, ?)').run(id, 'local-hash-128', Buffer.alloc(16, id));
    }
    newer.close();

    const older = openMemoryStore(newerPath, { now: () => new Date(clock) });
    try {
      expect(userVersion(older.database)).toBe(newerSchema.length);
      expect(older.read('home_city')).toMatchObject({ value: 'Dallas, Texas', createdAt: stamp });
      expect(older.search('texas').map((h) => h.key)).toEqual(['home_city']);
      expect(older.list().map((r) => r.key)).toEqual(['home_city', 'old_job', 'pet']);
      older.write('pet', 'a cat named Miso, who likes boxes', { tags: ['animal'] });
      older.write('work_city', 'Austin');
      expect(older.delete('old_job')).toBe(true);
      expect(older.search('boxes').map((h) => h.key)).toEqual(['pet']);
      const check = older.database.prepare("INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)");
      expect(() => check.run()).not.toThrow();
    } finally {
      older.close();
    }

    // Back in the newer acx: its columns kept their values (or took their defaults), its triggers
    // ran on the older acx's writes, its second index is in step.
    const again = openDatabase(newerPath, { migrations: newerSchema });
    try {
      expect(again.prepare('SELECT key, importance FROM memories ORDER BY key').all()).toEqual([
        { key: 'home_city', importance: 0.9 },
        { key: 'pet', importance: 0.7 },
        { key: 'work_city', importance: 0.5 },
      ]);
      // The vector of the rewritten value is stale and gone; the deleted record's cascaded away.
      expect(again.prepare('SELECT m.key FROM memory_chunk_vectors v JOIN memories m ON m.id = v.memory_id').all()).toEqual([{ key: 'home_city' }]);
      expect(again.prepare('SELECT count(*) AS n FROM memory_chunk_vectors').get()).toEqual({ n: 1 });
      expect(again.prepare("SELECT rowid FROM memories_trigram WHERE memories_trigram MATCH 'oxes'").all()).toHaveLength(1);
      expect(again.prepare("SELECT rowid FROM memories_trigram WHERE memories_trigram MATCH 'itech'").all()).toHaveLength(0);
      expect(() => again.prepare("INSERT INTO memories_trigram(memories_trigram, rank) VALUES ('integrity-check', 1)").run()).not.toThrow();
    } finally {
      again.close();
    }
  });
});
