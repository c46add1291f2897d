import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { diskBytes } from '../../util/disk-usage.ts';
import { AcxError } from '../../core/errors.ts';
import { bootstrapDir, BOOTSTRAP_LOCK, BOOTSTRAP_MARKER } from './bootstrap.ts';

/** One ACP implementation in the bootstrap cache, as `acx cache list` shows it. */
export interface CachedBootstrap {
  harnessId: string;
  dir: string;
  /** Size of the files under `dir` (symlinks counted as links, never followed). */
  bytes: number;
  /** A finished install (its marker was written last). */
  complete: boolean;
  /** What was installed: `npm-simple opencode-ai@1.18.33`, `npm-locked`, `install-command`. */
  source: string | null;
  finishedAt: string | null;
  /** Another process holds the install lock right now. */
  installing: boolean;
}

const root = (cacheDir: string) => join(cacheDir, '.harness-bootstrap');

export function listBootstraps(cacheDir: string): CachedBootstrap[] {
  if (!existsSync(root(cacheDir))) return [];
  return readdirSync(root(cacheDir), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => describe(cacheDir, entry.name))
    .sort((a, b) => a.harnessId.localeCompare(b.harnessId));
}

function describe(cacheDir: string, harnessId: string): CachedBootstrap {
  const dir = bootstrapDir(cacheDir, harnessId);
  const marker = readJson(join(dir, BOOTSTRAP_MARKER)) as { finishedAt?: string } | undefined;
  const recipe = readJson(join(dir, 'recipe.json')) as { source?: { type?: string; packageName?: string; packageVersion?: string } } | undefined;
  const source = recipe?.source?.type
    ? [recipe.source.type, recipe.source.packageName ? `${recipe.source.packageName}${recipe.source.packageVersion ? `@${recipe.source.packageVersion}` : ''}` : undefined].filter(Boolean).join(' ')
    : null;
  return {
    harnessId,
    dir,
    bytes: diskBytes(dir),
    complete: marker !== undefined,
    source,
    finishedAt: marker?.finishedAt ?? null,
    installing: existsSync(join(dir, BOOTSTRAP_LOCK)),
  };
}

/**
 * Removes cached implementations (the next session installs them again). One that is being
 * installed right now is refused, never pulled out from under its installer.
 */
export function removeBootstraps(cacheDir: string, harnessIds: readonly string[] | 'all', options: { dryRun?: boolean } = {}): CachedBootstrap[] {
  const present = listBootstraps(cacheDir);
  const chosen =
    harnessIds === 'all'
      ? present
      : harnessIds.map((id) => {
          const found = present.find((entry) => entry.harnessId === id);
          if (!found) {
            throw new AcxError('cache-entry-unknown', `There is no cached ACP implementation "${id}" in ${root(cacheDir)}.`, {
              hint: present.length ? `Cached: ${present.map((entry) => entry.harnessId).join(', ')} (acx cache list).` : 'The cache is empty.',
            });
          }
          return found;
        });
  const busy = chosen.filter((entry) => entry.installing);
  if (busy.length > 0) {
    throw new AcxError('cache-entry-busy', `${busy.map((entry) => entry.harnessId).join(', ')} is being installed right now (${join(busy[0]!.dir, BOOTSTRAP_LOCK)} exists).`, {
      hint: 'Wait for the install to finish, then clean again; a lock left by a crashed install expires after the install timeout.',
    });
  }
  if (!options.dryRun) for (const entry of chosen) rmSync(entry.dir, { recursive: true, force: true });
  return chosen;
}

function readJson(path: string): unknown {
  try {
    return statSync(path).isFile() ? JSON.parse(readFileSync(path, 'utf8')) : undefined;
  } catch {
    return undefined;
  }
}
