import { type FSWatcher, statSync, watch } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { errorMessage } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';

const inside = (path: string, dir: string): boolean => {
  const rel = relative(dir, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
};

// SQLite databases and their journals: stores write them all the time (a router's, a platform's
// kept in the same home), and no agent is prepared from one.
const DATABASE_FILE = /\.db(-wal|-shm|-journal)?$/;

/**
 * Watches what an agent is prepared from — its directory or cartridge, and the config home — and
 * calls `onChange` with the changed path on any change there, except under `ignore` (the agent's
 * state and workspace, which its jobs write to) or on the way to it, and to a database file.
 * Inotify, so a job pays nothing for it. A path that does not exist yet, or that cannot be watched
 * (the system's watch limit), is logged and left out: changes there are noticed only by a
 * restart. Returns how to stop watching.
 */
export function watchAgentFiles(paths: readonly string[], ignore: readonly string[], onChange: (changed: string) => void, logger: Logger): () => void {
  const ignored = ignore.map((dir) => resolve(dir));
  const watchers: FSWatcher[] = [];
  for (const path of new Set(paths.map((p) => resolve(p)))) {
    let directory: boolean;
    try {
      directory = statSync(path).isDirectory();
    } catch {
      continue; // absent: nothing to prepare from there yet
    }
    try {
      const watcher = watch(path, { recursive: directory, persistent: false }, (_event, name) => {
        const changed = directory && name ? join(path, name.toString()) : path;
        // Under an ignored directory, or on the way to one (a store creating its directory).
        if (!DATABASE_FILE.test(changed) && !ignored.some((dir) => inside(changed, dir) || inside(dir, changed))) onChange(changed);
      });
      watcher.on('error', (error) => logger.warn('worker stopped watching agent files', { path, error: errorMessage(error), note: 'restart the worker after changing them' }));
      watchers.push(watcher);
    } catch (error) {
      logger.warn('worker cannot watch agent files', { path, error: errorMessage(error), note: 'restart the worker after changing them' });
    }
  }
  return () => {
    for (const watcher of watchers) watcher.close();
  };
}
