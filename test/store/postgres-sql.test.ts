// A transaction's last write sent with its COMMIT (postgres-sql.ts, CommitWith): written and
// committed together, or, when it fails, nothing of the transaction stays and the connection
// goes back to the pool usable. On a real throwaway PostgreSQL cluster (skipped, saying why,
// when the binaries are missing).
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/store/postgres-sql.ts';
import { POSTGRES_SKIP, postgresForSuite } from '../support/postgres.ts';

const postgres = postgresForSuite();
let pool: pg.Pool | undefined;
afterEach(async () => {
  await pool?.end();
  pool = undefined;
});

async function openTable(): Promise<pg.Pool> {
  pool = new pg.Pool({ connectionString: postgres.database('sql'), max: 1 });
  await pool.query('CREATE TABLE notes (id integer PRIMARY KEY, body text NOT NULL)');
  return pool;
}

const bodies = async (db: pg.Pool) => (await db.query<{ id: number; body: string }>('SELECT id, body FROM notes ORDER BY id')).rows.map((row) => `${row.id}:${row.body}`);

describe('inTransaction: a last write sent with the COMMIT', () => {
  it.skipIf(POSTGRES_SKIP !== '')(`commits the last write with the others, its values quoted as literals${POSTGRES_SKIP}`, async () => {
    const db = await openTable();
    const result = await inTransaction(db, async (client, _begun, commitWith) => {
      await client.query('INSERT INTO notes VALUES ($1, $2)', [1, 'first']);
      commitWith('INSERT INTO notes VALUES ($1, $2)', [2, "it's; DROP TABLE notes; --"]);
      return 'answered';
    });
    expect(result).toBe('answered');
    expect(await bodies(db)).toEqual(['1:first', "2:it's; DROP TABLE notes; --"]);
  });

  it.skipIf(POSTGRES_SKIP !== '')(`a last write that fails takes the whole transaction back, and the connection serves the next query${POSTGRES_SKIP}`, async () => {
    const db = await openTable();
    await db.query("INSERT INTO notes VALUES (7, 'kept')");
    const failed = inTransaction(db, async (client, _begun, commitWith) => {
      await client.query('INSERT INTO notes VALUES ($1, $2)', [1, 'rolled back']);
      commitWith('INSERT INTO notes VALUES ($1, $2)', [7, 'a second 7']);
    });
    await expect(failed).rejects.toMatchObject({ code: '23505' });
    expect(await bodies(db)).toEqual(['7:kept']);
    expect(db.totalCount, 'one connection, given back and reused').toBe(1);
  });

  it.skipIf(POSTGRES_SKIP !== '')(`refuses a second last write, writing nothing${POSTGRES_SKIP}`, async () => {
    const db = await openTable();
    const twice = inTransaction(db, async (_client, _begun, commitWith) => {
      commitWith('INSERT INTO notes VALUES ($1, $2)', [1, 'one']);
      commitWith('INSERT INTO notes VALUES ($1, $2)', [2, 'two']);
    });
    await expect(twice).rejects.toThrow('one last write');
    expect(await bodies(db)).toEqual([]);
  });
});
