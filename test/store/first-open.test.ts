// The first open of a fresh store by many processes at once: every one of them must succeed and
// find the schema complete. Real child processes, one real SQLite file, released together at a
// barrier (each waits for a file to appear), so their migrations overlap as a fleet's would.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DatabaseSync } from 'node:sqlite';
import { scaled } from '../support/time-scale.ts';

const ROOT = join(import.meta.dirname, '../..');
const PROCESSES = 16;

/** The stores acx opens on first use: the module and how to open one at `path` from it (`m`). */
const STORES = [
  { name: 'the wake store', module: 'src/store/sqlite-wake-store.ts', open: 'new m.SqliteWakeStore(path)' },
  { name: 'the journal', module: 'src/store/journal.ts', open: 'new m.Journal(path)' },
  { name: 'the memory store', module: 'src/memory/store.ts', open: 'm.openMemoryStore(path)' },
] as const;

// Each child signals it is ready, spins until the go file appears, then opens the store once.
const childSource = (module: string, open: string) => `
import { existsSync, writeFileSync } from 'node:fs';
const [path, ready, go] = process.argv.slice(1);
const m = await import(${JSON.stringify(join(ROOT, module))});
writeFileSync(ready, '');
const nap = new Int32Array(new SharedArrayBuffer(4));
while (!existsSync(go)) Atomics.wait(nap, 0, 0, 1);
const store = ${open};
store.close();
`;

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function run(source: string, args: string[]): Promise<{ status: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', source, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stderr }));
  });
}

/** The schema version and every object's SQL. */
function schema(path: string): { version: number; objects: string[] } {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const { user_version } = db.prepare('PRAGMA user_version').get() as { user_version: number };
    const objects = (db.prepare('SELECT type, name, sql FROM sqlite_master ORDER BY type, name').all() as Array<Record<string, string>>).map(
      (row) => `${row.type} ${row.name}: ${row.sql}`,
    );
    return { version: user_version, objects };
  } finally {
    db.close();
  }
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe('the first open of a fresh store', () => {
  for (const store of STORES) {
    it(`${PROCESSES} processes opening ${store.name} at once all succeed, and the schema is complete`, { timeout: scaled(120_000) }, async () => {
      dir = mkdtempSync(join(tmpdir(), 'acx-first-open-'));
      const path = join(dir, 'store.db');
      const go = join(dir, 'go');
      const source = childSource(store.module, store.open);
      const ready = Array.from({ length: PROCESSES }, (_, i) => join(dir, `ready-${i}`));
      const children = ready.map((flag) => run(source, [path, flag, go]));
      await until(() => ready.every((flag) => existsSync(flag)));
      expect(existsSync(path), 'nobody opened the store before the barrier').toBe(false);
      writeFileSync(go, '');
      const results = await Promise.all(children);
      const failures = results.filter((r) => r.status !== 0).map((r) => /^\w*Error\b.*$/m.exec(r.stderr)?.[0] ?? r.stderr);
      expect(failures).toEqual([]);
      // The same schema as a store opened by one process alone.
      const alone = join(dir, 'alone.db');
      expect((await run(source, [alone, join(dir, 'ready-alone'), go])).status).toBe(0);
      expect(schema(path)).toEqual(schema(alone));
    });
  }
});
