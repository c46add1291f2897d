import type * as NodeSqlite from 'node:sqlite';

/**
 * node:sqlite, loaded when this module runs rather than linked with the module graph: on a Node.js
 * without it, importing acx then reaches the version check (src/node-guard.ts), which says what
 * Node acx needs, instead of failing to link with "No such built-in module: node:sqlite".
 */
const sqlite = process.getBuiltinModule?.('node:sqlite') as typeof NodeSqlite | undefined;

export const DatabaseSync = sqlite?.DatabaseSync as typeof NodeSqlite.DatabaseSync;
export type DatabaseSync = NodeSqlite.DatabaseSync;
export type StatementSync = NodeSqlite.StatementSync;
