import fs from 'node:fs';
import path from 'node:path';

/**
 * The folders acx loads code or configuration from: an agent directory (tools/ plugins, mcp/
 * drop-ins, agent.json, prompts, skills) and the config home (plugins, drop-ins, opt-in grants,
 * registries, model_params.json). Whatever is written there runs on the host, as acx's user, at
 * the next start. So when one of them lies inside a workspace, it is no part of the tools'
 * writable area: the file tools refuse to write there (Workspace) and a sandboxed command sees
 * it read-only (protectionMounts).
 */
export interface GuardedDirectory {
  /** What it is, in words for the model and the operator, e.g. "the agent directory". */
  label: string;
  dir: string;
  /**
   * The entries in it that acx reads. When the directory is itself a workspace root (an agent
   * that lives at the top of the repository it works on) or holds one, protecting all of it would
   * leave nothing to write: then only these are protected. They are protected in any case, for
   * one may be a symbolic link to somewhere else in a workspace.
   */
  directories: readonly string[];
  files: readonly string[];
}

export interface ProtectedPath {
  /** The real path: symbolic links followed, a part that does not exist yet appended as named. */
  path: string;
  /** In words: "the agent directory /x", or "/x/tools, part of the agent directory /x". */
  where: string;
  /** Whether it is (or, missing, would be) a directory. */
  directory: boolean;
}

/** The kernel's own limit on symbolic links followed while resolving one path. */
const MAX_SYMLINKS = 40;

/**
 * What of `guarded` lies inside the workspace `roots` (real paths), outermost only: a guarded
 * directory strictly inside a root whole, else the entries of it that are inside one. An entry
 * that holds a whole root protects that root.
 */
export function protectedPathsIn(guarded: readonly GuardedDirectory[], roots: readonly string[]): ProtectedPath[] {
  const found: ProtectedPath[] = [];
  for (const directory of guarded) {
    const label = `${directory.label} ${directory.dir}`;
    const whole = resolveLoose(directory.dir);
    const partOf = (entry: string) => (entry === whole ? label : `${entry}, part of ${label}`);
    const entries = [
      ...directory.directories.map((name) => ({ name, isDirectory: true })),
      ...directory.files.map((name) => ({ name, isDirectory: false })),
    ];
    for (const root of roots) {
      if (isBelow(whole, root)) found.push({ path: whole, where: label, directory: true });
      for (const { name, isDirectory } of entries) {
        const entry = resolveLoose(path.join(directory.dir, name));
        if (isWithin(entry, root)) found.push({ path: entry, where: partOf(entry), directory: isDirectory });
        else if (isBelow(root, entry)) found.push({ path: root, where: partOf(entry), directory: true });
      }
    }
  }
  // Outermost first, so that a path inside one already kept is dropped.
  const kept: ProtectedPath[] = [];
  for (const candidate of found.sort((a, b) => a.path.length - b.path.length)) {
    if (!kept.some((outer) => isWithin(candidate.path, outer.path))) kept.push(candidate);
  }
  return kept;
}

/** The protected path `target` (a real path) is in, if any. */
export function protectedPathOf(target: string, paths: readonly ProtectedPath[]): ProtectedPath | undefined {
  return paths.find((entry) => isWithin(target, entry.path));
}

/**
 * Where `target` leads (like `realpath -m`): every symbolic link on the way followed, and the
 * part that does not exist yet appended as named, so a link that points at a missing directory
 * is protected where that directory would be made.
 */
export function resolveLoose(target: string): string {
  const pending = path.resolve(target).split(path.sep).filter(Boolean);
  let current: string = path.sep;
  let links = 0;
  while (pending.length > 0) {
    const name = pending.shift()!;
    if (name === '.') continue;
    if (name === '..') {
      current = path.dirname(current);
      continue;
    }
    const next = path.join(current, name);
    let stat: fs.Stats;
    try {
      stat = fs.lstatSync(next);
    } catch {
      return path.join(next, ...pending);
    }
    if (stat.isSymbolicLink() && ++links <= MAX_SYMLINKS) {
      const link = fs.readlinkSync(next);
      if (path.isAbsolute(link)) current = path.sep;
      pending.unshift(...link.split(path.sep).filter(Boolean));
      continue;
    }
    current = next;
  }
  return current;
}

/** `candidate` is `dir` or below it. */
export function isWithin(candidate: string, dir: string): boolean {
  return candidate === dir || candidate.startsWith(dir === path.sep ? dir : dir + path.sep);
}

/** `candidate` is strictly below `dir`. */
export function isBelow(candidate: string, dir: string): boolean {
  return candidate !== dir && isWithin(candidate, dir);
}
