import type { StoreKind } from '../store/journal-store.ts';
import {
  MemoryStore,
  type ListOptions,
  type MemoryRecord,
  type MemorySearchHit,
  type MemoryStoreOptions,
  type SearchOptions,
  type WriteOptions,
  type WriteResult,
} from './store.ts';
import { MemoryVectors, type NearestOptions, type UnindexedRecord, type VectorHit } from './vectors.ts';

/**
 * An agent's memory as its callers (the tools, the providers, a cartridge's index) see it: every
 * read and write returns a promise, so the same callers run on the embedded SQLite file (whose
 * calls complete at once) or on a PostgreSQL server shared by many agents. Whichever it is, the
 * contract is MemoryStore's (src/memory/store.ts): the same keys, values, tags, sources and
 * timestamps; an overwrite keeps createdAt; a miss names the nearest keys; search never raises
 * a syntax error and returns the best first (score: lower is better).
 */
export interface MemoryRecords {
  readonly kind: StoreKind;
  write(key: string, value: string, options?: WriteOptions): Promise<WriteResult>;
  /** Upserts many records as one unit: all are written, or (on bad input) none. */
  writeMany(entries: Iterable<{ key: string; value: string } & WriteOptions>): Promise<number>;
  get(key: string): Promise<MemoryRecord | undefined>;
  /** The record under `key`; a miss rejects with MemoryNotFoundError naming the nearest keys. */
  read(key: string): Promise<MemoryRecord>;
  suggestKeys(wanted: string, limit?: number): Promise<string[]>;
  list(options?: ListOptions): Promise<MemoryRecord[]>;
  count(prefix?: string): Promise<number>;
  delete(key: string): Promise<boolean>;
  deleteBySource(sources: readonly string[]): Promise<number>;
  search(query: string, options?: SearchOptions): Promise<MemorySearchHit[]>;
  /** The semantic provider's embedding vectors, beside these records. */
  readonly vectors: MemoryVectorIndex;
  close(): Promise<void>;
}

/**
 * Embedding vectors of memory records (see src/memory/vectors.ts for what they are and how
 * nearest neighbours are found): derived data, dropped when their record changes or goes.
 */
export interface MemoryVectorIndex {
  unindexed(engine: string, limit: number): Promise<UnindexedRecord[]>;
  save(engine: string, entries: ReadonlyArray<{ id: number; vector: readonly number[] }>): Promise<void>;
  idOf(key: string): Promise<number | undefined>;
  nearest(engine: string, query: readonly number[], options: NearestOptions): Promise<VectorHit[]>;
  count(engine: string): Promise<number>;
}

/** The SQLite memory file behind the async interface; `file` is the synchronous store itself. */
export class SqliteMemoryRecords implements MemoryRecords {
  readonly kind = 'sqlite' as const;
  readonly file: MemoryStore;
  readonly vectors: MemoryVectorIndex;

  constructor(file: MemoryStore) {
    this.file = file;
    const vectors = new MemoryVectors(file);
    this.vectors = {
      unindexed: async (engine, limit) => vectors.unindexed(engine, limit),
      save: async (engine, entries) => vectors.save(engine, entries),
      idOf: async (key) => vectors.idOf(key),
      nearest: async (engine, query, options) => vectors.nearest(engine, query, options),
      count: async (engine) => vectors.count(engine),
    };
  }

  get path(): string {
    return this.file.path;
  }

  async write(key: string, value: string, options?: WriteOptions) {
    return this.file.write(key, value, options);
  }
  async writeMany(entries: Iterable<{ key: string; value: string } & WriteOptions>) {
    return this.file.writeMany(entries);
  }
  async get(key: string) {
    return this.file.get(key);
  }
  async read(key: string) {
    return this.file.read(key);
  }
  async suggestKeys(wanted: string, limit?: number) {
    return this.file.suggestKeys(wanted, limit);
  }
  async list(options?: ListOptions) {
    return this.file.list(options);
  }
  async count(prefix?: string) {
    return this.file.count(prefix);
  }
  async delete(key: string) {
    return this.file.delete(key);
  }
  async deleteBySource(sources: readonly string[]) {
    return this.file.deleteBySource(sources);
  }
  async search(query: string, options?: SearchOptions) {
    return this.file.search(query, options);
  }
  async close() {
    this.file.close();
  }
}

/** Opens (and migrates) the SQLite memory file at `path`. */
export function openSqliteMemory(path: string, options: MemoryStoreOptions = {}): SqliteMemoryRecords {
  return new SqliteMemoryRecords(new MemoryStore(path, options));
}
