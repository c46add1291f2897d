import type * as acp from '@agentclientprotocol/sdk';
import type { WorkspaceRoots } from '../../tools/sandbox/roots.ts';
import type { Tool } from '../../tools/tool.ts';

/**
 * How a tool call looks in an editor: its ACP kind (the icon and grouping Zed shows), a short
 * title (an execute call is titled with its command, as a terminal would be) and the absolute
 * paths it touches (the editor follows the agent there). One description serves live calls,
 * permission requests and replayed history.
 */
export interface ToolCallDescription {
  title: string;
  kind: acp.ToolKind;
  locations: acp.ToolCallLocation[];
}

const TITLE_FIELDS = ['path', 'key', 'query', 'url', 'command', 'name', 'prefix'] as const;
const TITLE_MAX = 80;

function flat(value: string): string {
  const line = value.replace(/\s+/g, ' ').trim();
  return line.length > TITLE_MAX ? `${line.slice(0, TITLE_MAX)}…` : line;
}

function field(input: unknown, name: string): unknown {
  return input && typeof input === 'object' ? (input as Record<string, unknown>)[name] : undefined;
}

/** A short human title: the tool name and, when there is one, the argument that says what it touches. */
export function toolTitle(toolName: string, input: unknown, tool?: Tool): string {
  const command = field(input, 'command');
  if (tool?.kind === 'execute' && typeof command === 'string' && command.trim()) return flat(command);
  for (const name of TITLE_FIELDS) {
    const value = field(input, name);
    if (typeof value === 'string' && value.trim()) return `${toolName} ${flat(value)}`;
  }
  return toolName;
}

/** Words in a tool's name that say more than acx's five permission kinds (read, edit, execute, fetch, other). */
const NAMED_KINDS: ReadonlyArray<{ kind: acp.ToolKind; from: readonly acp.ToolKind[]; words: RegExp }> = [
  { kind: 'search', from: ['read'], words: /^(search|grep|find|glob)$/ },
  { kind: 'delete', from: ['edit', 'other'], words: /^(delete|remove|rm|unlink)$/ },
  { kind: 'move', from: ['edit', 'other'], words: /^(move|rename|mv)$/ },
  { kind: 'think', from: ['other'], words: /^(think|thinking|reason)$/ },
];

/**
 * The ACP kind of a call: acx's kind (a subset of ACP's, same names), refined by the tool's name
 * (`memory_search` is a search, `memory_delete` a delete). Display only: permissions follow acx's kind.
 */
export function acpToolKind(tool: Tool | undefined, toolName = tool?.name ?? ''): acp.ToolKind {
  const kind: acp.ToolKind = tool?.kind ?? 'other';
  const words = toolName.toLowerCase().split(/[^a-z0-9]+/);
  for (const named of NAMED_KINDS) {
    if (named.from.includes(kind) && words.some((word) => named.words.test(word))) return named.kind;
  }
  return kind;
}

/** The absolute path (and line, when the call names one) of a file tool's `path` argument. */
export function toolLocations(tool: Tool | undefined, input: unknown, roots: WorkspaceRoots | undefined): acp.ToolCallLocation[] {
  const touchesFiles = tool?.capabilityScopes.some((scope) => scope === 'fs.read' || scope === 'fs.write') ?? false;
  const target = field(input, 'path');
  if (!touchesFiles || typeof target !== 'string' || !roots) return [];
  let absolute: string;
  try {
    absolute = roots.absolute(target);
  } catch {
    return []; // a path the tool will refuse touches nothing
  }
  const line = field(input, 'line');
  return [{ path: absolute, ...(Number.isInteger(line) && (line as number) > 0 ? { line: line as number } : {}) }];
}

export function describeToolCall(toolName: string, input: unknown, tool: Tool | undefined, roots: WorkspaceRoots | undefined): ToolCallDescription {
  return { title: toolTitle(toolName, input, tool), kind: acpToolKind(tool, toolName), locations: toolLocations(tool, input, roots) };
}
