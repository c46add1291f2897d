import { chmodSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Database, openDatabase } from '../store/database.ts';
import { PLATFORM_MIGRATIONS } from './schema.ts';

/**
 * A platform home: `platform.db` (users, timelines, everything on them, the delivery outbox)
 * and `assets/<timeline>/<asset>` (uploaded files). The directory is the operator's alone
 * (mode 0700): it holds token hashes and every file peers shared.
 */
export interface PlatformHome {
  dir: string;
  dbPath: string;
  assetsDir: string;
}

export function platformHome(dir: string): PlatformHome {
  const root = resolve(dir);
  return { dir: root, dbPath: join(root, 'platform.db'), assetsDir: join(root, 'assets') };
}

export function openPlatformDb(home: PlatformHome): Database {
  mkdirSync(home.dir, { recursive: true, mode: 0o700 });
  chmodSync(home.dir, 0o700);
  mkdirSync(home.assetsDir, { recursive: true, mode: 0o700 });
  return openDatabase(home.dbPath, { migrations: PLATFORM_MIGRATIONS });
}
