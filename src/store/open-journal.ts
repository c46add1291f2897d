import { join } from 'node:path';
import { DeferredJournalStore } from './deferred-journal.ts';
import { Journal } from './journal.ts';
import { type JournalStore, SqliteJournalStore } from './journal-store.ts';
import { DEFAULT_AGENT_ID, storeKindOf } from './store-url.ts';

/** Where a harness keeps its journal, as its options name it (see EngineHarnessOptions). */
export interface JournalPlace {
  /** A postgres:// URL, or a JournalStore of your own. */
  store?: string | JournalStore | undefined;
  /** The directory of the SQLite file `journal.db`. */
  home?: string | undefined;
  /** The SQLite file itself. */
  journalPath?: string | undefined;
  /** On PostgreSQL, whose sessions these are (see EngineHarnessOptions.agentId). */
  agentId?: string | undefined;
}

/** The journal a harness's options name: a store given, a postgres:// URL, or the SQLite file. */
export function openJournalStore(place: JournalPlace): JournalStore {
  const { store } = place;
  if (typeof store === 'object') return store;
  if (store !== undefined && storeKindOf(store) === 'postgres') {
    const agentId = place.agentId ?? DEFAULT_AGENT_ID;
    // pg and the PostgreSQL journal load on the journal's first use, not with the harness.
    return new DeferredJournalStore(async () => new (await import('./postgres-journal.ts')).PostgresJournalStore(store, { agentId }));
  }
  return new SqliteJournalStore(new Journal(sqliteJournalPath(place)));
}

/** The SQLite journal file a place names (whether or not the journal is kept there). */
export function sqliteJournalPath(place: Pick<JournalPlace, 'home' | 'journalPath'>): string {
  return place.journalPath ?? join(place.home ?? '.acx-home', 'journal.db');
}
