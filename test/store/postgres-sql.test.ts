// The statement helpers the PostgreSQL stores share (postgres-sql.ts). A transaction's last write
// sent with its COMMIT (CommitWith): written and committed together, or, when it fails, nothing
// of the transaction stays and the connection goes back to the pool usable. Statements sent as
// named prepared statements (NamedStatements): prepared once per connection, and answered still
// when the server lost them or a table changed shape under one. On a real throwaway PostgreSQL
// cluster (skipped, saying why, when the binaries are missing).
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { inTransaction, NamedStatements } from '../../src/store/postgres-sql.ts';
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

/** The statements the pool's one connection holds prepared at the protocol level (not by SQL PREPARE). */
const preparedOn = async (db: pg.Pool) =>
  (await db.query<{ name: string; statement: string }>('SELECT name, statement FROM pg_prepared_statements WHERE NOT from_sql ORDER BY name')).rows;

describe('NamedStatements: parsed and planned once per connection', () => {
  it.skipIf(POSTGRES_SKIP !== '')(`prepares a statement once on a connection and runs it by name after${POSTGRES_SKIP}`, async () => {
    const db = await openTable();
    const named = new NamedStatements(db);
    const insert = 'INSERT INTO notes VALUES ($1, $2)';
    for (const [id, body] of [[1, 'one'], [2, 'two'], [3, 'three']] as const) await named.query(insert, [id, body]);
    expect(await bodies(db)).toEqual(['1:one', '2:two', '3:three']);
    expect(await preparedOn(db)).toEqual([{ name: expect.stringMatching(/^acx_[0-9a-f]{24}$/), statement: insert }]);
  });

  it.skipIf(POSTGRES_SKIP !== '')(`a connection that lost its statements still answers, and the store sends them unnamed from then on${POSTGRES_SKIP}`, async () => {
    const db = await openTable();
    const named = new NamedStatements(db);
    const select = 'SELECT count(*)::int AS n FROM notes WHERE id > $1';
    expect((await named.query<{ n: number }>(select, [0])).rows).toEqual([{ n: 0 }]);
    // What a pooler in transaction mode, or DISCARD ALL, does to a connection's statements.
    await db.query('DEALLOCATE ALL');
    await db.query("INSERT INTO notes VALUES (1, 'one')");
    expect((await named.query<{ n: number }>(select, [0])).rows).toEqual([{ n: 1 }]);
    expect((await named.query<{ n: number }>(select, [0])).rows).toEqual([{ n: 1 }]);
    expect(await preparedOn(db), 'unnamed now: nothing prepared again').toEqual([]);
  });

  it.skipIf(POSTGRES_SKIP !== '')(`a table that changed shape under a prepared SELECT * is read again, with its new columns${POSTGRES_SKIP}`, async () => {
    const db = await openTable();
    const named = new NamedStatements(db);
    await db.query("INSERT INTO notes VALUES (1, 'one')");
    const all = 'SELECT * FROM notes WHERE id = $1';
    expect((await named.query(all, [1])).rows).toEqual([{ id: 1, body: 'one' }]);
    // A newer acx's migration, run while this process holds the statement prepared.
    await db.query("ALTER TABLE notes ADD COLUMN tag text NOT NULL DEFAULT 'new'");
    expect((await named.query(all, [1])).rows).toEqual([{ id: 1, body: 'one', tag: 'new' }]);
    await named.query(all, [1]);
    expect((await preparedOn(db)).map((row) => row.statement), 'still named: prepared again on a fresh connection').toEqual([all]);
  });
});
