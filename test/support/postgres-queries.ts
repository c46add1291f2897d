import type pg from 'pg';

/**
 * Watches every query a pool's connections answer (the pool's own `query` and the statements of
 * a transaction on a connection it handed out): `seen(text, result)` once the server answered.
 * A connection is watched from the first time the pool hands it out.
 */
export function watchQueries(pool: pg.Pool, seen: (text: string, result: pg.QueryResult) => void): void {
  const watched = new WeakSet<pg.PoolClient>();
  pool.on('acquire', (client) => {
    if (watched.has(client)) return;
    watched.add(client);
    const query = client.query.bind(client) as (...a: unknown[]) => Promise<pg.QueryResult>;
    // The pool calls a connection's query with a callback; the stores' transactions without one.
    (client as { query: unknown }).query = (...a: unknown[]) => {
      const done = typeof a.at(-1) === 'function' ? (a.pop() as (error: unknown, result?: pg.QueryResult) => void) : undefined;
      const text = typeof a[0] === 'string' ? a[0] : String((a[0] as { text?: string }).text);
      const answered = query(...a).then((result) => {
        seen(text, result);
        return result;
      });
      if (!done) return answered;
      answered.then((result) => done(null, result), done);
      return undefined;
    };
  });
}
