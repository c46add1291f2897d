import fs from 'node:fs';
import path from 'node:path';

/**
 * Removes a directory tree that a sandboxed command (or acx itself) may have left unreadable.
 *
 * Root ignores file modes; an ordinary user does not: a directory without read or execute
 * permission cannot be listed, one without write permission cannot be emptied, so a plain
 * recursive remove of a tree holding a mode-000 folder (acx's own mask stand-in, or what a
 * command did to its HOME) fails with EACCES. The tree is ours (a sandboxed command's files are
 * owned by acx's user on the host), so when the first attempt fails every directory in it that
 * we own is given back u+rwx and the remove is tried once more.
 *
 * Never throws: cleanup must not replace the answer of whatever it cleans up after. The error
 * that remains, if any, is returned for the caller to log.
 */
export function removeTree(target: string): Error | undefined {
  try {
    fs.rmSync(target, { recursive: true, force: true });
    return undefined;
  } catch (first) {
    const code = (first as NodeJS.ErrnoException).code;
    if (code !== 'EACCES' && code !== 'EPERM' && code !== 'ENOTEMPTY') return first as Error;
  }
  openUp(target);
  try {
    fs.rmSync(target, { recursive: true, force: true });
    return undefined;
  } catch (error) {
    return error as Error;
  }
}

/** Gives every directory below `dir` (itself included) u+rwx where we may; symlinks are not followed. */
function openUp(dir: string): void {
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(dir);
  } catch {
    return;
  }
  if (!stat.isDirectory()) return;
  try {
    if ((stat.mode & 0o700) !== 0o700) fs.chmodSync(dir, (stat.mode & 0o7777) | 0o700);
  } catch {
    return; // not ours: the second remove reports it
  }
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries) if (entry.isDirectory()) openUp(path.join(dir, entry.name));
}
