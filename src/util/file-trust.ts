import fs from 'node:fs';
import path from 'node:path';

/**
 * Whether a file acx is about to run as code (a tool plugin) or start processes from (an MCP
 * drop-in) can only have been put there by the user acx runs as, or by root. Anyone else who
 * could write the file, or the directory holding it (and so add or replace files there), could
 * run code as acx's user. Returns why not, with the command that fixes it; undefined when it
 * is safe. A symbolic link is judged by its own directory and by the file it points to.
 */
export function untrustedFileReason(file: string): string | undefined {
  const places = [{ file, dir: path.dirname(file) }];
  let link: fs.Stats;
  try {
    link = fs.lstatSync(file);
    if (link.isSymbolicLink()) {
      const real = fs.realpathSync(file);
      places.push({ file: real, dir: path.dirname(real) });
    }
  } catch (error) {
    return `it cannot be checked (${(error as NodeJS.ErrnoException).code ?? String(error)})`;
  }
  for (const place of places) {
    const reason = untrustedEntry(place.file, 'it') ?? untrustedEntry(place.dir, `its directory ${place.dir}`);
    if (reason) return reason;
  }
  return undefined;
}

function untrustedEntry(entry: string, what: string): string | undefined {
  const stat = fs.statSync(entry);
  const user = process.geteuid?.();
  if (user !== undefined && stat.uid !== user && stat.uid !== 0) {
    return `${what} is owned by uid ${stat.uid}, not by the user acx runs as (uid ${user}) or root; only they may hold code acx runs (fix: chown ${user} ${entry})`;
  }
  const writers = [(stat.mode & 0o020) !== 0 ? 'group' : '', (stat.mode & 0o002) !== 0 ? 'others' : ''].filter(Boolean);
  if (writers.length > 0) {
    const mode = (stat.mode & 0o7777).toString(8).padStart(4, '0');
    return `${what} is writable by ${writers.join(' and ')} (mode ${mode}), so someone else could change the code acx runs (fix: chmod go-w ${entry})`;
  }
  return undefined;
}
