import type * as acp from '@agentclientprotocol/sdk';
import { isPermissionMode, PERMISSION_MODES, type PermissionMode } from '../../tools/permission.ts';

/**
 * acx's permission modes, offered to the ACP client as session modes. The mode decides which
 * tool kinds run without asking; anything else becomes a `session/request_permission`.
 */
const MODE_TEXT: Record<PermissionMode, { name: string; description: string }> = {
  'allow-reads': {
    name: 'Ask before changes',
    description: 'Reading tools run on their own; every edit, command, fetch or other action asks you first.',
  },
  'allow-edits': {
    name: 'Allow edits',
    description: 'Reading and editing tools (memory writes, file edits) run on their own; commands, fetches and other actions ask you first.',
  },
  'allow-all': {
    name: 'Allow everything',
    description: 'Every tool runs without asking, except tools that always require approval.',
  },
};

export function sessionModes(current: PermissionMode): acp.SessionModeState {
  return {
    currentModeId: current,
    availableModes: PERMISSION_MODES.map((id) => ({ id, ...MODE_TEXT[id] })),
  };
}

export function parseModeId(modeId: string): PermissionMode | undefined {
  return isPermissionMode(modeId) ? modeId : undefined;
}
