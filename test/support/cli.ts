// Running the `acx` CLI as a user does: a real child process on the pinned Node, in a clean
// environment (no model keys, no acx settings), with its own temp state and config homes.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const ROOT = join(import.meta.dirname, '../..');
export const ACX_BIN = join(ROOT, 'bin/acx.js');

/** The caller's environment minus every model key and acx setting: a fresh machine. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    // ACX_RUN_FROM is kept: it picks which build of the CLI the tests drive (bin/acx.js).
    if (/API_KEY|_TOKEN|^ACX_|_BASE_URL$|^NODE_OPTIONS$/.test(key) && key !== 'ACX_RUN_FROM') continue;
    env[key] = value;
  }
  return { ...env, ...extra };
}

export const tempDir = (prefix = 'acx-cli-'): string => mkdtempSync(join(tmpdir(), prefix));

export interface CliRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `acx args…` to its end (async, so cases of a file run side by side). State and config
 * live in `home` (ACX_HOME / ACX_CONFIG_HOME), never in the machine's own directories.
 */
export function runAcx(args: readonly string[], options: { env?: NodeJS.ProcessEnv; home?: string; cwd?: string; input?: string } = {}): Promise<CliRun> {
  const home = options.home ?? tempDir();
  const env = { ...(options.env ?? cleanEnv()), ACX_HOME: home, ACX_CONFIG_HOME: home, HOME: home };
  const child = spawn(process.execPath, [ACX_BIN, ...args], { cwd: options.cwd ?? ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdin.end(options.input ?? '');
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** Lines of a stack trace (`    at fn (file:line)`): a user's error must have none. */
export const STACK_FRAME = /^\s+at .+/m;
