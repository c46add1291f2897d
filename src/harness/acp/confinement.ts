import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { processIsRoot } from '../../tools/policy.ts';
import { removeTree } from '../../util/remove-tree.ts';
import { bwrapArgv, findExecutable, probeIsolation } from '../../tools/sandbox/isolation.ts';
import type { GuardedDirectory } from '../../tools/sandbox/protected.ts';
import { commandView, createMasks, type ViewMasks, type ViewMount } from '../../tools/sandbox/view.ts';

/**
 * The OS confinement of a local ACP agent: with bubblewrap it runs in a view of the machine
 * that holds only the system directories (a minimal /etc), acx's and Node's own installs and
 * its bootstrap (read-only), its HOME, workspace and temp directory (writable) — and in a
 * network namespace of its own with nothing but loopback. What it may reach of acx (the
 * credential broker, the host-tool bridge) is bind-mounted in as unix sockets, one per host
 * port, and served inside on the same 127.0.0.1 ports by the sandbox launcher, so every URL
 * the agent was given works unchanged. Without bubblewrap it runs as a plain child process.
 */
export interface Confinement {
  kind: 'bubblewrap' | 'none';
  /** Why this kind: what was found, or what is missing. */
  reason: string;
}

/** The variable that turns the ACP agent's sandbox off (`none`). */
export const ACP_SANDBOX_ENV = 'ACX_ACP_SANDBOX';

/** /etc entries an agent needs without DNS: loader, users, certificates, time zone, MIME types. */
const AGENT_ETC = [
  'alternatives', 'ca-certificates', 'ca-certificates.conf', 'group', 'host.conf', 'hosts', 'ld.so.cache', 'ld.so.conf', 'ld.so.conf.d',
  'localtime', 'mime.types', 'nsswitch.conf', 'os-release', 'passwd', 'pki', 'protocols', 'services', 'ssl', 'timezone',
];

const SCRIPT_EXT = path.extname(fileURLToPath(import.meta.url));
const LAUNCHER = fileURLToPath(new URL(`./sandbox-launcher${SCRIPT_EXT}`, import.meta.url));

export async function detectConfinement(env: Record<string, string | undefined> = process.env): Promise<Confinement> {
  const wanted = env[ACP_SANDBOX_ENV]?.trim();
  if (wanted === 'none') return { kind: 'none', reason: `turned off by ${ACP_SANDBOX_ENV}=none` };
  const found = await probeIsolation('bwrap');
  if (found.kind === 'bwrap') return { kind: 'bubblewrap', reason: found.reason };
  return { kind: 'none', reason: found.reason };
}

/** What of acx itself a confined agent must read: its package (scripts it runs, their modules) and Node. */
function acxInstallPaths(): string[] {
  const paths = new Set<string>();
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  paths.add(dir);
  const modules = path.join(dir, 'node_modules');
  if (fs.existsSync(modules)) paths.add(fs.realpathSync(modules));
  // Installed as a dependency: its own dependencies are hoisted next to it.
  const parent = path.dirname(dir);
  const hoisted = path.basename(parent).startsWith('@') ? path.dirname(parent) : parent;
  if (path.basename(hoisted) === 'node_modules') paths.add(hoisted);
  const node = path.dirname(path.dirname(fs.realpathSync(process.execPath)));
  if (!['/', '/usr', '/usr/local'].includes(node)) paths.add(node);
  return [...paths];
}

export interface ConfinedLayout {
  root: string;
  home: string;
  workdir: string;
  tmp: string;
}

/** A session's prepared view; `spawn` adds the bootstrap and the exposed ports. */
export interface ConfinedSpawner {
  spawn(command: string, args: readonly string[], options: { env: Record<string, string>; cwd: string; expose: readonly number[]; readOnly: readonly string[] }): ChildProcess;
}

export async function prepareConfinedSpawner(layout: ConfinedLayout, guarded: readonly GuardedDirectory[] = []): Promise<ConfinedSpawner> {
  const bwrap = findExecutable('bwrap')!;
  const view = await commandView(layout.workdir, { home: layout.home }, {
    maskUnreadable: processIsRoot(),
    etcEntries: AGENT_ETC,
    readOnly: acxInstallPaths(),
    additionalRoots: [layout.tmp],
    guarded,
  });
  return {
    spawn(command, args, options) {
      // Unix socket paths are short (108 bytes): one fresh directory below the temp dir, or
      // below /tmp when TMPDIR is too deep for `<dir>/acx-sbx-XXXXXX/<port>.sock`.
      const base = os.tmpdir().length <= 80 ? os.tmpdir() : '/tmp';
      const socketDir = fs.mkdtempSync(path.join(base, 'acx-sbx-'));
      const masks: ViewMasks = createMasks(socketDir);
      const relays = options.expose.map((port) => relayToLoopback(path.join(socketDir, `${port}.sock`), port));
      const extra: ViewMount[] = [...options.readOnly, socketDir].map((entry) => ({ type: 'ro-bind', path: entry }));
      const firstWritable = view.findIndex((mount) => mount.type === 'bind');
      const mounts = [...view.slice(0, firstWritable), ...extra, ...view.slice(firstWritable)];
      const forwards = options.expose.flatMap((port) => ['--forward', `${port}=${path.join(socketDir, `${port}.sock`)}`]);
      const argv = [process.execPath, LAUNCHER, ...forwards, '--', command, ...args];
      const child = spawn(bwrap, bwrapArgv({ view: mounts, masks, chdir: options.cwd, argv }), {
        env: options.env,
        stdio: ['pipe', 'pipe', 'pipe'],
        shell: false,
        detached: true, // own process group, so the whole tree can be stopped
      });
      const release = () => {
        for (const relay of relays) relay.close();
        removeTree(socketDir); // holds mode-000 masks; runs in an exit handler, so it must not throw
      };
      child.once('exit', release);
      child.once('error', release);
      return child;
    },
  };
}

/** Accepts on a unix socket and relays each connection to 127.0.0.1:port on the host. */
function relayToLoopback(socketPath: string, port: number): net.Server {
  const server = net.createServer((inside) => {
    const outside = net.connect(port, '127.0.0.1');
    inside.on('error', () => outside.destroy());
    outside.on('error', () => inside.destroy());
    inside.pipe(outside);
    outside.pipe(inside);
  });
  server.on('error', () => {});
  server.listen(socketPath); // bound synchronously: ready before the agent starts
  return server;
}
