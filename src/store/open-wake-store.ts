import { join } from 'node:path';
import { SqliteWakeStore } from './sqlite-wake-store.ts';
import { DEFAULT_AGENT_ID, storeKindOf } from './store-url.ts';
import type { WakeStore } from './wake-store.ts';

/** Where an agent's wake state lives on SQLite: beside its journal, in its state directory. */
export function wakeStorePath(stateDir: string): string {
  return join(stateDir, 'wake.db');
}

export interface OpenWakeStoreOptions {
  /** The agent's state directory: the SQLite store is its wake.db. */
  stateDir: string;
  /** ACX_STORE / --store: a postgres:// URL keeps the wake store there; absent (or null), the SQLite file. */
  storeUrl?: string | null | undefined;
  /**
   * PostgreSQL: the agent whose sessions these are, as its state directory is named on SQLite
   * (`<home>/agents/<agent id>`); the database holds every agent's. Default 'default'.
   */
  agentId?: string;
  /** PostgreSQL: how long a lease lasts unrenewed, so how soon a dead wake's session is free (default 15 s). */
  leaseTtlMs?: number;
  /** PostgreSQL: called when a held lease is lost (a stalled process, the server unreachable; see `leaseLost`); SQLite leases cannot lapse. */
  onLeaseLost?: (sessionId: string) => void;
}

/**
 * The wake store a wake (or worker) uses: on PostgreSQL when `storeUrl` names it — loaded only
 * then, so a SQLite wake never loads the driver — else the SQLite file in the state directory.
 */
export async function openWakeStore(options: OpenWakeStoreOptions): Promise<WakeStore> {
  if (storeKindOf(options.storeUrl) === 'postgres') {
    const { PostgresWakeStore } = await import('./postgres-wake-store.ts');
    return PostgresWakeStore.open(options.storeUrl!, {
      agentId: options.agentId ?? DEFAULT_AGENT_ID,
      ...(options.leaseTtlMs !== undefined ? { leaseTtlMs: options.leaseTtlMs } : {}),
      ...(options.onLeaseLost ? { onLeaseLost: options.onLeaseLost } : {}),
    });
  }
  return new SqliteWakeStore(wakeStorePath(options.stateDir));
}
