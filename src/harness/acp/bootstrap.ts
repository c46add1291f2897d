import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { canonicalJson } from '../../util/jcs.ts';
import { diskBytes, formatBytes } from '../../util/disk-usage.ts';
import { AcxError } from '../../core/errors.ts';
import type { ACPSettings, ACPSource } from './settings.ts';

/**
 * Acquiring an ACP implementation once and reusing it. Each harness has a deterministic
 * directory `<cache>/.harness-bootstrap/<harnessId>`; its identity is a hash over the recipe
 * (source, executable, args, persistent env — never credentials; an omitted npm version stays
 * out so a new upstream release does not invalidate it). A marker file written last records a
 * finished bootstrap with that identity; a different identity reinstalls.
 */

export interface BootstrapResult {
  dir: string;
  identity: string;
  /** Absolute path of the executable to launch (no PATH lookup). */
  executable: string;
  /** Persistent environment written at bootstrap. */
  env: Record<string, string>;
  /** True when this call installed; false when a finished bootstrap was reused. */
  installed: boolean;
}

/** Written last: a finished install with this identity. */
export const BOOTSTRAP_MARKER = '.bootstrap-complete.json';
/** Held (a directory) while an install runs. */
export const BOOTSTRAP_LOCK = '.lock';

export function defaultCacheDir(env: Record<string, string | undefined> = process.env): string {
  return env.ACX_CACHE_DIR && env.ACX_CACHE_DIR.trim() !== '' ? env.ACX_CACHE_DIR : join(homedir(), '.cache', 'acx');
}

export function bootstrapRecipe(settings: Pick<ACPSettings, 'harnessId' | 'source' | 'executable' | 'args' | 'env'>): Record<string, unknown> {
  const source: ACPSource = settings.source;
  const recipeSource =
    source.type === 'npm-simple'
      ? { type: source.type, packageName: source.packageName, ...(source.packageVersion ? { packageVersion: source.packageVersion } : {}) }
      : source.type === 'npm-locked'
        ? { type: source.type, packageJson: source.packageJson, pnpmLockYaml: source.pnpmLockYaml, ...(source.pnpmWorkspaceYaml !== undefined ? { pnpmWorkspaceYaml: source.pnpmWorkspaceYaml } : {}) }
        : { type: source.type, command: source.command };
  return {
    protocol: 'v1',
    harnessId: settings.harnessId,
    source: recipeSource,
    executable: settings.executable,
    args: [...(settings.args ?? [])],
    env: { ...(settings.env ?? {}) },
  };
}

export function bootstrapIdentity(settings: Pick<ACPSettings, 'harnessId' | 'source' | 'executable' | 'args' | 'env'>): string {
  return 'sha256:' + createHash('sha256').update(canonicalJson(bootstrapRecipe(settings))).digest('hex');
}

export function bootstrapDir(cacheDir: string, harnessId: string): string {
  return join(cacheDir, '.harness-bootstrap', harnessId);
}

function executablePath(dir: string, settings: Pick<ACPSettings, 'source' | 'executable'>): string {
  const impl = join(dir, 'implementation');
  return settings.source.type === 'install-command'
    ? join(impl, 'home', '.local', 'bin', settings.executable)
    : join(impl, 'node_modules', '.bin', settings.executable);
}

function readMarker(dir: string): { identity?: string } | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, BOOTSTRAP_MARKER), 'utf8')) as { identity?: string };
  } catch {
    return undefined;
  }
}

async function withLock<T>(dir: string, timeoutMs: number, fn: () => Promise<T>): Promise<T> {
  const lock = join(dir, BOOTSTRAP_LOCK);
  const started = Date.now();
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      // A lock older than the install timeout belongs to a process that died mid-install.
      try {
        if (Date.now() - statSync(lock).mtimeMs > timeoutMs) rmSync(lock, { recursive: true, force: true });
      } catch {}
      if (Date.now() - started > timeoutMs) {
        throw new AcxError('acp-bootstrap-locked', `Another process is bootstrapping ${dir}.`, { hint: `Wait for it, or remove ${lock} if no install is running.` });
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

interface RunOptions {
  cwd: string;
  env: Record<string, string>;
  label: string;
  progress: NodeJS.WritableStream | null;
  timeoutMs: number;
  heartbeatMs: number;
  /** The directory the step fills: its size so far is how far the install has got. */
  target: string;
}

/** The size of a directory an installer is filling, which may move files away mid-walk. */
function sizeSoFar(dir: string): string | undefined {
  try {
    return formatBytes(diskBytes(dir));
  } catch {
    return undefined;
  }
}

/**
 * Writes heartbeats to the progress stream: on a terminal one line rewritten in place, elsewhere
 * (a log, a pipe) one line each. `end()` closes the terminal line so the next output starts clean.
 */
function heartbeatWriter(progress: NodeJS.WritableStream | null): { write(text: string): void; end(): void } {
  const onTerminal = (progress as { isTTY?: boolean } | null)?.isTTY === true;
  let open = false;
  return {
    write(text) {
      if (!progress) return;
      if (!onTerminal) return void progress.write(`${text}\n`);
      progress.write(`\r\x1b[K${text}`);
      open = true;
    },
    end() {
      if (open) progress?.write('\n');
      open = false;
    },
  };
}

/** Runs an install step without a shell, shows a heartbeat on the progress stream, keeps an output tail for errors. */
function run(command: string, args: readonly string[], options: RunOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, [...args], { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let tail = '';
    const keep = (chunk: Buffer) => {
      tail = (tail + chunk.toString('utf8')).slice(-4000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const started = Date.now();
    const beats = heartbeatWriter(options.progress);
    const heartbeat = setInterval(() => {
      const size = sizeSoFar(options.target);
      beats.write(`acx: still ${options.label} (${Math.round((Date.now() - started) / 1000)}s${size ? `, ${size} so far` : ''})`);
    }, options.heartbeatMs);
    heartbeat.unref();
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    timer.unref();
    child.on('error', (error) => {
      clearInterval(heartbeat);
      beats.end();
      clearTimeout(timer);
      reject(new AcxError('acp-bootstrap-failed', `Could not start ${command} while ${options.label}: ${error.message}`, { cause: error, hint: `Is ${command} installed and on PATH?` }));
    });
    child.on('close', (code, signal) => {
      clearInterval(heartbeat);
      beats.end();
      clearTimeout(timer);
      if (code === 0) resolve();
      else {
        reject(
          new AcxError('acp-bootstrap-failed', `${options.label} failed (${signal ? `signal ${signal}` : `exit ${code}`}).\n${tail.trim()}`, {
            hint: 'Check the package name/version or the install command, and network access to the registry.',
          }),
        );
      }
    });
  });
}

function installEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  // Only what an installer needs to reach a registry; no credentials of the host.
  for (const key of ['PATH', 'HOME', 'LANG', 'http_proxy', 'https_proxy', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'no_proxy', 'npm_config_registry', 'NPM_CONFIG_REGISTRY', 'npm_config_cache', 'SSL_CERT_FILE', 'NODE_EXTRA_CA_CERTS']) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  return { ...env, ...extra };
}

/** The pnpm release used through npx when pnpm is not installed (pnpm 9 reads lockfile v9). */
export const PINNED_PNPM_VERSION = '9.15.9';

function onPath(name: string, path: string): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  return undefined;
}

/**
 * How to run pnpm: the `pnpm` on PATH, else the pinned release through the npx next to the Node
 * running acx (or on PATH) — `npx --yes pnpm@<version>`, so nothing needs a global install.
 */
export function pnpmCommand(path: string): { command: string; args: string[] } {
  const pnpm = onPath('pnpm', path);
  if (pnpm) return { command: pnpm, args: [] };
  const beside = join(dirname(process.execPath), 'npx');
  const npx = existsSync(beside) ? beside : onPath('npx', path);
  if (!npx) {
    throw new AcxError('acp-bootstrap-failed', 'Neither pnpm nor npx is available to install an npm-locked ACP source.', { hint: 'Install pnpm (or npm, which provides npx) and retry.' });
  }
  return { command: npx, args: ['--yes', `pnpm@${PINNED_PNPM_VERSION}`] };
}

export interface BootstrapOptions {
  cacheDir: string;
  progress: NodeJS.WritableStream | null;
  timeoutMs?: number;
  /** How often a running install says how far it has got (default 10 s). */
  heartbeatMs?: number;
  /** Extra environment for the installers (e.g. `npm_config_registry`); never part of the identity. */
  installEnv?: Record<string, string>;
}

export async function bootstrap(settings: ACPSettings, options: BootstrapOptions): Promise<BootstrapResult> {
  const identity = bootstrapIdentity(settings);
  const dir = bootstrapDir(options.cacheDir, settings.harnessId);
  const executable = executablePath(dir, settings);
  const env = { ...(settings.env ?? {}) };
  const finished = () => readMarker(dir)?.identity === identity && existsSync(executable);
  if (finished()) return { dir, identity, executable, env, installed: false };

  mkdirSync(dir, { recursive: true });
  const timeoutMs = options.timeoutMs ?? 15 * 60_000;
  const heartbeatMs = options.heartbeatMs ?? 10_000;
  return withLock(dir, timeoutMs, async () => {
    if (finished()) return { dir, identity, executable, env, installed: false };
    const impl = join(dir, 'implementation');
    rmSync(join(dir, BOOTSTRAP_MARKER), { force: true });
    rmSync(impl, { recursive: true, force: true });
    mkdirSync(impl, { recursive: true });
    const source = settings.source;
    const progress = options.progress;
    const what = source.type === 'npm-simple' ? `${source.packageName}${source.packageVersion ? `@${source.packageVersion}` : ''}` : source.type;
    progress?.write(`acx: installing ${what} for ${settings.harnessId} into ${impl} (first run; reused afterwards)\n`);
    const started = Date.now();
    if (source.type === 'npm-simple') {
      const spec = source.packageVersion ? `${source.packageName}@${source.packageVersion}` : source.packageName;
      writeFileSync(join(impl, 'package.json'), JSON.stringify({ name: `acx-bootstrap-${settings.harnessId}`, private: true }, null, 2));
      await run('npm', ['install', '--prefix', impl, '--no-audit', '--no-fund', '--save-exact', spec], { cwd: impl, env: installEnv({ ...options.installEnv }), label: `installing ${spec}`, progress, timeoutMs, heartbeatMs, target: impl });
    } else if (source.type === 'npm-locked') {
      writeFileSync(join(impl, 'package.json'), source.packageJson);
      writeFileSync(join(impl, 'pnpm-lock.yaml'), source.pnpmLockYaml);
      if (source.pnpmWorkspaceYaml !== undefined) writeFileSync(join(impl, 'pnpm-workspace.yaml'), source.pnpmWorkspaceYaml);
      const pnpm = pnpmCommand(process.env.PATH ?? '');
      await run(pnpm.command, [...pnpm.args, 'install', '--frozen-lockfile'], {
        cwd: impl,
        // No install-time prompts; HOME stays the host's so pnpm's store is shared between bootstraps.
        env: installEnv({ CI: 'true', npm_config_yes: 'true', ...options.installEnv }),
        label: 'installing the locked pnpm project',
        progress,
        timeoutMs,
        heartbeatMs,
        target: impl,
      });
    } else {
      const home = join(impl, 'home');
      mkdirSync(join(home, '.local', 'bin'), { recursive: true });
      await run('bash', ['-c', `set -euo pipefail\n${source.command}`], {
        cwd: impl,
        env: installEnv({ HOME: home, PATH: `${join(home, '.local', 'bin')}:${process.env.PATH ?? '/usr/bin:/bin'}` }),
        label: `running the install command for ${settings.harnessId}`,
        progress,
        timeoutMs,
        heartbeatMs,
        target: impl,
      });
    }
    if (!existsSync(executable)) {
      throw new AcxError('acp-bootstrap-failed', `The bootstrap for ${settings.harnessId} finished but ${executable} does not exist.`, {
        hint:
          source.type === 'install-command'
            ? `The install command must put "${settings.executable}" into $HOME/.local/bin.`
            : `Check that the package provides a bin named "${settings.executable}" (npm view <package> bin).`,
      });
    }
    writeFileSync(join(dir, 'env.json'), JSON.stringify(env, null, 2));
    writeFileSync(join(dir, 'recipe.json'), JSON.stringify(bootstrapRecipe(settings), null, 2));
    writeFileSync(join(dir, BOOTSTRAP_MARKER), JSON.stringify({ identity, finishedAt: new Date().toISOString() }, null, 2));
    progress?.write(`acx: installed ${what} in ${Math.round((Date.now() - started) / 1000)}s (${formatBytes(diskBytes(dir))} in ${dir}; acx cache list|clean)\n`);
    return { dir, identity, executable, env, installed: true };
  });
}
