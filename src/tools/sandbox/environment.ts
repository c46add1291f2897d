import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../../core/errors.ts';

/**
 * The environment a sandboxed command sees is built from an allow-list, never copied from the
 * host: PATH (absolute entries only), HOME (private to the call), TMPDIR, LANG and TERM, plus
 * caller-supplied extras whose names do not look like credentials.
 */
const CREDENTIAL_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|PRIVATE/i;
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export function isCredentialName(name: string): boolean {
  return CREDENTIAL_NAME.test(name);
}

/**
 * Secrets a process that hosts several agents holds for all of them (a worker, a router, a
 * platform with agents): each agent's platform token (BASECRADLE_TOKEN_<HANDLE>) and the keys
 * deliveries are signed with. No tool of one agent may hand them to a command, even the host
 * shell that otherwise passes its full environment on.
 */
const FLEET_SECRET_NAME = /^BASECRADLE_TOKEN_.|WEBHOOK_SECRET/;

export function isFleetSecretName(name: string): boolean {
  return FLEET_SECRET_NAME.test(name);
}

/** The host's environment without the fleet's secrets (see isFleetSecretName). */
export function withoutFleetSecrets(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !isFleetSecretName(name)));
}

export function buildSandboxEnv(
  home: string,
  options: { hostEnv?: NodeJS.ProcessEnv; extra?: Record<string, string> } = {},
): Record<string, string> {
  const hostEnv = options.hostEnv ?? process.env;
  const hostPath = (hostEnv.PATH ?? '')
    .split(path.delimiter)
    .filter((dir) => path.isAbsolute(dir))
    .join(path.delimiter);
  const env: Record<string, string> = {
    PATH: hostPath || DEFAULT_PATH,
    HOME: home,
    TMPDIR: path.join(home, 'tmp'),
    LANG: hostEnv.LANG && /^[A-Za-z0-9_.@-]+$/.test(hostEnv.LANG) ? hostEnv.LANG : 'C.UTF-8',
    TERM: 'dumb',
  };
  for (const [name, value] of Object.entries(options.extra ?? {})) {
    if (isCredentialName(name) || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) continue;
    if (name === 'HOME' || name === 'TMPDIR') continue;
    env[name] = value;
  }
  return env;
}

/** The real path of an existing workspace directory, or a ConfigError saying what is wrong. */
export function resolveWorkspace(workspace: string): string {
  if (!workspace || typeof workspace !== 'string') {
    throw new ConfigError('No workspace directory was given.', { hint: 'Pass { workspace: "/path/to/dir" }.' });
  }
  let real: string;
  try {
    real = fs.realpathSync(path.resolve(workspace));
  } catch {
    throw new ConfigError(`The workspace "${workspace}" does not exist.`, { hint: 'Create the directory first.' });
  }
  if (!fs.statSync(real).isDirectory()) {
    throw new ConfigError(`The workspace "${workspace}" is not a directory.`, { hint: 'Point it at a directory.' });
  }
  if (real === path.parse(real).root) {
    throw new ConfigError('The workspace cannot be the file-system root.', { hint: 'Use a dedicated directory.' });
  }
  return real;
}
