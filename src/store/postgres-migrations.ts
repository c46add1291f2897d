import type pg from 'pg';
import { AcxError } from '../core/errors.ts';
import { DEFAULT_AGENT_ID, redactUrl } from './store-url.ts';

// How every PostgreSQL store (the journal, the wake store, channel state, turn streams, memory)
// reaches its schema: checked, migrated forward once, agents kept apart.

/**
 * The forward step that scopes existing tables by agent: an `agent_id` column on each (existing
 * rows get DEFAULT_AGENT_ID; new rows must name theirs, so the default is dropped again), and each
 * primary key rebuilt with the agent first. The caller re-adds the foreign keys it dropped.
 */
export function agentScopeMigration(plan: { tables: readonly string[]; foreignKeys?: Readonly<Record<string, string>>; primaryKeys: Readonly<Record<string, string>> }): string {
  return [
    ...Object.entries(plan.foreignKeys ?? {}).map(([table, fk]) => `ALTER TABLE ${table} DROP CONSTRAINT ${fk};`),
    ...plan.tables.map((table) => `ALTER TABLE ${table} ADD COLUMN agent_id TEXT NOT NULL DEFAULT '${DEFAULT_AGENT_ID}';\nALTER TABLE ${table} ALTER COLUMN agent_id DROP DEFAULT;`),
    ...Object.entries(plan.primaryKeys).map(([table, key]) => `ALTER TABLE ${table} DROP CONSTRAINT ${table}_pkey, ADD PRIMARY KEY (agent_id, ${key});`),
  ].join('\n') + '\n';
}

/** A fixed advisory-lock key: two processes migrating one database at once take turns. */
const MIGRATION_LOCK = 0x61637831;

const now = () => new Date().toISOString();

/** Applies the migrations not yet applied, forward only, each in its own transaction. */
export async function migratePostgres(pool: pg.Pool, migrations: readonly string[], table: string): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await client.query(`CREATE TABLE IF NOT EXISTS ${table} (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`);
    const { rows } = await client.query<{ v: number | null }>(`SELECT MAX(version) AS v FROM ${table}`);
    const applied = rows[0]?.v ?? 0;
    if (applied > migrations.length) {
      throw new AcxError('store-open', `The PostgreSQL schema (${table}) is at version ${applied}, newer than this acx knows (${migrations.length}).`, {
        hint: 'Upgrade acx on this host: migrations only go forward.',
      });
    }
    for (let version = applied + 1; version <= migrations.length; version++) {
      await client.query('BEGIN');
      try {
        await client.query(migrations[version - 1]!);
        await client.query(`INSERT INTO ${table} (version, applied_at) VALUES ($1, $2)`, [version, now()]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      }
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => {});
    client.release();
  }
}

/** Checks a pool can connect, failing with what to check instead of a driver stack. */
export async function checkPostgres(pool: pg.Pool, url: string): Promise<void> {
  try {
    const client = await pool.connect();
    client.release();
  } catch (error) {
    throw new AcxError('store-open', `Cannot connect to the PostgreSQL store at ${redactUrl(url)}: ${(error as Error).message}`, {
      hint: 'Check the URL (host, port, database, user) and that the server accepts connections from here.',
      cause: error,
    });
  }
}
