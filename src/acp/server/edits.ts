import type * as acp from '@agentclientprotocol/sdk';
import type { WorkspaceRoots } from '../../tools/sandbox/roots.ts';
import type { Tool } from '../../tools/tool.ts';

/**
 * Diffs for the editor: what fs_write is about to change (shown with the pending call, so the
 * user sees the change before approving it) and what it did change (old text captured just
 * before the write, through the same confined workspace the tool writes through). Texts above
 * MAX_DIFF_BYTES are left out: the call's result still says what was written.
 */
const WRITE_TOOL = 'fs_write';
const MAX_DIFF_BYTES = 512 * 1024;

interface WriteInput {
  path: string;
  content: string;
}

function writeInput(toolName: string, input: unknown): WriteInput | undefined {
  if (toolName !== WRITE_TOOL || !input || typeof input !== 'object') return undefined;
  const { path, content } = input as Record<string, unknown>;
  return typeof path === 'string' && typeof content === 'string' ? { path, content } : undefined;
}

/** The diff a write would make now; undefined for other tools, refused paths and oversized texts. */
export function editDiff(roots: WorkspaceRoots, toolName: string, input: unknown): acp.ToolCallContent | undefined {
  const write = writeInput(toolName, input);
  if (!write || Buffer.byteLength(write.content) > MAX_DIFF_BYTES) return undefined;
  let path: string;
  let oldText: string | undefined;
  try {
    path = roots.absolute(write.path);
    oldText = roots.readText(write.path);
  } catch {
    return undefined; // the tool refuses this path itself, with the reason
  }
  if (oldText !== undefined && Buffer.byteLength(oldText) > MAX_DIFF_BYTES) return undefined;
  return { type: 'diff', path, oldText: oldText ?? null, newText: write.content };
}

/**
 * Keeps, per call id, the diff of each write as it runs. The engine may run a call before its
 * tool_call update is translated, so `diffFor` prefers the diff taken just before the write.
 */
export class EditLog {
  private readonly roots: WorkspaceRoots;
  private readonly diffs = new Map<string, acp.ToolCallContent>();

  constructor(roots: WorkspaceRoots) {
    this.roots = roots;
  }

  /** The tools with fs_write recording its diff (taken synchronously, just before the write runs). */
  wrap(tools: readonly Tool[]): Tool[] {
    return tools.map((tool) => {
      const run = tool.execute;
      if (tool.name !== WRITE_TOOL || !run) return tool;
      return {
        ...tool,
        execute: async (input, context) => {
          const diff = editDiff(this.roots, tool.name, input);
          if (diff) this.diffs.set(context.toolCallId, diff);
          try {
            return await run(input, context);
          } catch (error) {
            this.diffs.delete(context.toolCallId); // nothing was changed
            throw error;
          }
        },
      };
    });
  }

  /** The diff of a call: the one taken when it ran, else what it would change now. */
  diffFor(toolCallId: string, toolName: string, input: unknown): acp.ToolCallContent | undefined {
    return this.diffs.get(toolCallId) ?? editDiff(this.roots, toolName, input);
  }

  /** The recorded diff of a finished call (once). */
  take(toolCallId: string): acp.ToolCallContent | undefined {
    const diff = this.diffs.get(toolCallId);
    this.diffs.delete(toolCallId);
    return diff;
  }
}
