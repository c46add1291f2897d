/**
 * `acx/memory` — an agent's long-term memory: the `MemoryProvider` seam the engine calls
 * (observe after a turn, context before one), the SQLite FTS5 store (`openMemoryStore`,
 * `createSqliteMemoryProvider`) and the model-facing memory tools (`createMemoryTools`).
 */
import '../node-guard.ts';
export type { MemoryExchange, MemoryProvider, MemoryScope, SqliteMemoryProvider, SqliteMemoryProviderOptions } from '../memory/provider.ts';
export { createSqliteMemoryProvider } from '../memory/provider.ts';
export type { ListOptions, MemoryRecord, MemorySearchHit, MemoryStoreOptions, SearchOptions, WriteOptions, WriteResult } from '../memory/store.ts';
export { MemoryNotFoundError, MemoryStore, openMemoryStore } from '../memory/store.ts';
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
