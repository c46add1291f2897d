// Where a turn stream store can be, for the tests run against both stores: a fresh SQLite file in
// a temp dir (removed after the suite), or a fresh database on the suite's throwaway PostgreSQL
// cluster (its `skip` says why when the binaries are not installed).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { POSTGRES_SKIP, type postgresForSuite } from './postgres.ts';

export type StreamPlace = [name: string, place: () => string, skip: string];

export function streamPlaces(postgres: ReturnType<typeof postgresForSuite>, name: string): StreamPlace[] {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  const sqlite = () => {
    const dir = mkdtempSync(join(tmpdir(), `acx-${name}-`));
    dirs.push(dir);
    return join(dir, 'streams.db');
  };
  return [
    ['sqlite', sqlite, ''],
    ['postgres', () => postgres.database(name), POSTGRES_SKIP],
  ];
}
