import { createHash } from 'node:crypto';
import type * as acp from '@agentclientprotocol/sdk';
import type { ModelMessage } from 'ai';
import type { WorkspaceRoots } from '../../tools/sandbox/roots.ts';
import type { FileContents } from '../../tools/builtin/fs.ts';
import type { Tool } from '../../tools/tool.ts';

/**
 * Diffs for the editor: what fs_write is about to change (shown with the pending call, so the
 * user sees the change before approving it) and what it did change (old text captured just
 * before the write, through the same confined workspace the tool writes through). The old text
 * of each write that ran is kept in the journal with its call, so session/load shows the same
 * diff again. Texts above MAX_DIFF_BYTES are left out: the call's result still says what was
 * written.
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

/**
 * The diff a write would make now; undefined for other tools, refused paths and oversized texts.
 * `current` is the file's text as the editor holds it, when known; else it is read from disk.
 */
export function editDiff(roots: WorkspaceRoots, toolName: string, input: unknown, current?: string): acp.ToolCallContent | undefined {
  const write = writeInput(toolName, input);
  if (!write || Buffer.byteLength(write.content) > MAX_DIFF_BYTES) return undefined;
  let path: string;
  let oldText: string | undefined;
  try {
    path = roots.absolute(write.path);
    oldText = current ?? roots.readText(write.path);
  } catch {
    return undefined; // the tool refuses this path itself, with the reason
  }
  if (oldText !== undefined && Buffer.byteLength(oldText) > MAX_DIFF_BYTES) return undefined;
  return { type: 'diff', path, oldText: oldText ?? null, newText: write.content };
}

/**
 * Where a write's diff is kept once it ran: the old text, under the write's key (see editKey).
 * The new text is the call's own input, journaled with it.
 */
export interface DiffKeeper {
  keep(sessionId: string, key: string, oldText: string | null): Promise<void>;
}

/**
 * The key a write's diff is kept under: its call id and a digest of what it wrote where (a model
 * may reuse a call id in a later step or turn). Undefined for any other call.
 */
export function editKey(toolCallId: string, toolName: string, input: unknown): string | undefined {
  const write = writeInput(toolName, input);
  if (!write) return undefined;
  const digest = createHash('sha256').update(write.path).update('\0').update(write.content).digest('hex').slice(0, 16);
  return `${toolCallId}.${digest}`;
}

/** The keys of the writes an (assistant) message calls, in order. */
export function editKeysOf(message: ModelMessage): string[] {
  if (!Array.isArray(message.content)) return [];
  return (message.content as Array<{ type: string; toolCallId?: unknown; toolName?: unknown; input?: unknown }>).flatMap((part) => {
    const key = part.type === 'tool-call' && typeof part.toolCallId === 'string' ? editKey(part.toolCallId, String(part.toolName), part.input) : undefined;
    return key ? [key] : [];
  });
}

/**
 * The diffs of replayed writes as they ran: the old text kept for each (by edit key), the new text
 * the call's input. A write with nothing kept (before acx kept them, or above the size limit), or
 * whose path is no longer in the roots, has none.
 */
export function keptDiffs(roots: WorkspaceRoots, kept: ReadonlyMap<string, string | null>) {
  return (toolCallId: string, toolName: string, input: unknown): acp.ToolCallContent | undefined => {
    const key = editKey(toolCallId, toolName, input);
    const write = writeInput(toolName, input);
    if (key === undefined || !write || !kept.has(key)) return undefined;
    try {
      return { type: 'diff', path: roots.absolute(write.path), oldText: kept.get(key) ?? null, newText: write.content };
    } catch {
      return undefined;
    }
  };
}

/**
 * Keeps, per call id, the diff of each write as it runs. The engine may run a call before its
 * tool_call update is translated, so `diffFor` prefers the diff taken just before the write.
 */
export class EditLog {
  private readonly roots: WorkspaceRoots;
  private readonly diffs = new Map<string, acp.ToolCallContent>();
  private readonly contents: FileContents | undefined;

  private readonly keeper: DiffKeeper | undefined;

  /**
   * `contents`: the editor's buffers, when it offers them; a write's old text is then the buffer's.
   * `keeper`: where the diff of each write that ran is kept for session/load (the journal).
   */
  constructor(roots: WorkspaceRoots, contents?: FileContents, keeper?: DiffKeeper) {
    this.roots = roots;
    this.contents = contents;
    this.keeper = keeper;
  }

  /** The editor's text of the file a write names; undefined when it has none (a new file) or reads nothing. */
  private async current(input: unknown, signal: AbortSignal): Promise<string | undefined> {
    const write = writeInput(WRITE_TOOL, input);
    if (!write || !this.contents?.read) return undefined;
    try {
      // Only a file the confined open finds on disk is asked for (never a path the write refuses).
      if (this.roots.readText(write.path) === undefined) return undefined;
      return await this.contents.read(this.roots.absolute(write.path), signal);
    } catch {
      return undefined;
    }
  }

  /** The tools with fs_write recording its diff (taken just before the write runs). */
  wrap(tools: readonly Tool[]): Tool[] {
    return tools.map((tool) => {
      const run = tool.execute;
      if (tool.name !== WRITE_TOOL || !run) return tool;
      return {
        ...tool,
        execute: async (input, context) => {
          // Synchronously from disk first, so a tool_call translated meanwhile shows this diff.
          let diff = editDiff(this.roots, tool.name, input);
          if (diff) this.diffs.set(context.toolCallId, diff);
          const buffer = await this.current(input, context.abortSignal);
          if (buffer !== undefined) diff = editDiff(this.roots, tool.name, input, buffer);
          if (diff) this.diffs.set(context.toolCallId, diff);
          let output: unknown;
          try {
            output = await run(input, context);
          } catch (error) {
            this.diffs.delete(context.toolCallId); // nothing was changed
            throw error;
          }
          const key = editKey(context.toolCallId, tool.name, input);
          if (diff?.type === 'diff' && key) await this.keeper?.keep(context.sessionId, key, diff.oldText ?? null);
          return output;
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
