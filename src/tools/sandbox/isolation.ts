import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * OS isolation for the `execute` sandbox, probed at run time: bubblewrap (`bwrap`) first, then
 * util-linux `unshare`. Either gives the command no network, a read-only system and a writable
 * workspace (and a private HOME). When neither works, `none` says why, so `acx resolved-config`
 * can report what is actually active.
 */
export type IsolationKind = 'bwrap' | 'unshare' | 'none';

export interface IsolationInfo {
  kind: IsolationKind;
  reason: string;
}

export interface SandboxLayout {
  workspace: string;
  home: string;
}

const SYSTEM_DIRS = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

export function findExecutable(name: string, envPath = process.env.PATH ?? ''): string | undefined {
  const dirs = [...envPath.split(path.delimiter).filter((dir) => path.isAbsolute(dir)), ...SYSTEM_DIRS];
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
  const { workspace, home } = layout;
  if (kind === 'bwrap') {
    return {
      file: executable ?? 'bwrap',
      args: [
        '--ro-bind', '/', '/',
        '--dev', '/dev',
        '--proc', '/proc',
        // Hide places where host credentials usually live; the private HOME and workspace come back below.
        '--tmpfs', '/tmp',
        '--tmpfs', '/root',
        '--tmpfs', '/home',
        '--tmpfs', '/run',
        '--bind', home, home,
        '--bind', workspace, workspace,
        '--unshare-all', // includes the network
        // Without this, a sandbox started by root keeps its capabilities and can remount / read-write.
        '--cap-drop', 'ALL',
        '--die-with-parent',
        '--new-session',
        '--chdir', workspace,
        '/bin/sh', '-c', command,
      ],
    };
  }
  if (kind === 'unshare') {
    const asRoot = typeof process.geteuid === 'function' && process.geteuid() === 0;
    return {
      file: executable ?? 'unshare',
      args: [
        ...(asRoot ? [] : ['--user', '--map-root-user']),
        '--net', '--mount', '--pid', '--fork', '--kill-child', '--mount-proc',
        '--', '/bin/sh', '-c', UNSHARE_SCRIPT, 'acx-sandbox', workspace, home, command,
      ],
    };
  }
  return { file: '/bin/sh', args: ['-c', command] };
}

/**
 * Runs inside the new mount namespace (private propagation): keep the workspace and HOME
 * writable as their own mounts, make the root mount read-only (must succeed), then every other
 * mount read-only except the kernel's pseudo file systems, then run the command with every
 * capability dropped (setpriv) so it cannot remount anything read-write again.
 */
const UNSHARE_SCRIPT = `set -e
ws=$1; home=$2; cmd=$3
mount --bind "$ws" "$ws"
mount --bind "$home" "$home"
mount -o remount,bind,ro /
awk '{print $5}' /proc/self/mountinfo | while IFS= read -r mp; do
  mp=$(printf '%b' "$mp")
  case "$mp" in "$ws"|"$home"|/|/proc|/proc/*|/dev|/dev/*|/sys|/sys/*) continue;; esac
  mount -o remount,bind,ro "$mp" 2>/dev/null || true
done
cd "$ws"
exec setpriv --no-new-privs --bounding-set=-all --inh-caps=-all /bin/sh -c "$cmd"`;

let cached: Promise<IsolationInfo> | undefined;
const cachedKinds = new Map<IsolationKind, Promise<IsolationInfo>>();

/**
 * Which OS isolation works here: bwrap, else unshare, else none (with the reasons). The probe
 * runs a real command through each wrapper and checks that the network is gone, the system is
 * read-only and the workspace writable. Cached per process unless `fresh`.
 */
export function detectIsolation(options: { fresh?: boolean } = {}): Promise<IsolationInfo> {
  if (options.fresh || !cached) cached = probeAll();
  return cached;
}

/** Whether one particular kind works here (`kind` in the answer is `none` when it does not). */
export function probeIsolation(kind: Exclude<IsolationKind, 'none'>, options: { fresh?: boolean } = {}): Promise<IsolationInfo> {
  let found = cachedKinds.get(kind);
  if (options.fresh || !found) {
    found = probeKind(kind);
    cachedKinds.set(kind, found);
  }
  return found;
}

async function probeAll(): Promise<IsolationInfo> {
  const notes: string[] = [];
  for (const kind of ['bwrap', 'unshare'] as const) {
    const info = await probeIsolation(kind);
    if (info.kind !== 'none') return info;
    notes.push(info.reason);
  }
  return { kind: 'none', reason: notes.join('; ') };
}

async function probeKind(kind: Exclude<IsolationKind, 'none'>): Promise<IsolationInfo> {
  if (process.platform !== 'linux') {
    return { kind: 'none', reason: `OS isolation needs Linux (bwrap or unshare); this is ${process.platform}` };
  }
  const executable = findExecutable(kind);
  if (!executable) return { kind: 'none', reason: `${kind} is not installed` };
  if (kind === 'unshare' && !findExecutable('setpriv')) {
    return { kind: 'none', reason: 'unshare needs setpriv (util-linux) to drop capabilities, and it is not installed' };
  }
  const failure = await probe(kind, executable);
  if (failure) return { kind: 'none', reason: `${kind} at ${executable} does not work here (${failure})` };
  return { kind, reason: `${kind} at ${executable}: no network, read-only system, writable workspace` };
}

/** Returns undefined when the isolation works, else what went wrong. */
async function probe(kind: 'bwrap' | 'unshare', executable: string): Promise<string | undefined> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'acx-isolation-probe-'));
  const workspace = path.join(root, 'ws');
  const home = path.join(root, 'home');
  fs.mkdirSync(workspace);
  fs.mkdirSync(home);
  // Writes in the workspace must work; writes to the system must fail; only `lo` may exist.
  const check = [
    'echo ok > ./probe',
    'if touch /usr/.acx-probe 2>/dev/null; then rm -f /usr/.acx-probe; echo system-writable; exit 3; fi',
    'if mount -o remount,bind,rw / 2>/dev/null; then echo system-remountable; exit 5; fi',
    "n=$(awk 'NR>2 && $1 != \"lo:\" {c++} END {print c+0}' /proc/net/dev)",
    'if [ "$n" != 0 ]; then echo network-visible; exit 4; fi',
  ].join('\n');
  const { file, args } = wrapCommand(kind, { workspace, home }, check, executable);
  try {
    const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn(file, args, { cwd: workspace, stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: SYSTEM_DIRS.join(':') } });
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
    fs.rmSync(root, { recursive: true, force: true });
  }
}
