import pg from 'pg';
import { checkPostgres, migratePostgres } from '../store/postgres-migrations.ts';
import { nearestKeys, validateKeyPrefix, validateMemoryKey } from './keys.ts';
import { MemoryInputError } from './keys.ts';
import { queryTerms, type QueryTerm } from './query.ts';
import type { MemoryRecords, MemoryVectorIndex } from './records.ts';
import {
  checkEntry,
  clampLimit,
  DEFAULT_LIST_LIMIT,
  DEFAULT_SEARCH_LIMIT,
  FULL_SCAN_KEYS,
  MAX_LIST_LIMIT,
  MAX_SEARCH_LIMIT,
  MemoryNotFoundError,
  SUGGESTION_LIMIT,
  toRecord,
  upperBound,
  type CheckedEntry,
  type ListOptions,
  type MemoryRecord,
  type MemorySearchHit,
  type MemoryStoreOptions,
  type Row,
  type SearchOptions,
  type WriteOptions,
  type WriteResult,
} from './store.ts';
import { encodeVector, rankNearest, VECTOR_WINDOW, type NearestOptions, type UnindexedRecord, type VectorHit } from './vectors.ts';
import { openPostgresPool } from '../store/postgres-pool.ts';
import { NamedStatements } from '../store/postgres-sql.ts';

/**
 * An agent's memory on PostgreSQL: the records of every agent that shares the database in one
 * table, keyed by (agent id, key), with the same fields, timestamps and rules as the SQLite file
 * (src/memory/store.ts; the shared checks are its own). Search is PostgreSQL full-text search,
 * with nothing beyond a stock server: a text search configuration of the built-in snowball
 * English stemmer without a stopword list (the query side drops stopwords, as on SQLite), over
 * keys (weight A) and values (weight B) in a GIN-indexed tsvector.
 *
 * How ranking differs from the SQLite file's bm25: ts_rank weighs how often and where (key or
 * value) the query's words occur, normalised by the record's length, but not how rare a word is
 * across the memory (bm25's IDF). A record holding more of the query's words still comes first;
 * among records holding one word each, a rare word does not outrank a common one. Diacritics are
 * folded in JavaScript on both sides (unaccent would need an extension), as FTS5's
 * remove_diacritics does. Key prefix and source filters apply before ranking here, so a narrow
 * filter never returns fewer hits than exist.
 *
 * Bounded cost however many records match: the records ranked are the newest RANK_WINDOW matches
 * of the whole query plus, per word, its newest TERM_SAMPLE matches — so a word found in few
 * records brings all of them in even when a common word floods the window.
 */
const MIGRATIONS = [
  `CREATE TEXT SEARCH DICTIONARY acx_memory_stem (TEMPLATE = snowball, Language = english);
   CREATE TEXT SEARCH CONFIGURATION acx_memory (COPY = simple);
   ALTER TEXT SEARCH CONFIGURATION acx_memory
     ALTER MAPPING FOR asciiword, word, numword, asciihword, hword, numhword, hword_asciipart, hword_part, hword_numpart
     WITH acx_memory_stem;
   CREATE TABLE acx_memories (
     id BIGSERIAL PRIMARY KEY,
     agent_id TEXT NOT NULL,
     key TEXT COLLATE "C" NOT NULL,
     value TEXT NOT NULL,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL,
     tags TEXT,
     source TEXT,
     search TSVECTOR NOT NULL,
     UNIQUE (agent_id, key)
   );
   CREATE INDEX acx_memories_search ON acx_memories USING gin (search);
   CREATE INDEX acx_memories_updated_at ON acx_memories (agent_id, updated_at);
   CREATE TABLE acx_memory_vectors (
     memory_id BIGINT PRIMARY KEY REFERENCES acx_memories(id) ON DELETE CASCADE,
     engine TEXT NOT NULL,
     vector BYTEA NOT NULL
   );
   CREATE FUNCTION acx_memory_vector_stale() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN DELETE FROM acx_memory_vectors WHERE memory_id = OLD.id; RETURN NEW; END
   $$;
   -- A vector is derived data: a changed record drops it, rebuilt on next use (as on SQLite).
   CREATE TRIGGER acx_memory_vectors_stale AFTER UPDATE OF key, value ON acx_memories
     FOR EACH ROW EXECUTE FUNCTION acx_memory_vector_stale();`,
];

/** How many of the whole query's newest matches are ranked. */
const RANK_WINDOW = 300;
/** How many of each word's newest matches join them. */
const TERM_SAMPLE = 200;
/** ts_rank weights for D, C, B (values), A (keys): a word in the key counts twice one in the value. */
const RANK_WEIGHTS = '{0.1, 0.2, 0.5, 1.0}';
/** ts_rank normalisation 1: divide by 1 + log(record length), as bm25 discounts long records. */
const RANK_NORMALISATION = 1;

const COLUMNS = 'm.key, m.value, m.created_at, m.updated_at, m.tags, m.source';
const VECTOR_TEXT = "setweight(to_tsvector('acx_memory', $K), 'A') || setweight(to_tsvector('acx_memory', $V), 'B')";

/**
 * Text as the index sees it: diacritics folded, everything but letters and digits a word break
 * (what FTS5's unicode61 tokenizer does), so `projects/acx-owner` is three words, not a path.
 */
export function searchableText(text: string): string {
  return text.normalize('NFKD').replace(/\p{M}+/gu, '').replace(/[^\p{L}\p{N}]+/gu, ' ').trim();
}

/**
 * A tsquery text that can never be a syntax error: words of letters and digits only, each
 * optionally a prefix (`:*`) and restricted to a weight, joined by `|`. Undefined when no word is left.
 */
export function tsqueryText(terms: readonly QueryTerm[], weight = ''): string | undefined {
  const parts: string[] = [];
  for (const term of terms) {
    for (const word of searchableText(term.text).split(' ')) {
      if (word) parts.push(`${word}${term.prefix || weight ? `:${term.prefix ? '*' : ''}${weight}` : ''}`);
    }
  }
  return parts.length > 0 ? parts.join(' | ') : undefined;
}

export interface PostgresMemoryOptions extends MemoryStoreOptions {
  /** Connections this memory opens at most. Default 4. */
  maxConnections?: number;
}

export class PostgresMemoryRecords implements MemoryRecords {
  readonly kind = 'postgres' as const;
  readonly agentId: string;
  readonly vectors: MemoryVectorIndex;
  private readonly pool: pg.Pool;
  private readonly named: NamedStatements;
  private readonly url: string;
  private readonly now: () => Date;
  private ready: Promise<void> | undefined;

  /** Connects lazily: the first call checks the server and applies the migrations. */
  constructor(url: string, agentId: string, options: PostgresMemoryOptions = {}) {
    if (typeof agentId !== 'string' || agentId === '') throw new MemoryInputError('A PostgreSQL memory needs the agent id its records belong to.', 'Pass the agent id.');
    this.url = url;
    this.agentId = agentId;
    this.now = options.now ?? (() => new Date());
    this.pool = openPostgresPool(url, options.maxConnections ?? 4);
    this.named = new NamedStatements(this.pool);
    this.vectors = new PostgresMemoryVectors((sql, values) => this.rows(sql, values), agentId);
  }

  static async open(url: string, agentId: string, options: PostgresMemoryOptions = {}): Promise<PostgresMemoryRecords> {
    const records = new PostgresMemoryRecords(url, agentId, options);
    await records.migrated();
    return records;
  }

  private migrated(): Promise<void> {
    this.ready ??= checkPostgres(this.pool, this.url).then(() => migratePostgres(this.pool, MIGRATIONS, 'acx_memory_migrations'));
    return this.ready;
  }

  private async rows<R extends pg.QueryResultRow>(sql: string, values: unknown[]): Promise<R[]> {
    await this.migrated();
    return (await this.named.query<R>(sql, values)).rows;
  }

  async write(key: string, value: string, options: WriteOptions = {}): Promise<WriteResult> {
    const entry = checkEntry(key, value, options);
    const [row] = await this.upsert([entry], true);
    const { created, ...record } = row!;
    return { record: toRecord(record), created };
  }

  async writeMany(entries: Iterable<{ key: string; value: string } & WriteOptions>): Promise<number> {
    const checked = [...entries].map((e) => checkEntry(e.key, e.value, e));
    // One statement writes them all, and it may touch a key once: a key given twice is written
    // as the SQLite file's successive upserts would leave it.
    const byKey = new Map<string, CheckedEntry>();
    for (const entry of checked) {
      const before = byKey.get(entry.key);
      byKey.set(entry.key, before ? { ...entry, tags: entry.tags ?? before.tags, source: entry.source ?? before.source } : entry);
    }
    if (byKey.size > 0) await this.upsert([...byKey.values()], false);
    return checked.length;
  }

  /** Upserts in one statement; an overwrite keeps created_at, and tags/source unless given. */
  private async upsert(entries: readonly CheckedEntry[], returning: boolean): Promise<Array<Row & { created: boolean }>> {
    const stamp = this.now().toISOString();
    const search = VECTOR_TEXT.replace('$K', 'e.sk').replace('$V', 'e.sv');
    // xmax is 0 on a row version an INSERT made, and set on one an ON CONFLICT UPDATE made.
    return this.rows(
      `INSERT INTO acx_memories AS m (agent_id, key, value, created_at, updated_at, tags, source, search)
       SELECT $1, e.k, e.v, $2, $2, e.t, e.s, ${search}
       FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[]) AS e(k, v, t, s, sk, sv)
       ON CONFLICT (agent_id, key) DO UPDATE SET
         value = excluded.value,
         updated_at = excluded.updated_at,
         tags = coalesce(excluded.tags, m.tags),
         source = coalesce(excluded.source, m.source),
         search = excluded.search
       ${returning ? `RETURNING ${COLUMNS}, (m.xmax = 0) AS created` : ''}`,
      [
        this.agentId,
        stamp,
        entries.map((e) => e.key),
        entries.map((e) => e.value),
        entries.map((e) => e.tags),
        entries.map((e) => e.source),
        entries.map((e) => searchableText(e.key)),
        entries.map((e) => searchableText(e.value)),
      ],
    );
  }

  async get(key: string): Promise<MemoryRecord | undefined> {
    const [row] = await this.rows<Row>(`SELECT ${COLUMNS} FROM acx_memories m WHERE m.agent_id = $1 AND m.key = $2`, [this.agentId, key]);
    return row ? toRecord(row) : undefined;
  }

  async read(key: string): Promise<MemoryRecord> {
    // Not validated as a key: a malformed guess ("home city") still earns the nearest real keys.
    if (typeof key !== 'string' || key.length === 0) validateMemoryKey(key);
    const record = await this.get(key);
    if (record) return record;
    throw new MemoryNotFoundError(key, await this.suggestKeys(key), await this.count());
  }

  /** As on SQLite: every key in a small memory; past FULL_SCAN_KEYS, keys sharing a prefix or a word. */
  async suggestKeys(wanted: string, limit = SUGGESTION_LIMIT): Promise<string[]> {
    const key = wanted.slice(0, 200);
    const total = await this.count();
    if (total === 0) return [];
    if (total <= FULL_SCAN_KEYS) {
      const keys = await this.rows<{ key: string }>('SELECT key FROM acx_memories WHERE agent_id = $1', [this.agentId]);
      return nearestKeys(key, keys.map((row) => row.key), limit);
    }
    // Longest shared prefix first, 50 keys each, in one round trip; then per key word, the
    // newest 100 keys holding a word starting with it (weight A: the key part of the index).
    const prefixes: string[] = [];
    for (let length = Math.min(key.length, 24); length >= 1; length--) prefixes.push(key.slice(0, length));
    const words = queryTerms(key, { stopwords: 'keep', maxTerms: 8 })
      .map((term) => tsqueryText([{ text: term.text, prefix: true }], 'A'))
      .filter((text): text is string => text !== undefined);
    const byRange = prefixes.map(
      (_, i) => `(SELECT ${i} AS rank, key FROM acx_memories WHERE agent_id = $1 AND key >= $${2 * i + 2} AND key < $${2 * i + 3} ORDER BY key LIMIT 50)`,
    );
    const base = 2 + 2 * prefixes.length;
    const byWord = words.map(
      (_, i) => `(SELECT ${prefixes.length + i} AS rank, key FROM acx_memories WHERE agent_id = $1 AND search @@ to_tsquery('acx_memory', $${base + i}) ORDER BY id DESC LIMIT 100)`,
    );
    const rows = await this.rows<{ rank: number; key: string }>(`${[...byRange, ...byWord].join(' UNION ALL ')} ORDER BY rank`, [
      this.agentId,
      ...prefixes.flatMap((prefix) => [prefix, upperBound(prefix)]),
      ...words,
    ]);
    // As the SQLite file does it: shorter prefixes only while fewer than 50 keys are found.
    const candidates = new Set<string>();
    let group = -1;
    let full = false;
    for (const row of rows) {
      if (row.rank !== group) {
        group = row.rank;
        full = row.rank < prefixes.length && candidates.size >= 50;
      }
      if (!full) candidates.add(row.key);
    }
    return nearestKeys(key, candidates, limit);
  }

  async list(options: ListOptions = {}): Promise<MemoryRecord[]> {
    const prefix = validateKeyPrefix(options.prefix);
    const limit = clampLimit(options.limit, DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT);
    const offset = Math.max(0, Math.floor(options.offset ?? 0));
    const rows = prefix
      ? await this.rows<Row>(
          `SELECT ${COLUMNS} FROM acx_memories m WHERE m.agent_id = $1 AND m.key >= $2 AND m.key < $3 ORDER BY m.key LIMIT $4 OFFSET $5`,
          [this.agentId, prefix, upperBound(prefix), limit, offset],
        )
      : await this.rows<Row>(`SELECT ${COLUMNS} FROM acx_memories m WHERE m.agent_id = $1 ORDER BY m.key LIMIT $2 OFFSET $3`, [this.agentId, limit, offset]);
    return rows.map(toRecord);
  }

  async count(prefix?: string): Promise<number> {
    const p = validateKeyPrefix(prefix);
    const [row] = p
      ? await this.rows<{ n: string }>('SELECT count(*) AS n FROM acx_memories WHERE agent_id = $1 AND key >= $2 AND key < $3', [this.agentId, p, upperBound(p)])
      : await this.rows<{ n: string }>('SELECT count(*) AS n FROM acx_memories WHERE agent_id = $1', [this.agentId]);
    return Number(row!.n);
  }

  async delete(key: string): Promise<boolean> {
    validateMemoryKey(key);
    const rows = await this.rows('DELETE FROM acx_memories WHERE agent_id = $1 AND key = $2 RETURNING id', [this.agentId, key]);
    return rows.length > 0;
  }

  async deleteBySource(sources: readonly string[]): Promise<number> {
    if (sources.length === 0) return 0;
    const rows = await this.rows('DELETE FROM acx_memories WHERE agent_id = $1 AND source = ANY($2::text[]) RETURNING id', [this.agentId, [...sources]]);
    return rows.length;
  }

  /** Keyword recall, best first (how it ranks, and how that differs from SQLite: the comment at the top). */
  async search(query: string, options: SearchOptions = {}): Promise<MemorySearchHit[]> {
    if (typeof query !== 'string') {
      throw new MemoryInputError('A search query must be text.', 'Pass the words to look for, e.g. "home city".');
    }
    const limit = clampLimit(options.limit, DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT);
    const prefix = validateKeyPrefix(options.prefix);
    const terms = queryTerms(query, options);
    const whole = tsqueryText(terms);
    if (whole === undefined) return [];
    const perTerm = terms.length > 1 ? terms.map((term) => tsqueryText([term])).filter((text): text is string => text !== undefined) : [];
    const values: unknown[] = [this.agentId, whole, ...perTerm];
    const filters: string[] = [];
    if (prefix) {
      values.push(prefix, upperBound(prefix));
      filters.push(`AND key >= $${values.length - 1} AND key < $${values.length}`);
    }
    if (options.excludeSource !== undefined) {
      values.push(options.excludeSource);
      filters.push(`AND (source IS NULL OR source <> $${values.length})`);
    }
    values.push(limit);
    const where = `agent_id = $1 ${filters.join(' ')}`;
    const windows = [
      `(SELECT id FROM acx_memories WHERE ${where} AND search @@ to_tsquery('acx_memory', $2) ORDER BY id DESC LIMIT ${RANK_WINDOW})`,
      ...perTerm.map((_, i) => `(SELECT id FROM acx_memories WHERE ${where} AND search @@ to_tsquery('acx_memory', $${3 + i}) ORDER BY id DESC LIMIT ${TERM_SAMPLE})`),
    ];
    const rows = await this.rows<Row & { rank: number }>(
      `SELECT ${COLUMNS}, ts_rank('${RANK_WEIGHTS}', m.search, to_tsquery('acx_memory', $2), ${RANK_NORMALISATION}) AS rank
       FROM acx_memories m JOIN (${windows.join(' UNION ')}) AS hit ON hit.id = m.id
       ORDER BY rank DESC, m.id DESC LIMIT $${values.length}`,
      values,
    );
    return rows.map(({ rank, ...row }) => ({ ...toRecord(row), score: -rank }));
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

type Rows = <R extends pg.QueryResultRow>(sql: string, values: unknown[]) => Promise<R[]>;

/** The semantic provider's vectors beside the records (BYTEA, Float32, normalised; see vectors.ts). */
class PostgresMemoryVectors implements MemoryVectorIndex {
  private readonly rows: Rows;
  private readonly agentId: string;

  constructor(rows: Rows, agentId: string) {
    this.rows = rows;
    this.agentId = agentId;
  }

  async unindexed(engine: string, limit: number): Promise<UnindexedRecord[]> {
    const rows = await this.rows<{ id: string; key: string; value: string }>(
      `SELECT m.id, m.key, m.value FROM acx_memories m LEFT JOIN acx_memory_vectors v ON v.memory_id = m.id AND v.engine = $2
       WHERE m.agent_id = $1 AND v.memory_id IS NULL ORDER BY m.id DESC LIMIT $3`,
      [this.agentId, engine, limit],
    );
    return rows.map((row) => ({ ...row, id: Number(row.id) }));
  }

  async save(engine: string, entries: ReadonlyArray<{ id: number; vector: readonly number[] }>): Promise<void> {
    if (entries.length === 0) return;
    // A record deleted meanwhile (or another agent's id) is skipped by the join.
    await this.rows(
      `INSERT INTO acx_memory_vectors (memory_id, engine, vector)
       SELECT m.id, $2, e.v FROM unnest($3::bigint[], $4::bytea[]) AS e(id, v) JOIN acx_memories m ON m.id = e.id AND m.agent_id = $1
       ON CONFLICT (memory_id) DO UPDATE SET engine = excluded.engine, vector = excluded.vector`,
      [this.agentId, engine, entries.map((e) => e.id), entries.map((e) => Buffer.from(encodeVector(e.vector)))],
    );
  }

  async idOf(key: string): Promise<number | undefined> {
    const [row] = await this.rows<{ id: string }>('SELECT id FROM acx_memories WHERE agent_id = $1 AND key = $2', [this.agentId, key]);
    return row ? Number(row.id) : undefined;
  }

  async nearest(engine: string, query: readonly number[], options: NearestOptions): Promise<VectorHit[]> {
    const rows = await this.rows<{ key: string; vector: Buffer }>(
      `SELECT m.key, v.vector FROM acx_memory_vectors v JOIN acx_memories m ON m.id = v.memory_id
       WHERE m.agent_id = $1 AND v.engine = $2 AND ($3::text IS NULL OR m.source IS NULL OR m.source <> $3)
       ORDER BY v.memory_id DESC LIMIT $4`,
      [this.agentId, engine, options.excludeSource ?? null, options.window ?? VECTOR_WINDOW],
    );
    return rankNearest(rows, query, options);
  }

  async count(engine: string): Promise<number> {
    const [row] = await this.rows<{ n: string }>(
      'SELECT count(*) AS n FROM acx_memory_vectors v JOIN acx_memories m ON m.id = v.memory_id WHERE m.agent_id = $1 AND v.engine = $2',
      [this.agentId, engine],
    );
    return Number(row!.n);
  }
}
