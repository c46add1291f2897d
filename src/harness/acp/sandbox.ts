import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve, sep } from 'node:path';
import { AcxError } from '../../core/errors.ts';
import { type Confinement, detectConfinement, prepareConfinedSpawner } from './confinement.ts';
import { isSafeRelativePath } from './relative-path.ts';
import { removeTree } from '../../util/remove-tree.ts';
import type { GuardedDirectory } from '../../tools/sandbox/protected.ts';

/**
 * Where an ACP agent runs. The adapter only needs: an empty working directory, an isolated
 * home, exposed ports, a way to write files below the home, and a way to start a process with
 * exactly the environment it is given. The local sandbox does this with directories and a
 * scrubbed environment on this machine, and confines the process with bubblewrap where it works
 * (confinement.ts); a remote sandbox can implement the same interface.
 */
export interface SandboxSession {
  readonly id: string;
  /** The session's working directory; starts empty. */
  readonly workdir: string;
  /** The agent's $HOME. */
  readonly home: string;
  /** Exposed ports, in order; 0 means "any free loopback port". */
  readonly ports: readonly number[];
  /** The isolation variables every process in this sandbox gets (HOME, XDG_*, CODEX_HOME, TMPDIR, PATH). */
  baseEnv(): Record<string, string>;
  /** Writes a file at a path relative to $HOME (parent directories created). */
  writeHomeFile(relativePath: string, contents: string): string;
  /**
   * Starts a process without a shell, with exactly `env`. A confined sandbox also lets it read
   * `readOnly` and reach the host's loopback ports in `expose` (at the same 127.0.0.1 ports).
   */
  spawn(command: string, args: readonly string[], options: SpawnOptions): ChildProcess;
  /** How the local sandbox confines the process; undefined for a sandbox that is not on this machine. */
  readonly confinement?: Confinement | undefined;
  /**
   * A file where the session keeps what reopening it in a later process needs (the agent's own
   * session id), when the sandbox keeps sessions; undefined when each session is thrown away.
   */
  readonly recordPath?: string | undefined;
  destroy(): Promise<void>;
}

export interface SpawnOptions {
  env: Record<string, string>;
  cwd?: string;
  /** Host loopback ports the process must reach (acx's broker and host-tool bridge). */
  expose?: readonly number[];
  /** Host paths the process must read (its bootstrap install). */
  readOnly?: readonly string[];
}

export interface Sandbox {
  readonly kind: string;
  /** Outbound requests can be rewritten after they leave the agent (credential placeholders). */
  readonly supportsRequestTransformations: boolean;
  createSession(options: { harnessId: string; sessionId: string }): Promise<SandboxSession>;
}

export interface LocalSandboxOptions {
  /** Parent of the per-session directories; default the OS temp dir. */
  root?: string;
  /** Exposed loopback ports; default [0] (any free port). An empty list exposes none. */
  ports?: readonly number[];
  /** Keep the session directory after destroy (for debugging). */
  keep?: boolean;
  /**
   * Use this existing directory as every session's working directory instead of a fresh empty
   * one (e.g. `acx run --workspace DIR`: the agent works on the user's files). It is never
   * deleted by destroy.
   */
  workdir?: string;
  /**
   * Keep each session under `<sessionsRoot>/<harnessId>/<sessionId>` instead of a fresh temporary
   * directory, so a later process that opens the same session id finds the agent's $HOME — its
   * own record of the conversation — again. destroy() still deletes it; detaching keeps it.
   */
  sessionsRoot?: string;
  /**
   * `auto` (default): run the agent in a bubblewrap sandbox when bwrap works here (see
   * confinement.ts), as a plain child process otherwise; `none`: always a plain child process.
   * ACX_ACP_SANDBOX=none in `env` turns it off too.
   */
  confine?: 'auto' | 'none';
  /** The environment read for ACX_ACP_SANDBOX; default process.env. */
  env?: Record<string, string | undefined>;
  /** The folders acx loads code and configuration from: read-only to a confined agent where workdir holds them. */
  guarded?: readonly GuardedDirectory[];
}

/** The system PATH the agent gets, after the directory of the Node that runs acx (agents' `#!/usr/bin/env node`). */
const SYSTEM_PATH = ['/usr/local/bin', '/usr/bin', '/bin'];

export function createLocalSandbox(options: LocalSandboxOptions = {}): Sandbox {
  return {
    kind: 'local',
    supportsRequestTransformations: true,
    async createSession({ harnessId, sessionId }) {
      const root =
        options.sessionsRoot !== undefined
          ? join(resolve(options.sessionsRoot), harnessId, sessionDirName(sessionId))
          : mkdtempSync(join(options.root ?? tmpdir(), `acx-acp-${harnessId}-`));
      mkdirSync(root, { recursive: true, mode: 0o700 });
      const workdir = options.workdir !== undefined ? resolve(options.workdir) : join(root, 'work');
      const home = join(root, 'home');
      const tmp = join(root, 'tmp');
      for (const dir of [workdir, home, tmp]) mkdirSync(dir, { recursive: true });
      const id = `local-${randomBytes(6).toString('hex')}`;
      const env: Record<string, string> = {
        HOME: home,
        USERPROFILE: home,
        XDG_CONFIG_HOME: join(home, '.config'),
        XDG_CACHE_HOME: join(home, '.cache'),
        XDG_DATA_HOME: join(home, '.local', 'share'),
        XDG_STATE_HOME: join(home, '.local', 'state'),
        CODEX_HOME: join(home, '.codex'),
        TMPDIR: tmp,
        PATH: [dirname(process.execPath), ...SYSTEM_PATH].join(delimiter),
        LANG: 'C.UTF-8',
      };
      for (const key of ['XDG_CONFIG_HOME', 'XDG_CACHE_HOME', 'XDG_DATA_HOME', 'XDG_STATE_HOME', 'CODEX_HOME'] as const) mkdirSync(env[key]!, { recursive: true });
      const confinement: Confinement =
        options.confine === 'none' ? { kind: 'none', reason: 'turned off by the sandbox options (confine: none)' } : await detectConfinement(options.env ?? process.env);
      const confined = confinement.kind === 'bubblewrap' ? await prepareConfinedSpawner({ root, home, workdir, tmp }, options.guarded) : undefined;
      return {
        confinement,
        id,
        workdir,
        home,
        ports: options.ports ?? [0],
        baseEnv: () => ({ ...env }),
        writeHomeFile(relativePath, contents) {
          if (!isSafeRelativePath(relativePath)) {
            throw new AcxError('acp-sandbox', `Refusing to write ${JSON.stringify(relativePath)}: not a relative path below $HOME.`);
          }
          const target = resolve(home, relativePath);
          if (!target.startsWith(home + sep)) throw new AcxError('acp-sandbox', `Refusing to write outside $HOME: ${relativePath}`);
          mkdirSync(dirname(target), { recursive: true });
          writeFileSync(target, contents, { mode: 0o600 });
          return target;
        },
        spawn(command, args, spawnOptions) {
          if (confined) {
            return confined.spawn(command, args, { env: spawnOptions.env, cwd: spawnOptions.cwd ?? workdir, expose: spawnOptions.expose ?? [], readOnly: spawnOptions.readOnly ?? [] });
          }
          return spawn(command, [...args], {
            cwd: spawnOptions.cwd ?? workdir,
            env: spawnOptions.env,
            stdio: ['pipe', 'pipe', 'pipe'],
            shell: false,
            detached: process.platform !== 'win32', // own process group, so the whole tree can be stopped
          });
        },
        recordPath: options.sessionsRoot !== undefined ? join(root, 'acp-session.json') : undefined,
        async destroy() {
          // What an agent left unreadable in its HOME must not make ending the session fail.
          if (!options.keep) removeTree(root);
        },
      };
    },
  };
}

/**
 * A session id as one directory name: kept readable when it is a plain name, otherwise (and
 * always when it could climb out, like `..`) replaced by a hash, so no id can address a path.
 */
export function sessionDirName(sessionId: string): string {
  if (/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(sessionId) && !sessionId.includes('..')) return sessionId;
  return `id-${createHash('sha256').update(sessionId).digest('hex').slice(0, 32)}`;
}

/** Where an agent's named ACP sessions keep their sandboxes, below its state directory. */
export function acpSessionsRoot(stateDir: string): string {
  return join(stateDir, 'acp-sessions');
}
