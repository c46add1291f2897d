import { join, resolve } from 'node:path';
import type { ResolvedSettings } from './settings.ts';

/** Where the agent's fs and execute tools work (and an ACP agent runs): --workspace, else <state dir>/workspace. */
export function agentWorkspace(settings: Pick<ResolvedSettings, 'workspace' | 'stateDir'>): string {
  return resolve(settings.workspace ?? join(settings.stateDir, 'workspace'));
}
