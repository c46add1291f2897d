import { basename } from 'node:path';
import { AGENT_DIRECTORY_ENTRIES } from '../agent-def/directory.ts';
import { type GuardedDirectory, protectedPathsIn, resolveLoose } from '../tools/sandbox/protected.ts';
import type { Logger } from '../util/logger.ts';
import { MANIFEST_FILE, OVERLAY_DIRS, VERSION_FILE } from './install.ts';
import { modelParamsPath, ownKeysPath, trustRegistryPath } from './paths.ts';
import { SEARCH_PARAMS_FILE } from './search-params.ts';
import type { ResolvedSettings } from './settings.ts';

/**
 * The folders this agent's acx loads code and configuration from, which its tools must never
 * write (see src/tools/sandbox/protected.ts): the config home and a directory agent's own
 * directory. A cartridge's definition is its signed ROM, out of any workspace's reach.
 */
export function guardedDirectories(settings: Pick<ResolvedSettings, 'configHome' | 'definition'>): GuardedDirectory[] {
  const guarded: GuardedDirectory[] = [
    {
      label: 'the config home',
      dir: settings.configHome,
      directories: ['prompts', ...OVERLAY_DIRS],
      files: [
        basename(modelParamsPath(settings.configHome)),
        SEARCH_PARAMS_FILE,
        basename(trustRegistryPath(settings.configHome)),
        basename(ownKeysPath(settings.configHome)),
        MANIFEST_FILE,
        VERSION_FILE,
      ],
    },
  ];
  if (settings.definition?.kind === 'directory') {
    guarded.push({ label: 'the agent directory', dir: settings.definition.path, ...AGENT_DIRECTORY_ENTRIES });
  }
  return guarded;
}

/** What has been warned about in this process: a long-running one (acx acp) says it once. */
const warned = new Set<string>();

/**
 * Says once, as a WARNING, that workspace `roots` hold guarded folders and that acx keeps them
 * read-only to its tools: the operator should know that the agent works next to its own code.
 */
export function warnGuardedInWorkspace(logger: Logger, roots: readonly string[], guarded: readonly GuardedDirectory[]): void {
  const real = roots.map(resolveLoose);
  const found = protectedPathsIn(guarded, real).map((entry) => entry.where);
  const key = [...real, '', ...found].join('\n');
  if (found.length === 0 || warned.has(key)) return;
  warned.add(key);
  logger.warn('the workspace holds acx configuration; acx keeps it read-only to its tools', {
    workspace: real.join(','),
    protected: found.join('; '),
  });
}
