import { join } from 'node:path';
import type { ChannelState } from './channel-state.ts';
import { SqliteChannelState } from './sqlite-channel-state.ts';
import { storeKindOf } from './store-url.ts';

/** Where an agent's timeline state lives on SQLite: beside its journal, in its state directory. */
export function channelStatePath(stateDir: string): string {
  return join(stateDir, 'channel.db');
}

export interface OpenChannelStateOptions {
  /** The agent's state directory: the SQLite state is its channel.db. */
  stateDir: string;
  /** ACX_STORE / --store: a postgres:// URL keeps the state there; absent (or null), the SQLite file. */
  storeUrl?: string | null | undefined;
  /** PostgreSQL: whose state it is (several agents share one database). */
  agentId: string;
  /** PostgreSQL: how long a claim lasts unrenewed, so how soon a dead wake's items are taken over. */
  leaseTtlMs?: number;
}

/**
 * The channel state a timeline wake (or worker, or cleanup) uses: on PostgreSQL when `storeUrl`
 * names it — loaded only then, so a SQLite wake never loads the driver — else channel.db.
 */
export async function openChannelState(options: OpenChannelStateOptions): Promise<ChannelState> {
  if (storeKindOf(options.storeUrl) === 'postgres') {
    const { PostgresChannelState } = await import('./postgres-channel-state.ts');
    return PostgresChannelState.open(options.storeUrl!, options.agentId, options.leaseTtlMs !== undefined ? { leaseTtlMs: options.leaseTtlMs } : {});
  }
  return new SqliteChannelState(channelStatePath(options.stateDir));
}
