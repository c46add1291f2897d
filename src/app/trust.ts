import { existsSync } from 'node:fs';
import { readOwnKeys } from '../cartridge/trust-store.ts';
import { ownKeysPath, resolveConfigHome, trustRegistryPath } from './paths.ts';

/**
 * Which trust files a command uses. A cartridge's verdict is judged against --registry, else
 * ACX_TRUST_REGISTRY, else the config home's own registry when it exists; `local` needs the
 * signer's keyid among the config home's own keys. `acx trust` edits the same registry it would
 * read (creating the config home's when none is named).
 */
export interface TrustFiles {
  /** The registry verdicts are judged against; undefined when there is none (every signer is portable). */
  registry: string | undefined;
  /** The registry `acx trust add|revoke` edits. */
  editable: string;
  /** This installation's own keyids. */
  ownKeys: string[];
  ownKeysPath: string;
}

export function resolveTrustFiles(flags: { registry?: string | undefined; configHome?: string | undefined }, env: NodeJS.ProcessEnv = process.env): TrustFiles {
  const configHome = resolveConfigHome(flags.configHome, env);
  const local = trustRegistryPath(configHome);
  const named = flags.registry || env.ACX_TRUST_REGISTRY || undefined;
  const owned = ownKeysPath(configHome);
  return {
    registry: named ?? (existsSync(local) ? local : undefined),
    editable: named ?? local,
    ownKeys: readOwnKeys(owned),
    ownKeysPath: owned,
  };
}

/** What a verification takes from the trust files: the registry (when there is one) and the own keys. */
export function verifyOptionsOf(files: TrustFiles, extraOwnKeys: readonly string[] = []): { registry?: string; ownKeys: string[] } {
  return { ...(files.registry ? { registry: files.registry } : {}), ownKeys: [...files.ownKeys, ...extraOwnKeys] };
}
