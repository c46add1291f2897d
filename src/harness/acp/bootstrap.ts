import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { canonicalJson } from '../../util/jcs.ts';
import { diskBytes, formatBytes } from '../../util/disk-usage.ts';
import { AcxError } from '../../core/errors.ts';
import { createLogger } from '../../util/logger.ts';
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
  harnessId: string;
  progress: InstallProgress;
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

/** What an install reports while it runs: where it starts, a heartbeat per interval, where it ends. */
interface InstallProgress {
  started(fields: { harness: string; source: string; package: string | undefined; dir: string }): void;
  beat(fields: { harness: string; step: string; elapsedSeconds: number; size: string | undefined }): void;
  /** Closes a heartbeat line rewritten in place, so the next output starts clean. */
  endBeats(): void;
  finished(fields: { harness: string; source: string; package: string | undefined; elapsedSeconds: number; size: string; dir: string }): void;
}

/**
 * On a terminal a person watches: plain sentences and one heartbeat line rewritten in place.
 * Anywhere else (a log file, a pipe, CI) the lines are read by tools: logfmt INFO lines through
 * the project's logger, written to the same stream (so `progress: null` still silences both).
 */
export function installProgress(progress: NodeJS.WritableStream | null): InstallProgress {
  if (!progress) return { started() {}, beat() {}, endBeats() {}, finished() {} };
  if ((progress as { isTTY?: boolean }).isTTY !== true) {
    // Progress the caller asked for by passing a stream: INFO whatever the library's default level.
    const log = createLogger({ level: 'info', sink: { write: (line) => void progress.write(line) } });
    return {
      started: (f) => log.info('acp install started', { harness: f.harness, source: f.source, package: f.package, dir: f.dir, note: 'first run; reused afterwards' }),
      beat: (f) => log.info('acp install running', { harness: f.harness, step: f.step, elapsed_s: f.elapsedSeconds, size: f.size }),
      endBeats() {},
      finished: (f) => log.info('acp install finished', { harness: f.harness, source: f.source, package: f.package, elapsed_s: f.elapsedSeconds, size: f.size, dir: f.dir, manage: 'acx cache list|clean' }),
    };
  }
  let open = false;
  return {
    started: (f) => void progress.write(`acx: installing ${f.package ?? f.source} for ${f.harness} into ${f.dir} (first run; reused afterwards)\n`),
    beat(f) {
      progress.write(`\r\x1b[Kacx: still ${f.step} (${f.elapsedSeconds}s${f.size ? `, ${f.size} so far` : ''})`);
      open = true;
    },
    endBeats() {
      if (open) progress.write('\n');
      open = false;
    },
    finished: (f) => void progress.write(`acx: installed ${f.package ?? f.source} in ${f.elapsedSeconds}s (${f.size} in ${f.dir}; acx cache list|clean)\n`),
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
    const heartbeat = setInterval(() => {
      options.progress.beat({ harness: options.harnessId, step: options.label, elapsedSeconds: Math.round((Date.now() - started) / 1000), size: sizeSoFar(options.target) });
    }, options.heartbeatMs);
    heartbeat.unref();
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    timer.unref();
    child.on('error', (error) => {
      clearInterval(heartbeat);
      options.progress.endBeats();
      clearTimeout(timer);
      reject(new AcxError('acp-bootstrap-failed', `Could not start ${command} while ${options.label}: ${error.message}`, { cause: error, hint: `Is ${command} installed and on PATH?` }));
    });
    child.on('close', (code, signal) => {
      clearInterval(heartbeat);
      options.progress.endBeats();
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
    const progress = installProgress(options.progress);
    const packageSpec = source.type === 'npm-simple' ? `${source.packageName}${source.packageVersion ? `@${source.packageVersion}` : ''}` : undefined;
    const harnessId = settings.harnessId;
    progress.started({ harness: harnessId, source: source.type, package: packageSpec, dir: impl });
    const started = Date.now();
    if (source.type === 'npm-simple') {
      const spec = source.packageVersion ? `${source.packageName}@${source.packageVersion}` : source.packageName;
      writeFileSync(join(impl, 'package.json'), JSON.stringify({ name: `acx-bootstrap-${settings.harnessId}`, private: true }, null, 2));
      await run('npm', ['install', '--prefix', impl, '--no-audit', '--no-fund', '--save-exact', spec], { cwd: impl, env: installEnv({ ...options.installEnv }), label: `installing ${spec}`, harnessId, progress, timeoutMs, heartbeatMs, target: impl });
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
        harnessId,
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
        harnessId,
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
    progress.finished({ harness: harnessId, source: source.type, package: packageSpec, elapsedSeconds: Math.round((Date.now() - started) / 1000), size: formatBytes(diskBytes(dir)), dir });
    return { dir, identity, executable, env, installed: true };
  });
}
