import { transaction } from '../store/database.ts';
import type { StatementSync } from '../store/sqlite.ts';
import type { MemoryStore } from './store.ts';

/**
 * Embedding vectors of memory records, in the memory file beside the FTS index (table
 * `memory_vectors`, migration v3): one Float32 BLOB per record, tagged with the engine that made
 * it. Vectors are derived data: a record's change or deletion drops its vector (triggers), and
 * a vector of another engine counts as missing, so switching engines re-indexes as records are
 * used. (sqlite-vec is not used: its npm build ships only as a WebAssembly SQLite, which cannot
 * load into node:sqlite.)
 *
 * Nearest-neighbour search is exact and brute force over the newest VECTOR_WINDOW vectors: fine
 * for a memory of tens of thousands of records; older records stay reachable through FTS.
 */
export const VECTOR_WINDOW = 20_000;

export interface UnindexedRecord {
  id: number;
  key: string;
  value: string;
}

export interface VectorHit {
  key: string;
  /** Cosine similarity to the query, -1..1. */
  similarity: number;
}

export interface NearestOptions {
  limit: number;
  /** Leave out records whose `source` equals this. */
  excludeSource?: string;
  /** Only hits at least this similar. */
  minSimilarity?: number;
  window?: number;
}

/** The text a record is embedded by: its key as the title (SPEC §7.7's title + summary), except observed exchanges, whose keys are timestamps. */
export function embeddingText(key: string, value: string): string {
  return key.startsWith('observed/') ? value : `${key}\n\n${value}`;
}

export class MemoryVectors {
  private readonly statements = new Map<string, StatementSync>();
  private readonly store: MemoryStore;

  constructor(store: MemoryStore) {
    this.store = store;
  }

  /** The newest records with no vector from `engine`, at most `limit`. */
  unindexed(engine: string, limit: number): UnindexedRecord[] {
    return this.prepare(
      `SELECT m.id, m.key, m.value FROM memories m LEFT JOIN memory_vectors v ON v.memory_id = m.id AND v.engine = ?
       WHERE v.memory_id IS NULL ORDER BY m.id DESC LIMIT ?`,
    ).all(engine, limit) as unknown as UnindexedRecord[];
  }

  /** Stores (or replaces) each record's vector, normalised. A record deleted meanwhile is skipped. */
  save(engine: string, entries: ReadonlyArray<{ id: number; vector: readonly number[] }>): void {
    const put = this.prepare(
      `INSERT INTO memory_vectors (memory_id, engine, vector) SELECT id, ?, ? FROM memories WHERE id = ?
       ON CONFLICT(memory_id) DO UPDATE SET engine = excluded.engine, vector = excluded.vector`,
    );
    transaction(this.store.database, () => {
      for (const entry of entries) put.run(engine, encodeVector(entry.vector), entry.id);
    });
  }

  /** The record id under `key`, to attach a vector to a record just written. */
  idOf(key: string): number | undefined {
    const row = this.prepare('SELECT id FROM memories WHERE key = ?').get(key) as { id: number } | undefined;
    return row?.id;
  }

  /** The records nearest to `query` by cosine similarity, best first. */
  nearest(engine: string, query: readonly number[], options: NearestOptions): VectorHit[] {
    const rows = this.prepare(
      `SELECT m.key AS key, v.vector AS vector FROM memory_vectors v JOIN memories m ON m.id = v.memory_id
       WHERE v.engine = ? AND (? IS NULL OR m.source IS NULL OR m.source <> ?)
       ORDER BY v.memory_id DESC LIMIT ?`,
    ).all(engine, options.excludeSource ?? null, options.excludeSource ?? null, options.window ?? VECTOR_WINDOW) as { key: string; vector: Uint8Array }[];
    return rankNearest(rows, query, options);
  }

  /** How many vectors `engine` has (tests, reports). */
  count(engine: string): number {
    return Number((this.prepare('SELECT count(*) AS n FROM memory_vectors WHERE engine = ?').get(engine) as { n: number }).n);
  }

  private prepare(sql: string): StatementSync {
    let statement = this.statements.get(sql);
    if (!statement) this.statements.set(sql, (statement = this.store.database.prepare(sql)));
    return statement;
  }
}

/** The `rows` nearest to `query` (exact cosine similarity, brute force), best first. */
export function rankNearest(rows: Iterable<{ key: string; vector: Uint8Array }>, query: readonly number[], options: Pick<NearestOptions, 'limit' | 'minSimilarity'>): VectorHit[] {
  const q = normalise(query);
  const floor = options.minSimilarity ?? -1;
  const hits: VectorHit[] = [];
  for (const row of rows) {
    const vector = decode(row.vector);
    if (vector.length !== q.length) continue;
    let dot = 0;
    for (let i = 0; i < q.length; i++) dot += q[i]! * vector[i]!;
    if (dot >= floor) hits.push({ key: row.key, similarity: dot });
  }
  hits.sort((a, b) => b.similarity - a.similarity);
  return hits.slice(0, options.limit);
}

/** A vector as stored: normalised, as the bytes of a Float32Array. */
export function encodeVector(vector: readonly number[]): Uint8Array {
  return encode(normalise(vector));
}

function normalise(vector: readonly number[]): Float32Array {
  let norm = 0;
  for (const value of vector) norm += value * value;
  norm = Math.sqrt(norm);
  const out = new Float32Array(vector.length);
  if (norm > 0) for (let i = 0; i < vector.length; i++) out[i] = vector[i]! / norm;
  return out;
}

function encode(vector: Float32Array): Uint8Array {
  return new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength);
}

function decode(blob: Uint8Array): Float32Array {
  const length = Math.floor(blob.byteLength / 4);
  if (blob.byteOffset % 4 === 0) return new Float32Array(blob.buffer, blob.byteOffset, length);
  // A Float32Array view needs 4-byte alignment: copy an unaligned BLOB first.
  return new Float32Array(new Uint8Array(blob).buffer, 0, length);
}
