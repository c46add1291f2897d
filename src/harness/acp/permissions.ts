import type * as acp from '@agentclientprotocol/sdk';
import type { ToolKind } from '../../tools/tool.ts';

/**
 * Answers to ACP permission requests are chosen by option `kind`, never by option id (ids
 * differ between agents and versions), and never a persistent `*_always` choice.
 */
export function optionOfKind(options: readonly acp.PermissionOption[], kind: 'allow_once' | 'reject_once'): acp.PermissionOption | undefined {
  return options.find((o) => o.kind === kind);
}

export function selected(option: acp.PermissionOption): acp.RequestPermissionResponse {
  return { outcome: { outcome: 'selected', optionId: option.optionId } };
}

export const CANCELLED: acp.RequestPermissionResponse = { outcome: { outcome: 'cancelled' } };

/** The answer when the host allowed (true) or refused (false) a request. */
export function answer(options: readonly acp.PermissionOption[], allowed: boolean): acp.RequestPermissionResponse {
  const option = optionOfKind(options, allowed ? 'allow_once' : 'reject_once');
  return option ? selected(option) : CANCELLED;
}

export type { ToolKind };
