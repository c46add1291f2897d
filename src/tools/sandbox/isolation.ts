import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from '../../core/logger.ts';
import { removeTree } from '../../util/remove-tree.ts';
import { processIsRoot } from '../policy.ts';
import { commandView, createCallDirectory, SANDBOX_UID, type CallDirectory, type ViewMasks, type ViewMount } from './view.ts';

/**
 * OS isolation for the `execute` sandbox, probed at run time: bubblewrap (`bwrap`) first, then
 * util-linux `unshare`. Both build the same view (see view.ts: the system read-only, the
 * workspace and a private HOME writable, nothing else of the host) and run the command with no
 * network, in its own pid, IPC and mount namespaces, as uid 65534 in a user namespace, with no
 * capabilities. When neither works, `none` says why, so `acx resolved-config` can report what
 * is actually active.
 */
export type IsolationKind = 'bwrap' | 'unshare' | 'none';

export interface IsolationInfo {
  kind: IsolationKind;
  reason: string;
}

export interface SandboxLayout {
  workspace: string;
  call: CallDirectory;
  view: readonly ViewMount[];
}

const SYSTEM_BIN_DIRS = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

export function findExecutable(name: string, envPath = process.env.PATH ?? ''): string | undefined {
  const dirs = [...envPath.split(path.delimiter).filter((dir) => path.isAbsolute(dir)), ...SYSTEM_BIN_DIRS];
  for (const dir of dirs) {
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** The argv that runs `/bin/sh -c command` inside the given isolation (for `none`, just sh). */
export function wrapCommand(kind: IsolationKind, layout: SandboxLayout, command: string, executable?: string): {
  file: string;
  args: string[];
} {
  if (kind === 'bwrap') return { file: executable ?? 'bwrap', args: bwrapArgs(layout, command) };
  if (kind === 'unshare') return { file: executable ?? 'unshare', args: unshareArgs(layout, command) };
  return { file: '/bin/sh', args: ['-c', command] };
}

function bwrapArgs({ workspace, call, view }: SandboxLayout, command: string): string[] {
  return bwrapArgv({ view, masks: call, chdir: workspace, argv: ['/bin/sh', '-c', command] });
}

/**
 * The bwrap arguments that run `argv` (no shell) in a view: a fresh read-only root holding only
 * the view's mounts, every namespace unshared (so no network but its own loopback), uid 65534,
 * no capabilities, killed with its parent, in a session of its own (no terminal injection).
 */
export function bwrapArgv({ view, masks, chdir, argv }: { view: readonly ViewMount[]; masks: ViewMasks; chdir: string; argv: readonly string[] }): string[] {
  const mounts = view.flatMap((mount): string[] => {
    switch (mount.type) {
      case 'ro-bind':
        return ['--ro-bind', mount.path, mount.path];
      case 'symlink':
        return ['--symlink', mount.target, mount.path];
      case 'proc':
        return ['--proc', '/proc'];
      case 'dev':
        return ['--dev', '/dev']; // null, zero, full, random, urandom, tty, a private pts
      case 'tmpfs':
        return ['--tmpfs', mount.path];
      case 'mask':
        return ['--ro-bind', mount.directory ? masks.maskDirectory : masks.maskFile, mount.path];
      case 'bind':
        return ['--bind', mount.path, mount.path];
    }
  });
  return [
    ...mounts,
    '--remount-ro', '/', // the new root itself (a tmpfs); the mounts in it keep their own modes
    '--unshare-all', // network, pid, ipc, uts, cgroup
    '--unshare-user',
    '--uid', String(SANDBOX_UID),
    '--gid', String(SANDBOX_UID),
    // Without this, a sandbox started by root keeps its capabilities and can remount / read-write.
    '--cap-drop', 'ALL',
    '--die-with-parent',
    '--new-session',
    '--chdir', chdir,
    ...argv,
  ];
}

/**
 * unshare gives namespaces, not a view: UNSHARE_SCRIPT builds the view itself (as root in the
 * new mount namespace, or as the mapped root of a user namespace otherwise) from the same list
 * of mounts, passed as words so that no path is ever quoted into shell code.
 */
function unshareArgs({ workspace, call, view }: SandboxLayout, command: string): string[] {
  const asRoot = processIsRoot();
  const words = view.flatMap((mount): string[] => {
    switch (mount.type) {
      case 'ro-bind':
      case 'tmpfs':
      case 'bind':
        return [mount.type, mount.path];
      case 'symlink':
        return ['symlink', mount.target, mount.path];
      case 'mask':
        return ['mask', mount.directory ? call.maskDirectory : call.maskFile, mount.path];
      case 'proc':
      case 'dev':
        return [mount.type];
    }
  });
  return [
    ...(asRoot ? [] : ['--user', '--map-root-user']),
    '--net', '--mount', '--pid', '--ipc', '--uts', '--fork', '--kill-child',
    '--', '/bin/sh', '-c', UNSHARE_SCRIPT, 'acx-sandbox', call.newRoot, workspace, command, String(SANDBOX_UID), ...words,
  ];
}

/**
 * Runs in the new mount namespace (private propagation; `mount -n`, so that nothing is recorded
 * in the host's /run/mount/utab): mounts a tmpfs as the new root, builds the view in it, pivots
 * into it, detaches the old root, makes the new root read-only, then runs the command as uid
 * 65534 of a user namespace of its own, with no capabilities and no_new_privs, so it can neither
 * remount nor change anything outside the workspace and HOME.
 */
const UNSHARE_SCRIPT = `set -eu
new=$1; ws=$2; cmd=$3; uid=$4; shift 4
# The host's mount points, read once: most system directories have none below them.
host_mounts=$(awk '{print $5}' /proc/self/mountinfo)
# Makes every mount below a read-only bind read-only too (a recursive bind keeps them writable).
read_only_below() {
  case "$host_mounts" in *"$1/"*) ;; *) return 0 ;; esac
  awk -v t="$new$1" 'index($5, t "/") == 1 {print $5}' /proc/self/mountinfo | while IFS= read -r mp; do
    mount -n -o remount,bind,ro,nosuid,nodev "$(printf '%b' "$mp")"
  done
}
mount -n -t tmpfs -o mode=0755,nosuid,nodev acx-root "$new"
while [ $# -gt 0 ]; do
  op=$1; shift
  case $op in
    ro-bind) [ -e "$new$1" ] || mkdir -p "$new$1"; mount -n --rbind -o ro,nosuid,nodev "$1" "$new$1"; read_only_below "$1"; shift ;;
    bind) mkdir -p "$new$1"; mount -n --rbind -o nosuid,nodev "$1" "$new$1"; shift ;;
    tmpfs) [ -d "$new$1" ] || mkdir -p "$new$1"; mount -n -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$new$1"; shift ;;
    symlink) [ -d "$new\${2%/*}" ] || mkdir -p "$new\${2%/*}"; ln -s "$1" "$new$2"; shift 2 ;;
    mask) mount -n --bind -o ro,nosuid,nodev "$1" "$new$2"; shift 2 ;;
    proc) mkdir -p "$new/proc"; mount -n -t proc -o nosuid,nodev,noexec proc "$new/proc" ;;
    dev)
      mkdir -p "$new/dev"; mount -n -t tmpfs -o mode=0755,nosuid,nodev acx-dev "$new/dev"
      for d in null zero full random urandom tty; do : > "$new/dev/$d"; mount -n --bind "/dev/$d" "$new/dev/$d"; done
      mkdir "$new/dev/pts" "$new/dev/shm"
      mount -n -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$new/dev/pts" 2>/dev/null && ln -s pts/ptmx "$new/dev/ptmx" || true
      ln -s /proc/self/fd "$new/dev/fd"
      ln -s /proc/self/fd/0 "$new/dev/stdin"; ln -s /proc/self/fd/1 "$new/dev/stdout"; ln -s /proc/self/fd/2 "$new/dev/stderr" ;;
    *) echo "acx-sandbox: unknown view entry $op" >&2; exit 70 ;;
  esac
done
cd "$new"
mkdir .old-root
pivot_root . .old-root
umount -n -l /.old-root
rmdir /.old-root
mount -n -o remount,bind,ro /
cd "$ws"
# The user namespace comes first (its uid map cannot be written once the capabilities are gone);
# setpriv then empties every capability set, and no_new_privs keeps them from coming back.
exec unshare --user --map-user="$uid" --map-group="$uid" --keep-caps -- \\
  setpriv --no-new-privs --bounding-set=-all --inh-caps=-all --ambient-caps=-all -- /bin/sh -c "$cmd"`;

let cached: Promise<IsolationInfo> | undefined;
const cachedKinds = new Map<IsolationKind, Promise<IsolationInfo>>();

export interface ProbeOptions {
  fresh?: boolean;
  /** Where a probe's failed cleanup is reported (it never changes the answer). */
  logger?: Logger;
}

/**
 * Which OS isolation works here: bwrap, else unshare, else none (with the reasons). The probe
 * runs a real command through each wrapper and checks that the network is gone, the system is
 * read-only and the workspace writable. Cached per process unless `fresh`.
 */
export function detectIsolation(options: ProbeOptions = {}): Promise<IsolationInfo> {
  if (options.fresh || !cached) cached = probeAll(options);
  return cached;
}

/** Whether one particular kind works here (`kind` in the answer is `none` when it does not). */
export function probeIsolation(kind: Exclude<IsolationKind, 'none'>, options: ProbeOptions = {}): Promise<IsolationInfo> {
  let found = cachedKinds.get(kind);
  if (options.fresh || !found) {
    found = probeKind(kind, options.logger);
    cachedKinds.set(kind, found);
  }
  return found;
}

async function probeAll(options: ProbeOptions): Promise<IsolationInfo> {
  const notes: string[] = [];
  for (const kind of ['bwrap', 'unshare'] as const) {
    const info = await probeIsolation(kind, options);
    if (info.kind !== 'none') return info;
    notes.push(info.reason);
  }
  return { kind: 'none', reason: notes.join('; ') };
}

async function probeKind(kind: Exclude<IsolationKind, 'none'>, logger: Logger | undefined): Promise<IsolationInfo> {
  if (process.platform !== 'linux') {
    return { kind: 'none', reason: `OS isolation needs Linux (bwrap or unshare); this is ${process.platform}` };
  }
  const executable = findExecutable(kind);
  if (!executable) return { kind: 'none', reason: `${kind} is not installed` };
  if (kind === 'unshare' && !findExecutable('setpriv')) {
    return { kind: 'none', reason: 'unshare needs setpriv (util-linux) to drop capabilities, and it is not installed' };
  }
  const failure = await probe(kind, executable, logger);
  if (failure) return { kind: 'none', reason: `${kind} at ${executable} does not work here (${failure})` };
  return { kind, reason: `${kind} at ${executable}: no network, read-only system, writable workspace, uid ${SANDBOX_UID}` };
}

/** Returns undefined when the isolation works, else what went wrong. */
async function probe(kind: 'bwrap' | 'unshare', executable: string, logger: Logger | undefined): Promise<string | undefined> {
  const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'acx-isolation-probe-'));
  const call = createCallDirectory();
  // The workspace must be writable, the system not (nor remountable); only `lo` may exist; the uid is the sandbox's.
  const check = [
    'echo ok > ./probe',
    'if touch /usr/.acx-probe 2>/dev/null; then rm -f /usr/.acx-probe; echo system-writable; exit 3; fi',
    'if mount -o remount,bind,rw / 2>/dev/null; then echo system-remountable; exit 5; fi',
    "n=$(awk 'NR>2 && $1 != \"lo:\" {c++} END {print c+0}' /proc/net/dev)",
    'if [ "$n" != 0 ]; then echo network-visible; exit 4; fi',
    `u=$(id -u); if [ "$u" != ${SANDBOX_UID} ]; then echo "runs as uid $u"; exit 6; fi`,
  ].join('\n');
  try {
    const view = await commandView(workspace, call, { maskUnreadable: processIsRoot() });
    const { file, args } = wrapCommand(kind, { workspace, call, view }, check, executable);
    const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn(file, args, { cwd: workspace, stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: SYSTEM_BIN_DIRS.join(':') } });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.on('error', (error) => {
        clearTimeout(timer);
        resolve({ code: -1, output: error.message });
      });
      child.on('close', (exitCode) => {
        clearTimeout(timer);
        resolve({ code: exitCode, output });
      });
    });
    if (code !== 0) return output.trim().split('\n')[0] || `exit code ${code}`;
    if (fs.readFileSync(path.join(workspace, 'probe'), 'utf8').trim() !== 'ok') return 'workspace not writable';
    return undefined;
  } catch (error) {
    return (error as Error).message;
  } finally {
    for (const failed of [call.remove(), removeTree(workspace)]) {
      if (failed) logger?.warn('sandbox cleanup failed', { what: 'isolation probe', reason: failed.message });
    }
  }
}
