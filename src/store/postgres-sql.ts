import { createHash } from 'node:crypto';
import pg from 'pg';

/** Statement helpers every PostgreSQL store shares (the journal, the wake store, memory, fork and rewind). */

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
 * A statement with its $n parameters written in as literals, for a multi-statement simple query
 * (which takes no parameters). Only the stores' own statements come here, with values of the
 * few types they bind; strings go through pg's own escapeLiteral, so a value is never SQL.
 */
export function withLiterals(sql: string, values: readonly unknown[]): string {
  return sql.replace(/\$(\d+)/g, (_, n: string) => literal(values[Number(n) - 1], Number(n)));
}

/** One bound value as an SQL literal (see withLiterals); `n` names the parameter in the error. */
export function literal(value: unknown, n: number): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  if (typeof value === 'number' && Number.isFinite(value)) return `(${value})`;
  if (typeof value === 'string') return pg.escapeLiteral(value);
  throw new TypeError(`A store write bound a ${typeof value} (parameter $${n}); only strings, finite numbers, booleans and null are written as literals.`);
}

/**
 * A transaction's last write, when nothing reads its result: `fn` hands it over (statement and
 * values, as for `client.query`) instead of sending it, and it goes out with the COMMIT, in one
 * round trip. Should it fail, the COMMIT in the same query does not run and the transaction rolls
 * back whole.
 */
export type CommitWith = (sql: string, values: readonly unknown[]) => void;

/**
 * Runs `fn` on one pooled connection between BEGIN and COMMIT; rolled back if it throws.
 * `begin` may carry more statements after BEGIN, sent in the same round trip (a simple query:
 * no parameters, so any value in it must be a literal quoted with escapeLiteral).
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient, begun: pg.QueryResult[], commitWith: CommitWith) => Promise<T>,
  begin = 'BEGIN',
): Promise<T> {
  const client = await pool.connect();
  try {
    // One result per statement of `begin` (node-postgres gives a lone statement's unwrapped).
    const begun = (await client.query(begin)) as pg.QueryResult | pg.QueryResult[];
    let last: string | undefined;
    const result = await fn(client, Array.isArray(begun) ? begun : [begun], (sql, values) => {
      if (last !== undefined) throw new Error('A transaction sends one last write with its COMMIT, not two.');
      last = withLiterals(sql, values);
    });
    await client.query(last === undefined ? 'COMMIT' : `${last};\nCOMMIT`);
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/**
 * The clock of rows several hosts read, on PostgreSQL: the server's, never a host's. A host
 * whose clock jumps (a VM resumed, NTP stepping) would otherwise write times others misread: a
 * live claim taken for stale, a breaker counting wakes from the future or tripped for hours.
 * `serverNow` is the SQL for the server's time as an ISO string (what the text `at` columns hold);
 * `serverNowMs` reads it in milliseconds on the caller's client (inside its transaction).
 */
export const SERVER_NOW_ISO = `to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

export const SERVER_NOW_MS_QUERY = 'SELECT (extract(epoch from now()) * 1000)::bigint AS ms';

export async function serverNowMs(client: pg.PoolClient | pg.Pool): Promise<number> {
  return serverNowMsOf(await client.query<{ ms: string }>(SERVER_NOW_MS_QUERY));
}

/** The time SERVER_NOW_MS_QUERY read, from its result (sent in the same round trip as other statements). */
export function serverNowMsOf(result: pg.QueryResult): number {
  return Number((result.rows[0] as { ms: string }).ms);
}

/** SQLSTATE invalid_sql_statement_name: the connection holds no statement of that name. */
const NO_SUCH_STATEMENT = '26000';
/** SQLSTATE feature_not_supported, as a prepared statement whose table changed shape raises it. */
const PLAN_CHANGED = '0A000';

/**
 * A store's parameterised statements outside transactions, sent as named prepared statements:
 * the server parses and plans each once per connection instead of on every call (for a worker's
 * event, planning its unnamed statements cost the server more than running them). Names are a
 * hash of the text, so one text is prepared once per connection whoever sends it.
 *
 * Sent again, unnamed, when the server refuses one: outside a transaction a statement that
 * failed changed nothing. A connection that lost its statements (DISCARD ALL; a pooler in
 * transaction mode, whose next statement may reach another server session) makes this store
 * send unnamed statements from then on; a table that changed shape under a prepared statement
 * (a newer acx migrated it) drops that connection, whose cache is stale.
 */
export class NamedStatements {
  private readonly pool: pg.Pool;
  private named = true;
  private readonly names = new Map<string, string>();

  constructor(pool: pg.Pool) {
    this.pool = pool;
  }

  async query<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    if (!this.named) return this.pool.query<R>(text, values);
    const client = await this.pool.connect();
    let answer: pg.QueryResult<R>;
    try {
      answer = await client.query<R>({ name: this.nameOf(text), text, values });
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code !== NO_SUCH_STATEMENT && code !== PLAN_CHANGED) {
        client.release();
        throw error;
      }
      if (code === NO_SUCH_STATEMENT) this.named = false;
      // Dropped, not returned to the pool: its cache of what it prepared no longer holds.
      client.release(error as Error);
      return this.pool.query<R>(text, values);
    }
    client.release();
    return answer;
  }

  private nameOf(text: string): string {
    let name = this.names.get(text);
    if (name === undefined) {
      name = `acx_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
      this.names.set(text, name);
    }
    return name;
  }
}
