import type { JournalStore } from './journal-store.ts';
import { PostgresJournalStore } from './postgres-journal.ts';
import { PostgresWakeStore } from './postgres-wake-store.ts';
import type { WakeStore } from './wake-store.ts';

/**
 * The journal and the wake store a PostgreSQL URL names, for the commands that read or remove
 * sessions (`acx sessions`, `acx cleanup`): both or neither, so a failure leaks no pool.
 */
export async function openPostgresStores(storeUrl: string): Promise<{ journal: JournalStore; wakes: WakeStore }> {
  const journal = await PostgresJournalStore.open(storeUrl);
  try {
    return { journal, wakes: await PostgresWakeStore.open(storeUrl) };
  } catch (error) {
    await journal.close();
    throw error;
  }
}
