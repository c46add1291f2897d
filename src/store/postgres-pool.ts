import pg from 'pg';

/**
 * A connection pool that outlives its server going away (a restart, a crash, a failover): the
 * queries in flight fail, and the next ones connect again. node-postgres reports a lost
 * connection as an 'error' event, which, with no listener, ends the process: on the pool for an
 * idle connection, and on the connection itself for one checked out with `pool.connect()` (the
 * pool listens only while a connection is idle or runs `pool.query`). Both are heard here; the
 * failed queries carry the error to whoever ran them, so the events themselves need no action.
 */
export function openPostgresPool(url: string, maxConnections: number): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: maxConnections });
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}
