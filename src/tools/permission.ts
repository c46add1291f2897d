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

/**
 * The tools as a host that serves them to another loop sees them: `needsApproval` set on each
 * one this mode would ask about, so the serving side asks (or refuses) before running it.
 */
export function gateByPermissionMode(tools: readonly Tool[], mode: PermissionMode): Tool[] {
  return tools.map((tool) => ({ ...tool, needsApproval: needsApproval(tool, mode) }));
}

export function isPermissionMode(value: string): value is PermissionMode {
  return (PERMISSION_MODES as readonly string[]).includes(value);
}
