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
 * What an agent's stores and tools write, never read to prepare it: every agent's and cartridge's
 * state and the embedded platform's home under the state home (which may be the config home
 * itself, ACX_HOME=ACX_CONFIG_HOME), and the agent's workspace.
 */
export function storeWrites(stateHome: string, workspace: string): string[] {
  return [join(stateHome, 'agents'), join(stateHome, 'cartridges'), join(stateHome, 'platform'), workspace];
}

/**
 * Watches what an agent is prepared from — its directory or cartridge, and the config home — and
 * calls `onChange` with the changed path on any change there, except under `ignore` (storeWrites)
 * or on the way to it, and to a database file. An ignored directory that holds a watched path
 * (a workspace above the config home) ignores nothing. Inotify, so a job pays nothing for it. A
 * path that cannot be watched (the system's watch limit) or stops being watched counts as changed
 * (what was prepared from it may not be current), and is logged; one that does not exist yet is
 * left out: nothing is prepared from it. Returns how to stop watching.
 */
export function watchAgentFiles(paths: readonly string[], ignore: readonly string[], onChange: (changed: string) => void, logger: Logger): () => void {
  const roots = [...new Set(paths.map((p) => resolve(p)))];
  const ignored = ignore.map((dir) => resolve(dir)).filter((dir) => !roots.some((root) => inside(root, dir)));
  const watchers: FSWatcher[] = [];
  for (const path of roots) {
    let directory: boolean;
    try {
      directory = statSync(path).isDirectory();
    } catch {
      continue; // absent: nothing to prepare from there yet
    }
    const unwatched = (what: string, error: unknown) => {
      logger.warn(what, { path, error: errorMessage(error), note: 'changes there are not noticed until the process restarts' });
      onChange(path);
    };
    try {
      const watcher = watch(path, { recursive: directory, persistent: false }, (_event, name) => {
        const changed = directory && name ? join(path, name.toString()) : path;
        // Under an ignored directory, or on the way to one (a store creating its directory).
        if (!DATABASE_FILE.test(changed) && !ignored.some((dir) => inside(changed, dir) || inside(dir, changed))) onChange(changed);
      });
      watcher.on('error', (error) => unwatched('agent files no longer watched', error));
      watchers.push(watcher);
    } catch (error) {
      unwatched('agent files cannot be watched', error);
    }
  }
  return () => {
    for (const watcher of watchers) watcher.close();
  };
}
