import { openDatabase, transaction, type Database, type Migration } from '../store/database.ts';
import type { StatementSync } from '../store/sqlite.ts';
import { AcxError, errorMarker, setMarker } from '../core/errors.ts';
import { MemoryInputError, nearestKeys, validateKeyPrefix, validateMemoryKey } from './keys.ts';
import { queryTerms, type FtsQueryOptions } from './query.ts';
import { candidates, planSearch, type SearchPlan } from './search.ts';

/**
 * The durable memory store: one SQLite file of key -> text records with an FTS5 index over both
 * keys and values. The index is an external-content FTS5 table kept in step by triggers, so every
 * write, update and delete changes the record and its index in the same transaction.
 */

export interface MemoryRecord {
  key: string;
  value: string;
  /** ISO-8601; set on first write, never changed by later writes to the same key. */
  createdAt: string;
  updatedAt: string;
  tags?: string[];
  /** Who wrote it: `tool`, `engine`, `session:<id>` for observed exchanges, ... */
  source?: string;
}

export interface MemorySearchHit extends MemoryRecord {
  /**
   * Lower is better. SQLite: the bm25 rank (negative) when the query has a term rare enough to
   * rank by, else minus the number of query terms the record holds (see src/memory/search.ts).
   * PostgreSQL: minus ts_rank (see src/memory/postgres-store.ts).
   */
  score: number;
}

export interface WriteOptions {
  tags?: string[];
  source?: string;
}

export interface WriteResult {
  record: MemoryRecord;
  /** False when an existing key was overwritten. */
  created: boolean;
}

export interface ListOptions {
  prefix?: string;
  limit?: number;
  offset?: number;
}

export interface SearchOptions extends FtsQueryOptions {
  limit?: number;
  /** Only keys starting with this prefix. */
  prefix?: string;
  /** Leave out records whose `source` equals this (e.g. the current session's own exchanges). */
  excludeSource?: string;
}

export interface MemoryStoreOptions {
  /** Clock, for tests. */
  now?: () => Date;
}

export const MAX_VALUE_CHARS = 100_000;
export const DEFAULT_LIST_LIMIT = 100;
export const MAX_LIST_LIMIT = 1000;
export const DEFAULT_SEARCH_LIMIT = 10;
export const MAX_SEARCH_LIMIT = 100;
/** How many keys a read miss names. */
export const SUGGESTION_LIMIT = 10;
/** Below this many records a miss compares against every key; above, against candidates. */
export const FULL_SCAN_KEYS = 5000;
/**
 * The memory schema's history (PRAGMA user_version): entry i upgrades version i -> i+1. Additive
 * only, never edited once shipped, so an older acx still opens a memory a newer one migrated
 * (the rule and its check: migrate() in src/store/database.ts).
 */
export const MEMORY_MIGRATIONS: readonly Migration[] = [
  // v1: records, the FTS5 index over key and value, triggers that keep the index in step.
  `
  CREATE TABLE memories (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    value TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );
  CREATE VIRTUAL TABLE memories_fts USING fts5(
    key, value,
    content = 'memories', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
  );
  CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, key, value) VALUES (new.id, new.key, new.value);
  END;
  CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, key, value) VALUES ('delete', old.id, old.key, old.value);
  END;
  CREATE TRIGGER memories_au AFTER UPDATE OF key, value ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, key, value) VALUES ('delete', old.id, old.key, old.value);
    INSERT INTO memories_fts(rowid, key, value) VALUES (new.id, new.key, new.value);
  END;
  `,
  // v2: provenance (tags as a JSON array, source) and recency listing.
  `
  ALTER TABLE memories ADD COLUMN tags TEXT;
  ALTER TABLE memories ADD COLUMN source TEXT;
  CREATE INDEX memories_updated_at ON memories(updated_at);
  `,
  // v3: embedding vectors beside the FTS index (the semantic provider's; see vectors.ts). A
  // vector is derived data: a changed or deleted record drops its vector, rebuilt on next use.
  `
  CREATE TABLE memory_vectors (
    memory_id INTEGER PRIMARY KEY,
    engine TEXT NOT NULL,
    vector BLOB NOT NULL
  );
  CREATE TRIGGER memory_vectors_ad AFTER DELETE ON memories BEGIN
    DELETE FROM memory_vectors WHERE memory_id = old.id;
  END;
  CREATE TRIGGER memory_vectors_au AFTER UPDATE OF key, value ON memories BEGIN
    DELETE FROM memory_vectors WHERE memory_id = old.id;
  END;
  `,
];

const MEMORY_NOT_FOUND_MARKER = errorMarker('MemoryNotFoundError');

/** A read of a key that does not exist. The message names the nearest existing keys. */
export class MemoryNotFoundError extends AcxError {
  readonly key: string;
  readonly suggestions: string[];
  readonly total: number;

  constructor(key: string, suggestions: string[], total: number) {
    super('memory-not-found', describeMiss(key, suggestions, total), {
      hint: 'Read one of the listed keys, or search by content to find a memory filed under another key.',
    });
    setMarker(this, MEMORY_NOT_FOUND_MARKER);
    this.name = 'MemoryNotFoundError';
    this.key = key;
    this.suggestions = suggestions;
    this.total = total;
  }

  static override isInstance(error: unknown): error is MemoryNotFoundError {
    return AcxError.hasMarker(error, MEMORY_NOT_FOUND_MARKER);
  }
}

export function describeMiss(key: string, suggestions: readonly string[], total: number): string {
  if (total === 0) return `No memory under ${JSON.stringify(key)}: the memory is empty.`;
  const more = total > suggestions.length ? ` (${total} keys in all; list or search to see others)` : '';
  return `No memory under ${JSON.stringify(key)}. Nearest existing keys: ${suggestions.join(', ')}${more}.`;
}

export interface Row {
  key: string;
  value: string;
  created_at: string;
  updated_at: string;
  tags: string | null;
  source: string | null;
}

const COLUMNS = 'm.key, m.value, m.created_at, m.updated_at, m.tags, m.source';

export class MemoryStore {
  readonly path: string;
  private readonly db: Database;
  private readonly now: () => Date;
  private readonly statements = new Map<string, StatementSync>();
  private closed = false;

  constructor(path: string, options: MemoryStoreOptions = {}) {
    this.path = path;
    this.now = options.now ?? (() => new Date());
    this.db = openDatabase(path, { migrations: MEMORY_MIGRATIONS });
  }

  /** Upserts `value` under `key`; an overwrite keeps the original createdAt (and tags/source unless given). */
  write(key: string, value: string, options: WriteOptions = {}): WriteResult {
    const entry = checkEntry(key, value, options);
    return transaction(this.db, () => {
      const existed = this.get(entry.key) !== undefined;
      this.upsert(entry, this.timestamp());
      return { record: this.get(entry.key)!, created: !existed };
    });
  }

  /** Upserts many records in one transaction (imports, benchmarks). Returns how many were written. */
  writeMany(entries: Iterable<{ key: string; value: string } & WriteOptions>): number {
    const checked = [...entries].map((e) => checkEntry(e.key, e.value, e));
    const stamp = this.timestamp();
    transaction(this.db, () => {
      for (const entry of checked) this.upsert(entry, stamp);
    });
    return checked.length;
  }

  get(key: string): MemoryRecord | undefined {
    const row = this.db.prepare(`SELECT ${COLUMNS} FROM memories m WHERE m.key = ?`).get(key) as Row | undefined;
    return row ? toRecord(row) : undefined;
  }

  /** The record under `key`; a miss throws MemoryNotFoundError naming the nearest keys. */
  read(key: string): MemoryRecord {
    // Not validated as a key: a malformed guess ("home city") still earns the nearest real keys.
    if (typeof key !== 'string' || key.length === 0) validateMemoryKey(key);
    const record = this.get(key);
    if (record) return record;
    throw new MemoryNotFoundError(key, this.suggestKeys(key), this.count());
  }

  /**
   * Existing keys nearest to `key`, at most `limit`. Bounded work at any size: past a few
   * thousand keys it ranks candidates from shared prefixes and from key-token matches only.
   */
  suggestKeys(wanted: string, limit = SUGGESTION_LIMIT): string[] {
    const key = wanted.slice(0, 200);
    const total = this.count();
    if (total === 0) return [];
    if (total <= FULL_SCAN_KEYS) {
      const keys = this.db.prepare('SELECT key FROM memories').all() as { key: string }[];
      return nearestKeys(key, keys.map((row) => row.key), limit);
    }
    const candidates = new Set<string>();
    const byRange = this.db.prepare('SELECT key FROM memories WHERE key >= ? AND key < ? ORDER BY key LIMIT 50');
    for (let length = Math.min(key.length, 24); length >= 1 && candidates.size < 50; length--) {
      const prefix = key.slice(0, length);
      for (const row of byRange.all(prefix, upperBound(prefix)) as { key: string }[]) candidates.add(row.key);
    }
    // Keys sharing a word with the wanted key: per word, a bounded newest-first slice.
    const byWord = this.db.prepare(
      'SELECT m.key FROM (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid DESC LIMIT 100) AS hit JOIN memories m ON m.id = hit.rowid',
    );
    for (const term of queryTerms(key, { stopwords: 'keep', maxTerms: 8 })) {
      for (const row of byWord.all(`key : "${term.text}" *`) as { key: string }[]) candidates.add(row.key);
    }
    return nearestKeys(key, candidates, limit);
  }

  /** Records in key order, optionally under a key prefix. */
  list(options: ListOptions = {}): MemoryRecord[] {
    const prefix = validateKeyPrefix(options.prefix);
    const limit = clampLimit(options.limit, DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT);
    const offset = Math.max(0, Math.floor(options.offset ?? 0));
    const rows = prefix
      ? this.db
          .prepare(`SELECT ${COLUMNS} FROM memories m WHERE m.key >= ? AND m.key < ? ORDER BY m.key LIMIT ? OFFSET ?`)
          .all(prefix, upperBound(prefix), limit, offset)
      : this.db.prepare(`SELECT ${COLUMNS} FROM memories m ORDER BY m.key LIMIT ? OFFSET ?`).all(limit, offset);
    return (rows as unknown as Row[]).map(toRecord);
  }

  count(prefix?: string): number {
    const p = validateKeyPrefix(prefix);
    const row = p
      ? this.db.prepare('SELECT count(*) AS n FROM memories WHERE key >= ? AND key < ?').get(p, upperBound(p))
      : this.db.prepare('SELECT count(*) AS n FROM memories').get();
    return Number((row as { n: number }).n);
  }

  /** Forgets `key`. Returns whether it existed; deleting a missing key is not an error. */
  delete(key: string): boolean {
    validateMemoryKey(key);
    return transaction(this.db, () => Number(this.db.prepare('DELETE FROM memories WHERE key = ?').run(key).changes) > 0);
  }

  /** Forgets every record whose `source` is one of `sources` (entries a caller rebuilds). Returns how many. */
  deleteBySource(sources: readonly string[]): number {
    if (sources.length === 0) return 0;
    const marks = sources.map(() => '?').join(', ');
    return transaction(this.db, () => Number(this.db.prepare(`DELETE FROM memories WHERE source IN (${marks})`).run(...sources).changes));
  }

  /**
   * Keyword recall over keys and values, best first, at a bounded cost however large the memory
   * (how it ranks: src/memory/search.ts). Any text is a valid query: it is tokenised into quoted
   * terms (see query.ts), so it never raises an FTS5 syntax error; text without a searchable
   * word matches nothing. The key prefix and source filters apply to the records the ranking
   * looked at, so in a large memory a narrow filter can return fewer than `limit` hits.
   */
  search(query: string, options: SearchOptions = {}): MemorySearchHit[] {
    const plan = this.searchPlan(query, options);
    const limit = clampLimit(options.limit, DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT);
    const prefix = validateKeyPrefix(options.prefix);
    const where = ['m.id = ?'];
    const params: (string | number)[] = [];
    if (prefix) {
      where.push('m.key >= ? AND m.key < ?');
      params.push(prefix, upperBound(prefix));
    }
    if (options.excludeSource !== undefined) {
      where.push('(m.source IS NULL OR m.source <> ?)');
      params.push(options.excludeSource);
    }
    // Rows are read only for the candidates kept, best first: reading every candidate's row
    // would cost more than ranking them.
    const fetch = this.prepare(`SELECT ${COLUMNS} FROM memories m WHERE ${where.join(' AND ')}`);
    const hits: MemorySearchHit[] = [];
    for (const candidate of candidates(this.prepare, plan)) {
      const row = fetch.get(candidate.id, ...params) as Row | undefined;
      if (row) hits.push({ ...toRecord(row), score: candidate.score });
      if (hits.length === limit) break;
    }
    return hits;
  }

  /** How `search` would answer `query` (which terms rank it, and how); for benchmarks and tests. */
  searchPlan(query: string, options: FtsQueryOptions = {}): SearchPlan {
    if (typeof query !== 'string') {
      throw new MemoryInputError('A search query must be text.', 'Pass the words to look for, e.g. "home city".');
    }
    const terms = queryTerms(query, options);
    return terms.length === 0 ? { strategy: 'none' } : planSearch(this.prepare, terms);
  }

  /** Compiles each distinct SQL text once: compiling costs more than running these statements. */
  private readonly prepare = (sql: string): StatementSync => {
    let statement = this.statements.get(sql);
    if (!statement) this.statements.set(sql, (statement = this.db.prepare(sql)));
    return statement;
  };

  /** The underlying handle, for benchmarks and integrity checks. Do not write through it. */
  get database(): Database {
    return this.db;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }

  private upsert(entry: CheckedEntry, stamp: string): void {
    this.db
      .prepare(
        `INSERT INTO memories (key, value, created_at, updated_at, tags, source) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT(key) DO UPDATE SET
           value = excluded.value,
           updated_at = excluded.updated_at,
           tags = coalesce(excluded.tags, memories.tags),
           source = coalesce(excluded.source, memories.source)`,
      )
      .run(entry.key, entry.value, stamp, stamp, entry.tags, entry.source);
  }

  private timestamp(): string {
    return this.now().toISOString();
  }
}

export function openMemoryStore(path: string, options: MemoryStoreOptions = {}): MemoryStore {
  return new MemoryStore(path, options);
}

export interface CheckedEntry {
  key: string;
  value: string;
  tags: string | null;
  source: string | null;
}

export function checkEntry(key: string, value: string, options: WriteOptions): CheckedEntry {
  validateMemoryKey(key);
  if (typeof value !== 'string' || value.trim().length === 0) {
    throw new MemoryInputError(`The value for ${JSON.stringify(key)} is empty.`, 'Write the fact to remember as the value.');
  }
  if (value.length > MAX_VALUE_CHARS) {
    throw new MemoryInputError(
      `The value for ${JSON.stringify(key)} is ${value.length} characters; the limit is ${MAX_VALUE_CHARS}.`,
      'Store a summary, or split it across several keys.',
    );
  }
  let tags: string | null = null;
  if (options.tags !== undefined) {
    if (!Array.isArray(options.tags) || options.tags.some((t) => typeof t !== 'string' || t.length === 0 || t.length > 100)) {
      throw new MemoryInputError('Tags must be a list of short non-empty strings.', 'Pass tags such as ["person", "preference"].');
    }
    tags = JSON.stringify(options.tags);
  }
  const source = options.source === undefined ? null : String(options.source);
  return { key, value, tags, source };
}

export function toRecord(row: Row): MemoryRecord {
  const record: MemoryRecord = { key: row.key, value: row.value, createdAt: row.created_at, updatedAt: row.updated_at };
  if (row.tags) {
    try {
      const tags = JSON.parse(row.tags) as unknown;
      if (Array.isArray(tags)) record.tags = tags.map(String);
    } catch {
      // A hand-edited row with bad JSON just loses its tags in the result.
    }
  }
  if (row.source) record.source = row.source;
  return record;
}

/** The smallest string greater than every string starting with `prefix` (keys are ASCII). */
export function upperBound(prefix: string): string {
  return `${prefix}\u{10FFFF}`;
}

export function clampLimit(value: number | undefined, fallback: number, max: number): number {
  if (value === undefined || !Number.isFinite(value)) return fallback;
  return Math.min(max, Math.max(1, Math.floor(value)));
}
