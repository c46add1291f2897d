/**
 * `acx/memory` — an agent's long-term memory: the `MemoryProvider` seam the engine calls
 * (observe after a turn, context before one), the SQLite FTS5 store (`openMemoryStore`,
 * `createSqliteMemoryProvider`), the same records on PostgreSQL (`PostgresMemoryRecords`, passed
 * as `createSqliteMemoryProvider({ records })`), the model-facing memory tools (`createMemoryTools`), and the
 * semantic provider (`createSemanticMemoryProvider`) with its embedders (`createLocalHashEmbedder`,
 * `createSdkEmbedder`). Choosing one for an agent: docs/memory.md.
 */
import '../node-guard.ts';
export type { MemoryExchange, MemoryProvider, MemoryScope, SqliteMemoryProvider, SqliteMemoryProviderOptions } from '../memory/provider.ts';
export { createSqliteMemoryProvider } from '../memory/provider.ts';
export type { ListOptions, MemoryRecord, MemorySearchHit, MemoryStoreOptions, SearchOptions, WriteOptions, WriteResult } from '../memory/store.ts';
export { MemoryNotFoundError, MemoryStore, openMemoryStore } from '../memory/store.ts';
export { type MemoryRecords, type MemoryVectorIndex, openSqliteMemory, SqliteMemoryRecords } from '../memory/records.ts';
export { PostgresMemoryRecords, type PostgresMemoryOptions } from '../memory/postgres-store.ts';
export {
  createAddMemoryTool,
  createMemoryDeleteTool,
  createMemoryListTool,
  createMemoryReadTool,
  createMemorySearchTool,
  createMemoryTools,
  createMemoryWriteTool,
  createSearchMemoryTool,
  type MemoryStoreSource,
} from '../memory/tools.ts';
export {
  createSemanticMemoryProvider,
  type SemanticHit,
  type SemanticMemoryOptions,
  type SemanticMemoryProvider,
  type SemanticSearchOptions,
} from '../memory/semantic.ts';
export { createLocalHashEmbedder, LOCAL_HASH_ENGINE, localHashEmbedding } from '../memory/local-hash.ts';
export { createSdkEmbedder, type Embedder } from '../model/embedding.ts';
export { MemoryProviderError, type MemoryProviderFactoryOptions } from '../memory/choice.ts';
