import type { Tool, ToolKind } from './tool.ts';

/**
 * Permission modes decide which tool kinds run without asking the host:
 * allow-reads → read; allow-edits → read and edit; allow-all → everything.
 * Anything else pauses the turn for an approval that only the host can give.
 */
export type PermissionMode = 'allow-reads' | 'allow-edits' | 'allow-all';
export const PERMISSION_MODES: readonly PermissionMode[] = ['allow-reads', 'allow-edits', 'allow-all'];

const ALLOWED_KINDS: Record<PermissionMode, readonly ToolKind[]> = {
  'allow-reads': ['read'],
  'allow-edits': ['read', 'edit'],
  'allow-all': ['read', 'edit', 'execute', 'fetch', 'other'],
};

export function modeAllows(mode: PermissionMode, kind: ToolKind): boolean {
  return ALLOWED_KINDS[mode].includes(kind);
}

export function needsApproval(tool: Pick<Tool, 'kind' | 'needsApproval'>, mode: PermissionMode): boolean {
  return tool.needsApproval === true || !modeAllows(mode, tool.kind);
}

export function isPermissionMode(value: string): value is PermissionMode {
  return (PERMISSION_MODES as readonly string[]).includes(value);
}
