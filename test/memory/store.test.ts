// The memory store's contract, run against both implementations behind MemoryRecords: the SQLite
// file and a real throwaway PostgreSQL cluster (skipped, saying why, when the binaries are not
// installed). The SQLite file's own schema history is tested at the end.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, userVersion } from '../../src/store/database.ts';
import { MemoryInputError } from '../../src/memory/keys.ts';
import { PostgresMemoryRecords } from '../../src/memory/postgres-store.ts';
import { type MemoryRecords, openSqliteMemory, SqliteMemoryRecords } from '../../src/memory/records.ts';
import { RANK_WINDOW } from '../../src/memory/search.ts';
import { MEMORY_MIGRATIONS, MemoryNotFoundError, openMemoryStore, type MemoryStore } from '../../src/memory/store.ts';
import { POSTGRES_SKIP, postgresForSuite } from '../support/postgres.ts';

let dir: string;
let store: MemoryRecords;
let clock: number;
const postgres = postgresForSuite();
let pgUrl = '';
let agents = 0;

// Runs after postgresForSuite's own beforeAll has started the cluster.
beforeAll(() => {
  if (!POSTGRES_SKIP) pgUrl = postgres.database('memory');
});

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'acx-memory-store-'));
  clock = Date.parse('2025-03-01T10:00:00.000Z');
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const now = () => new Date(clock);
// Postgres: one database for the file, a fresh agent per test (agents sharing a database are apart).
const stores: Array<[name: string, open: () => Promise<MemoryRecords>, skip: string]> = [
  ['sqlite', async () => openSqliteMemory(join(dir, 'memory.db'), { now }), ''],
  ['postgres', async () => PostgresMemoryRecords.open(pgUrl, `agent-${++agents}`, { now }), POSTGRES_SKIP],
];

describe.each(stores)('MemoryRecords on %s: write/read', (_name, open, skip) => {
  beforeEach(async (context) => {
    if (skip) context.skip();
    store = await open();
  });
  afterEach(async () => {
    await store?.close();
  });

  it('upserts and keeps created_at on update', async () => {
    const first = await store.write('home_city', 'Austin, Texas');
    expect(first.created).toBe(true);
    clock += 60_000;
    const second = await store.write('home_city', 'Dallas, Texas');
    expect(second.created).toBe(false);
    expect(second.record).toMatchObject({
      key: 'home_city',
      value: 'Dallas, Texas',
      createdAt: '2025-03-01T10:00:00.000Z',
      updatedAt: '2025-03-01T10:01:00.000Z',
    });
    expect((await store.read('home_city')).value).toBe('Dallas, Texas');
    expect(await store.count()).toBe(1);
  });

  it('keeps tags and source across an overwrite that does not name them', async () => {
    await store.write('pet', 'a cat', { tags: ['animal'], source: 'tool' });
    await store.write('pet', 'a cat named Miso');
    expect(await store.read('pet')).toMatchObject({ tags: ['animal'], source: 'tool', value: 'a cat named Miso' });
  });

  it('a miss names the nearest existing keys first', async () => {
    for (const key of ['home_city', 'home_country', 'work_city', 'favourite_food', 'zebra']) await store.write(key, `value of ${key}`);
    let error: unknown;
    try {
      await store.read('home_citty');
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

  it('a malformed guess still gets suggestions, and an empty store says so', async () => {
    await expect(store.read('home_city')).rejects.toThrow(/memory is empty/);
    await store.write('home_city', 'Dallas');
    await expect(store.read('home city')).rejects.toThrow(/Nearest existing keys: home_city/);
  });

  it('bounds suggestions in a large store and still finds the near key', async () => {
    const entries = [];
    for (let i = 0; i < 6000; i++) entries.push({ key: `notes/item-${i}`, value: `note number ${i}` });
    entries.push({ key: 'projects/acx/owner', value: 'Ada' });
    await store.writeMany(entries);
    let error: MemoryNotFoundError | undefined;
    try {
      await store.read('projects/acx/owners');
    } catch (caught) {
      error = caught as MemoryNotFoundError;
    }
    expect(error?.suggestions[0]).toBe('projects/acx/owner');
    expect(error!.suggestions.length).toBeLessThanOrEqual(10);
    expect(error!.message).toContain('6001 keys in all');
  });

  it('rejects bad keys and values with a hint, writing nothing', async () => {
    await expect(store.write('home city', 'Dallas')).rejects.toThrow(MemoryInputError);
    try {
      await store.write('home city', 'Dallas');
    } catch (error) {
      expect((error as MemoryInputError).hint).toContain('home_city');
    }
    await expect(store.write('', 'x')).rejects.toThrow(/key is required/);
    await expect(store.write('/abs', 'x')).rejects.toThrow(MemoryInputError);
    await expect(store.write('k'.repeat(201), 'x')).rejects.toThrow(/limit is 200/);
    await expect(store.write('empty', '   ')).rejects.toThrow(/empty/);
    await expect(store.writeMany([{ key: 'ok', value: 'fine' }, { key: 'bad key', value: 'x' }])).rejects.toThrow(MemoryInputError);
    expect(await store.count()).toBe(0);
  });
});

describe.each(stores)('MemoryRecords on %s: list/delete/search', (_name, open, skip) => {
  beforeEach(async (context) => {
    if (skip) context.skip();
    store = await open();
    await store.write('home_city', 'Dallas, Texas');
    await store.write('projects/acx/owner', 'Ada Lovelace maintains the harness');
    await store.write('projects/acx/language', 'TypeScript on Node 24');
    await store.write('pr/123', 'I shipped the retry fix on PR #123');
  });
  afterEach(async () => {
    await store?.close();
  });

  it('lists in key order, by prefix, with a limit', async () => {
    expect((await store.list()).map((r) => r.key)).toEqual(['home_city', 'pr/123', 'projects/acx/language', 'projects/acx/owner']);
    expect((await store.list({ prefix: 'projects/' })).map((r) => r.key)).toEqual(['projects/acx/language', 'projects/acx/owner']);
    expect((await store.list({ limit: 1 })).map((r) => r.key)).toEqual(['home_city']);
    expect(await store.list({ prefix: 'nothing/' })).toEqual([]);
    expect(await store.count('projects/')).toBe(2);
    await expect(store.list({ prefix: 'bad prefix' })).rejects.toThrow(MemoryInputError);
  });

  it('deletes, idempotently, and the index forgets the record', async () => {
    expect((await store.search('texas')).map((h) => h.key)).toEqual(['home_city']);
    expect(await store.delete('home_city')).toBe(true);
    expect(await store.delete('home_city')).toBe(false);
    expect(await store.get('home_city')).toBeUndefined();
    expect(await store.search('texas')).toEqual([]);
  });

  it('searches values and keys, with stemming, ranked', async () => {
    expect((await store.search('texas')).map((h) => h.key)).toEqual(['home_city']);
    // a key-only word
    expect((await store.search('owner')).map((h) => h.key)).toEqual(['projects/acx/owner']);
    // "ship" finds "shipped"
    expect((await store.search('what did you ship?')).map((h) => h.key)).toEqual(['pr/123']);
    // more matching terms rank first
    const hits = await store.search('acx typescript');
    expect(hits[0]!.key).toBe('projects/acx/language');
    expect(hits.map((h) => h.key)).toContain('projects/acx/owner');
    expect(await store.search('acx', { limit: 1 })).toHaveLength(1);
    expect(await store.search('acx', { prefix: 'pr/' })).toEqual([]);
    expect((await store.search('Lovel*')).map((h) => h.key)).toEqual(['projects/acx/owner']);
  });

  it('stays ranked and bounded when a term matches more records than the ranking window', async () => {
    const entries = [];
    for (let i = 0; i < RANK_WINDOW + 500; i++) entries.push({ key: `log/${i}`, value: `routine deploy number ${i}` });
    await store.writeMany(entries);
    await store.write('log/special', 'routine deploy of the kraken service');
    // The rare word decides, whatever the common one matches.
    expect((await store.search('deploy kraken'))[0]!.key).toBe('log/special');
    // Only common words: the newest RANK_WINDOW matches are ranked, best first.
    const hits = await store.search('routine deploy', { limit: 3 });
    expect(hits).toHaveLength(3);
    for (const hit of hits) expect(Number(hit.key.slice('log/'.length))).toBeGreaterThanOrEqual(500);
    expect(hits[0]!.score).toBeLessThanOrEqual(hits[2]!.score);
  });

  it('re-indexes a record whose value changed', async () => {
    await store.write('home_city', 'Paris, France');
    expect(await store.search('texas')).toEqual([]);
    expect((await store.search('paris')).map((h) => h.key)).toEqual(['home_city']);
    if (store instanceof SqliteMemoryRecords) {
      const check = store.file.database.prepare("INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)");
      expect(() => check.run()).not.toThrow();
    }
  });

  it('never throws on hostile FTS syntax', async () => {
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
      await expect(store.search(query), query.slice(0, 40)).resolves.toBeDefined();
    }
    expect((await store.search('texas"')).map((h) => h.key)).toEqual(['home_city']);
    expect((await store.search('key:texas')).map((h) => h.key)).toEqual(['home_city']);
    expect((await store.search('((texas)')).map((h) => h.key)).toEqual(['home_city']);
    expect(await store.search('')).toEqual([]);
    expect(await store.search('***')).toEqual([]);
    expect(await store.count()).toBe(4);
  });
});

describe('MemoryRecords on postgres: agents, schema, vectors', () => {
  it.skipIf(POSTGRES_SKIP !== '')(`keeps each agent's records apart in one database, and reopens them${POSTGRES_SKIP}`, async () => {
    const ada = await PostgresMemoryRecords.open(pgUrl, 'ada', { now });
    const bob = await PostgresMemoryRecords.open(pgUrl, 'bob', { now });
    try {
      await ada.write('home_city', 'Dallas, Texas', { tags: ['place'], source: 'tool' });
      await bob.write('home_city', 'Oslo, Norway');
      await bob.write('pet', 'a dog named Texas');
      expect((await ada.search('texas')).map((h) => h.key)).toEqual(['home_city']);
      expect((await ada.list()).map((r) => r.value)).toEqual(['Dallas, Texas']);
      expect(await bob.count()).toBe(2);
      expect(await ada.delete('pet')).toBe(false);
      expect(await ada.deleteBySource(['tool'])).toBe(1);
      expect(await bob.count()).toBe(2);
      await ada.write('home_city', 'Dallas, Texas');
    } finally {
      await ada.close();
      await bob.close();
    }
    clock += 60_000;
    const again = await PostgresMemoryRecords.open(pgUrl, 'ada', { now });
    try {
      await again.write('home_city', 'Austin, Texas');
      expect(await again.read('home_city')).toEqual({
        key: 'home_city',
        value: 'Austin, Texas',
        createdAt: '2025-03-01T10:00:00.000Z',
        updatedAt: '2025-03-01T10:01:00.000Z',
      });
    } finally {
      await again.close();
    }
  });

  it.skipIf(POSTGRES_SKIP !== '')(`ranks with folded diacritics, and refuses a schema newer than it knows${POSTGRES_SKIP}`, async () => {
    const records = await PostgresMemoryRecords.open(pgUrl, `agent-${++agents}`, { now });
    try {
      await records.write('cafe', 'Meet at the Café Müller on Friday');
      expect((await records.search('cafe muller')).map((h) => h.key)).toEqual(['cafe']);
      expect((await records.search('café')).map((h) => h.key)).toEqual(['cafe']);
      // Stopwords are kept in the index: a query made only of them still finds them.
      expect((await records.search('the')).map((h) => h.key)).toEqual(['cafe']);
    } finally {
      await records.close();
    }
    const db = postgres.database('memory_future');
    const client = new pg.Client({ connectionString: db });
    await client.connect();
    await client.query('CREATE TABLE acx_memory_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)');
    await client.query("INSERT INTO acx_memory_migrations VALUES (99, 'later')");
    await client.end();
    const newer = new PostgresMemoryRecords(db, 'ada');
    try {
      await expect(newer.count()).rejects.toThrow(/version 99, newer than this acx knows/);
    } finally {
      await newer.close();
    }
  });

  it.skipIf(POSTGRES_SKIP !== '')(`keeps vectors per record, dropped when the record changes or goes${POSTGRES_SKIP}`, async () => {
    const records = await PostgresMemoryRecords.open(pgUrl, `agent-${++agents}`, { now });
    try {
      await records.write('notes/a', 'first value');
      await records.write('notes/b', 'other value');
      const pending = await records.vectors.unindexed('e1', 10);
      expect(pending.map((r) => r.key)).toEqual(['notes/b', 'notes/a']);
      await records.vectors.save('e1', pending.map((r, i) => ({ id: r.id, vector: i === 0 ? [1, 0] : [0, 2] })));
      expect(await records.vectors.count('e1')).toBe(2);
      expect(await records.vectors.nearest('e1', [0, 1], { limit: 5 })).toEqual([
        { key: 'notes/a', similarity: 1 },
        { key: 'notes/b', similarity: 0 },
      ]);
      await records.write('notes/a', 'changed value');
      expect(await records.vectors.count('e1')).toBe(1);
      await records.delete('notes/b');
      expect(await records.vectors.count('e1')).toBe(0);
      expect((await records.vectors.unindexed('e1', 10)).map((r) => r.key)).toEqual(['notes/a']);
    } finally {
      await records.close();
    }
  });
});

describe('MemoryStore (the SQLite file) migrations', () => {
  let file: MemoryStore;
  const path = () => join(dir, 'memory.db');
  it('reopens a file at the current version with its records', () => {
    file = openMemoryStore(path(), { now });
    file.write('home_city', 'Dallas, Texas');
    file.close();
    file = openMemoryStore(path());
    expect(userVersion(file.database)).toBe(MEMORY_MIGRATIONS.length);
    expect(file.read('home_city').value).toBe('Dallas, Texas');
    expect(file.search('dallas').map((h) => h.key)).toEqual(['home_city']);
    file.close();
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
