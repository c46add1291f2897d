import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';
import { agentScoped, literal, NamedStatements, withLiterals } from './postgres-sql.ts';

/**
 * How a PostgreSQL store's transactions reach the server in as few round trips as they can.
 * A transaction holds one pooled connection; every write made inside it (found through
 * AsyncLocalStorage, so the callers need not change) runs on that connection, and commits with
 * it or not at all.
 *
 * A write whose result nobody reads is held inside its transaction and sent with the next
 * statement that must go out (a read, or the COMMIT), as one simple-protocol query: an engine
 * step's commit (the previous step's settlement + the new assistant message) is one round trip
 * instead of five. A transaction whose writes all go out at its end is that one query alone,
 * with no BEGIN/COMMIT: the server runs a multi-statement query as one transaction and answers
 * once it has committed. The hot writes are prepared once per connection and sent as EXECUTE
 * (`PreparedWrite`), so the server does not parse and plan them again every step.
 */

/** A statement prepared on every connection: the name it is PREPAREd under, and how many values it binds before the agent's. */
export interface PreparedWrite {
  name: string;
  arity: number;
  /**
   * The writes this one statement stands for, in order: a transaction that holds exactly these
   * sends one EXECUTE of it, their values in turn, instead of one statement each. The server
   * then runs one statement (one plan, one executor start, one reply) where it would run several.
   */
  fuses?: readonly string[];
}

type Queryable = pg.Pool | pg.PoolClient;

/**
 * An open transaction: its connection, whether BEGIN has reached the server, and the writes held
 * for the next round trip. A held write's error surfaces from that round trip (at the latest the
 * COMMIT), so the transaction still fails whole; nothing inside one reads a held write's result.
 */
interface Batch {
  client: pg.PoolClient;
  begun: boolean;
  held: Held[];
}

/** A held write: the statement as the store wrote it, and its values (the agent's not among them). */
interface Held {
  sql: string;
  values: readonly unknown[];
}

/** SQLSTATE invalid_sql_statement_name: an EXECUTE of a name this connection has not prepared. */
const MISSING_PREPARED_STATEMENT = '26000';

export class PostgresWriteBatches {
  private readonly pool: pg.Pool;
  private readonly agentId: string;
  private readonly preparedWrites: ReadonlyMap<string, PreparedWrite>;
  private readonly ready: () => Promise<void>;
  private readonly tx = new AsyncLocalStorage<Batch>();
  private readonly named: NamedStatements;
  /** Connections that hold the PREPAREs (a connection the pool replaces is a new object). */
  private readonly prepared = new WeakSet<pg.PoolClient>();
  /** The PREPAREs for the prepared writes, sent once on each new connection before its first transaction. */
  private readonly prepareAll: string;
  /** The prepared writes that stand for several (PreparedWrite.fuses). */
  private readonly fusions: Array<PreparedWrite & { fuses: readonly string[] }>;

  /**
   * `preparedWrites` maps each hot statement (as the store writes it, with `$agent`) to its
   * PreparedWrite; `ready` is awaited before the first statement goes out (the migrations).
   */
  constructor(
    pool: pg.Pool,
    agentId: string,
    preparedWrites: ReadonlyMap<string, PreparedWrite>,
    ready: () => Promise<void>,
  ) {
    this.pool = pool;
    this.named = new NamedStatements(pool);
    this.agentId = agentId;
    this.preparedWrites = preparedWrites;
    this.ready = ready;
    this.prepareAll = [...preparedWrites]
      .map(([sql, { name, arity }]) => `PREPARE ${name} AS ${agentScoped(sql, new Array(arity), '')[0]}`)
      .join(';\n');
    this.fusions = [...preparedWrites.values()].filter((write): write is PreparedWrite & { fuses: readonly string[] } => write.fuses !== undefined);
  }

  /** Where a statement that must be answered now goes: the open transaction's connection (after its held writes), or the pool. */
  async db(): Promise<Queryable> {
    const batch = this.tx.getStore();
    if (batch) {
      await this.flush(batch);
      return batch.client;
    }
    await this.ready();
    return this.pool;
  }

  /** Whether the caller runs inside a transaction of this store (what it reads may still roll back). */
  inTransaction(): boolean {
    return this.tx.getStore() !== undefined;
  }

  async rows<R extends pg.QueryResultRow>(sql: string, values: unknown[] = []): Promise<R[]> {
    return (await this.query<R>(sql, values)).rows;
  }

  async run(sql: string, values: unknown[] = []): Promise<number> {
    return (await this.query(sql, values)).rowCount ?? 0;
  }

  /** A statement answered now: on the open transaction's connection, else a named statement from the pool (NamedStatements). */
  private async query<R extends pg.QueryResultRow>(sql: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    const db = await this.db();
    const [text, bound] = agentScoped(sql, values, this.agentId);
    return db === this.pool ? this.named.query<R>(text, bound) : db.query<R>(text, bound);
  }

  /** A write nobody reads the result of: inside a transaction, held for the next round trip. */
  async write(sql: string, values: unknown[] = []): Promise<void> {
    const batch = this.tx.getStore();
    if (!batch) {
      await this.run(sql, values);
      return;
    }
    batch.held.push({ sql, values });
  }

  /** The held writes as statements: one EXECUTE of a prepared write that fuses them all, or one statement each. */
  private statementsOf(held: readonly Held[]): string[] {
    const fused = this.fusions.find((fusion) => fusion.fuses.length === held.length && fusion.fuses.every((sql, i) => held[i]!.sql === sql));
    if (fused) return [this.execute(fused, held.flatMap((write) => write.values))];
    return held.map(({ sql, values }) => {
      const prepared = this.preparedWrites.get(sql);
      return prepared ? this.execute(prepared, values) : withLiterals(...agentScoped(sql, values, this.agentId));
    });
  }

  /** An EXECUTE of a prepared write: it binds the agent last (see the constructor), so its values are written out in order. */
  private execute(prepared: PreparedWrite, values: readonly unknown[]): string {
    return `EXECUTE ${prepared.name}(${[...values, this.agentId].map((value, i) => literal(value, i + 1)).join(', ')})`;
  }

  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    if (this.tx.getStore()) return fn();
    await this.ready();
    const client = await this.connect();
    const batch: Batch = { client, begun: false, held: [] };
    try {
      const result = await this.tx.run(batch, fn);
      if (batch.begun || batch.held.length > 0) await this.flush(batch, 'COMMIT');
      return result;
    } catch (error) {
      if (batch.begun) await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  /**
   * Sends the held writes in one round trip: after BEGIN (once) when the transaction goes on, or,
   * at its end with nothing sent before, alone — one multi-statement query is one transaction.
   */
  private async flush(batch: Batch, end?: 'COMMIT'): Promise<void> {
    const first = !batch.begun;
    const whole = end !== undefined && first;
    const held = this.statementsOf(batch.held);
    const statements = whole ? held : [...(first ? ['BEGIN'] : []), ...held, ...(end ? [end] : [])];
    batch.begun ||= !whole;
    batch.held = [];
    if (statements.length === 0) return;
    const text = statements.join(';\n');
    try {
      await batch.client.query(text);
    } catch (error) {
      // A connection can lose what it prepared (DISCARD ALL, a pooler handing it another server
      // session). When this was the transaction's first query, its failure left nothing written:
      // end the aborted transaction, prepare again and send it once more.
      if (!first || (error as { code?: unknown }).code !== MISSING_PREPARED_STATEMENT) throw error;
      await batch.client.query(`ROLLBACK;\nDEALLOCATE ALL;\n${this.prepareAll}`);
      await batch.client.query(text);
    }
  }

  /** Takes a connection for a transaction, preparing the prepared writes on it the first time. */
  private async connect(): Promise<pg.PoolClient> {
    const client = await this.pool.connect();
    if (this.prepared.has(client)) return client;
    try {
      await client.query(this.prepareAll);
    } catch (error) {
      client.release(error as Error);
      throw error;
    }
    this.prepared.add(client);
    return client;
  }
}
