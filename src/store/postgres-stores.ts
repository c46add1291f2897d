import type { JournalStore } from './journal-store.ts';
import { PostgresJournalStore } from './postgres-journal.ts';
import { DEFAULT_AGENT_ID } from './store-url.ts';
import { PostgresWakeStore } from './postgres-wake-store.ts';
import type { WakeStore } from './wake-store.ts';

/**
 * One agent's journal and wake store on the PostgreSQL database a URL names, for the commands
 * that read or remove sessions (`acx sessions`, `acx cleanup`): both or neither, so a failure
 * leaks no pool. `agentId` is whose sessions they are (the database holds every agent's).
 */
export async function openPostgresStores(storeUrl: string, agentId: string): Promise<{ journal: JournalStore; wakes: WakeStore }> {
  const journal = await PostgresJournalStore.open(storeUrl, { agentId });
  try {
    return { journal, wakes: await PostgresWakeStore.open(storeUrl, { agentId }) };
  } catch (error) {
    await journal.close();
    throw error;
  }
}

/** Every agent with a session (journaled or woken) on the database, by id: what `acx sessions` lists there. */
export async function postgresAgentIds(storeUrl: string): Promise<string[]> {
  // Opened (so migrated: the agent_id columns exist) only to be read across agents.
  const journal = await PostgresJournalStore.open(storeUrl, { agentId: DEFAULT_AGENT_ID });
  try {
    await (await PostgresWakeStore.open(storeUrl, { agentId: DEFAULT_AGENT_ID })).close();
    const { rows } = await journal.pool.query<{ agent_id: string }>(
      'SELECT agent_id FROM acx_sessions UNION SELECT agent_id FROM acx_wake_inbox UNION SELECT agent_id FROM acx_wake_wakes ORDER BY agent_id',
    );
    return rows.map((row) => row.agent_id);
  } finally {
    await journal.close();
  }
}
