import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * Where acx keeps things. The config home holds what an operator edits (prompts, mcp/,
 * tools/, model_params.json); the state home holds what acx writes (journals, memory).
 */
export function resolveConfigHome(explicit: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (explicit) return resolve(explicit);
  if (env.ACX_CONFIG_HOME) return resolve(env.ACX_CONFIG_HOME);
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config');
  return join(base, 'acx');
}

export function resolveStateHome(explicit: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (explicit) return resolve(explicit);
  if (env.ACX_HOME) return resolve(env.ACX_HOME);
  const base = env.XDG_STATE_HOME || join(env.HOME || homedir(), '.local', 'state');
  return join(base, 'acx');
}

/**
 * A library app's state: `createEngineHarness({ home })` keeps its journal directly in `home`
 * (`<home>/journal.db`), not under `agents/<id>/` as the CLI does. The CLI's session commands
 * read it there too, as the agent named LIBRARY_AGENT, so `acx sessions --home <home>` shows what
 * a library app wrote. Undefined when the home holds no such journal.
 */
export const LIBRARY_AGENT = 'library';

export function libraryStateDir(stateHome: string): string | undefined {
  return existsSync(join(stateHome, 'journal.db')) ? stateHome : undefined;
}

/** Each agent identity gets its own journal and memory under the state home. */
export function agentStateDir(stateHome: string, agentId: string): string {
  return join(stateHome, 'agents', agentId);
}

/** Where a cartridge's local state lives: <state home>/cartridges/<id>-<12 hex of the cartridge id>. */
export function cartridgeStateDir(stateHome: string, stateKey: string): string {
  return join(stateHome, 'cartridges', stateKey);
}

const SQLITE_HEADER = 'SQLite format 3\u0000';

/** A `.acx` path, or any regular file that starts with the SQLite header. Directories are not. */
export function isCartridgePath(path: string): boolean {
  if (path.toLowerCase().endsWith('.acx')) return true;
  if (!existsSync(path) || !statSync(path).isFile()) return false;
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(16);
    readSync(fd, head, 0, 16, 0);
    return head.toString('latin1') === SQLITE_HEADER;
  } finally {
    closeSync(fd);
  }
}

/** The operator's model parameters (docs: model_params.json), unless --model-params names another file. */
export function modelParamsPath(configHome: string): string {
  return join(configHome, 'model_params.json');
}

/** The installation's own trust registry (acx.trust-registry/1, public keys only; docs/trust.md). */
export function trustRegistryPath(configHome: string): string {
  return join(configHome, 'trust-registry.json');
}

/** The keyids of the installation's own signing keys (`acx keygen --trust`, `acx trust add --own`). */
export function ownKeysPath(configHome: string): string {
  return join(configHome, 'own-keys.json');
}
