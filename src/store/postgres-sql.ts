import type pg from 'pg';

/** Statement helpers every PostgreSQL store shares (the journal, the wake store, fork and rewind). */

/**
 * A statement of an agent's store: each `$agent` in it becomes one more parameter bound to the
 * store's agent id, so no statement can forget whose rows it touches without it showing.
 */
export function agentScoped(sql: string, values: readonly unknown[], agentId: string): [string, unknown[]] {
  if (!sql.includes('$agent')) return [sql, [...values]];
  const placeholder = `$${values.length + 1}`;
  return [sql.replaceAll('$agent', () => placeholder), [...values, agentId]];
}

/**
 * Runs `fn` on one pooled connection between BEGIN and COMMIT; rolled back if it throws.
 * `begin` may carry more statements after BEGIN, sent in the same round trip (a simple query:
 * no parameters, so any value in it must be a literal quoted with escapeLiteral).
 */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>, begin = 'BEGIN'): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query(begin);
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
