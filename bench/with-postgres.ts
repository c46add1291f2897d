/**
 * Runs a benchmark against a throwaway local PostgreSQL cluster (the tests' one: initdb + pg_ctl
 * in a temp dir, unix socket only), passing its URL as ACX_BENCH_STORE:
 *   npx node bench/with-postgres.ts bench/engine-overhead.ts 200 8 --no-profile
 */
import { spawnSync } from 'node:child_process';
import { startPostgres } from '../test/support/postgres.ts';

const [script, ...rest] = process.argv.slice(2);
if (!script) throw new Error('usage: bench/with-postgres.ts <bench script> [args...]');
const cluster = startPostgres();
try {
  const url = cluster.createDatabase('bench');
  const run = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', script, ...rest], { stdio: 'inherit', env: { ...process.env, ACX_BENCH_STORE: url } });
  process.exitCode = run.status ?? 1;
} finally {
  cluster.stop();
}
