import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { removeTree } from '../../util/remove-tree.ts';
import type { GuardedDirectory } from './protected.ts';
import { protectionMounts } from './protected-mounts.ts';

/**
 * What an isolated command sees of the file system, the same for bubblewrap and for unshare:
 * a fresh, empty root with only what a command needs — the system directories read-only, its
 * private HOME and the workspace writable — and fresh tmpfs over every place where processes
 * usually leave sockets or files for each other (/tmp, /var/tmp, /run, /var/run, /dev/shm).
 * Nothing else of the host is there: not /home, /root or /var, not other agents' state, not a
 * unix socket bound anywhere outside the workspace.
 *
 * A user namespace makes the command uid 65534 (nobody), but on the host it still acts as the
 * user who started acx: the kernel has no way to give it a workspace owned by root to write
 * without that (no idmapped mounts in bwrap 0.8 or util-linux 2.38). So when that user is root,
 * every /etc entry an ordinary user could not read (shadow, private keys, sockets) is covered
 * by an empty, mode-000 stand-in; with no capabilities, owning a file does not open a mode-000
 * one.
 */
export type ViewMount =
  | { type: 'ro-bind'; path: string }
  | { type: 'symlink'; path: string; target: string }
  | { type: 'proc' }
  | { type: 'dev' }
  | { type: 'tmpfs'; path: string }
  | { type: 'mask'; path: string; directory: boolean }
  | { type: 'bind'; path: string };

/** The uid and gid a command runs as inside its user namespace. */
export const SANDBOX_UID = 65534;

/** The system directories a command needs, read-only; merged-/usr links are recreated as links. */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc'];
const FRESH_DIRS = ['/tmp', '/var/tmp', '/run', '/var/run', '/dev/shm'];
/**
 * Kernel interfaces in /proc that a process with uid 0 may change without any capability (a
 * sysctl such as kernel.core_pattern is a way to run code as root on the host), read-only; and
 * ones that only leak, covered. The same lists container runtimes use for root in a container.
 */
const PROC_READ_ONLY = ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'];
const PROC_MASKED = ['/proc/acpi', '/proc/asound', '/proc/kcore', '/proc/keys', '/proc/latency_stats', '/proc/sched_debug', '/proc/scsi', '/proc/timer_list'];
/** A larger /etc than this is not walked for masks: the sandbox refuses to start instead. */
const MAX_ETC_ENTRIES = 50_000;

/** The per-call scratch directory: HOME, the new root's mount point, the mask stand-ins. */
export interface CallDirectory {
  /** The private HOME (with tmp/ for TMPDIR), visible in the sandbox at the same path. */
  home: string;
  /** An empty directory the unshare wrapper mounts its new root on. */
  newRoot: string;
  /** Empty, mode-000 stand-ins mounted read-only over entries the command must not read. */
  maskFile: string;
  maskDirectory: string;
  /** Removes the directory, mode-000 stand-ins and all; never throws: the error, if any, is returned to be logged. */
  remove(): Error | undefined;
}

/** The mode-000 stand-ins a view's `mask` entries are covered with. */
export type ViewMasks = Pick<CallDirectory, 'maskFile' | 'maskDirectory'>;

export function createCallDirectory(): CallDirectory {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'acx-exec-'));
  const call: CallDirectory = {
    home: path.join(dir, 'home'),
    newRoot: path.join(dir, 'root'),
    ...createMasks(dir),
    remove: () => removeTree(dir),
  };
  fs.mkdirSync(path.join(call.home, 'tmp'), { recursive: true });
  fs.mkdirSync(call.newRoot);
  return call;
}

/** Creates the empty, mode-000 mask stand-ins in `dir` (which must exist). */
export function createMasks(dir: string): ViewMasks {
  const masks = { maskFile: path.join(dir, 'mask-file'), maskDirectory: path.join(dir, 'mask-dir') };
  fs.writeFileSync(masks.maskFile, '', { mode: 0 });
  fs.mkdirSync(masks.maskDirectory, { mode: 0 });
  fs.chmodSync(masks.maskDirectory, 0); // mkdir's mode is filtered by the umask; 0 is what is meant
  return masks;
}

/**
 * The mounts, in order, that make up a command's view. Later mounts cover earlier ones, so the
 * writable workspace and HOME come last (either may lie below a fresh /tmp or a system dir).
 */
export interface ViewOptions {
  maskUnreadable: boolean;
  additionalRoots?: readonly string[];
  /**
   * Only these entries of /etc (names directly below it) instead of all of it: a process that
   * needs no DNS or login configuration sees its loader cache, users, certificates and time zone.
   */
  etcEntries?: readonly string[];
  /** Further host paths the command may read (not write), at the same paths. */
  readOnly?: readonly string[];
  /** The folders acx loads code and configuration from: read-only where a writable root holds them. */
  guarded?: readonly GuardedDirectory[];
}

export async function commandView(workspace: string, call: Pick<CallDirectory, 'home'>, options: ViewOptions): Promise<ViewMount[]> {
  const view: ViewMount[] = [];
  const pushEntry = (entry: string) => {
    const stat = statOrUndefined(entry, { follow: false });
    if (!stat) return; // e.g. no /lib32 on this machine
    if (stat.isSymbolicLink()) view.push({ type: 'symlink', path: entry, target: fs.readlinkSync(entry) });
    else if (stat.isDirectory() || stat.isFile()) view.push({ type: 'ro-bind', path: entry });
  };
  const etc = options.etcEntries?.map((name) => path.join('/etc', name));
  for (const dir of SYSTEM_DIRS) {
    if (dir === '/etc' && etc) etc.forEach(pushEntry);
    else pushEntry(dir);
  }
  view.push({ type: 'proc' });
  for (const entry of PROC_READ_ONLY) if (fs.existsSync(entry)) view.push({ type: 'ro-bind', path: entry });
  for (const entry of PROC_MASKED) {
    const stat = statOrUndefined(entry);
    if (stat) view.push({ type: 'mask', path: entry, directory: stat.isDirectory() });
  }
  view.push({ type: 'dev' });
  for (const dir of FRESH_DIRS) view.push({ type: 'tmpfs', path: dir });
  for (const entry of options.readOnly ?? []) view.push({ type: 'ro-bind', path: entry });
  if (options.maskUnreadable) {
    const shown = (entry: string) => !etc || etc.some((root) => entry === root || entry.startsWith(root + path.sep));
    for (const entry of await unreadableEntries('/etc')) if (shown(entry.path)) view.push({ type: 'mask', ...entry });
  }
  view.push({ type: 'bind', path: call.home }, { type: 'bind', path: workspace });
  // An editor's extra roots are workspace too: writable, at the same paths.
  for (const root of options.additionalRoots ?? []) view.push({ type: 'bind', path: root });
  // Last: they cover parts of the writable roots.
  if (options.guarded) view.push(...protectionMounts([workspace, ...(options.additionalRoots ?? [])], options.guarded));
  return view;
}

/**
 * Entries below `root` that a user who is neither their owner nor in their group could not
 * read: files without o+r, directories without o+rx (not descended into), and anything that is
 * neither a file, a directory nor a symlink (a socket, a FIFO, a device). Symlinks are left as
 * they are: where they point is either in the view, and checked there, or not in it at all.
 */
export async function unreadableEntries(root: string): Promise<Array<{ path: string; directory: boolean }>> {
  const found: Array<{ path: string; directory: boolean }> = [];
  let seen = 0;
  const visit = async (dir: string): Promise<void> => {
    const entries = await fs.promises.readdir(dir, { withFileTypes: true });
    seen += entries.length;
    if (seen > MAX_ETC_ENTRIES) {
      throw new Error(`${root} has more than ${MAX_ETC_ENTRIES} entries; the sandbox does not check that many for secrets`);
    }
    const below: string[] = [];
    await Promise.all(
      entries.map(async (entry) => {
        if (entry.isSymbolicLink()) return; // the type comes with the listing: no lstat needed
        const entryPath = path.join(dir, entry.name);
        let stat: fs.Stats;
        try {
          stat = await fs.promises.lstat(entryPath);
        } catch {
          return; // vanished meanwhile
        }
        if (stat.isSymbolicLink()) return;
        if (stat.isDirectory()) {
          if ((stat.mode & 0o005) === 0o005) below.push(entryPath);
          else found.push({ path: entryPath, directory: true });
        } else if (!stat.isFile() || (stat.mode & 0o004) === 0) {
          found.push({ path: entryPath, directory: false });
        }
      }),
    );
    for (const next of below) await visit(next);
  };
  await visit(root);
  return found.sort((a, b) => a.path.localeCompare(b.path));
}

function statOrUndefined(entry: string, options: { follow?: boolean } = {}): fs.Stats | undefined {
  try {
    return options.follow === false ? fs.lstatSync(entry) : fs.statSync(entry);
  } catch {
    return undefined;
  }
}
