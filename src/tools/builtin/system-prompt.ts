import { createHash, timingSafeEqual } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { writeFileAtomic, writeFileExclusive } from '../../util/atomic-write.ts';
import { AcxError } from '../../core/errors.ts';
import type { PolicyTool } from '../policy.ts';
import { lazySchema } from '../../core/lazy-schema.ts';

/**
 * Self-authorship: `system_prompt_read` and `system_prompt_edit` let an agent read and rewrite its
 * own `prompts/system-prompt.md`. Opt-in (grant `system_prompt`), and safe by construction:
 * - neither tool takes a path or agent argument (strict schemas; extra properties are rejected):
 *   the target is fixed when the tools are created, from the agent's own config home;
 * - only system-prompt.md, never initialize.md, which carries the input-security floor;
 * - compare-and-swap: an edit writes only when `confirm` is the sha256 of the CURRENT content,
 *   otherwise it changes nothing and returns a preview and the current token;
 * - every write first snapshots the old file as a timestamped `.bak` beside it.
 */
export const SYSTEM_PROMPT_FILE = 'prompts/system-prompt.md';
export const SELF_AUTHORSHIP_SCOPE = 'x-self-authorship';

export interface SystemPromptToolOptions {
  /** The agent's own config home; the target is `<configHome>/prompts/system-prompt.md`. */
  configHome: string;
  /** What the agent runs on while the file does not exist (e.g. the packaged default). Default ''. */
  fallback?: () => string;
  /** Largest accepted prompt, in UTF-8 bytes (default 64 KiB). */
  maxBytes?: number;
  /** Ask the host before each edit, whatever the permission mode (default false: the grant is the decision). */
  needsApproval?: boolean;
  now?: () => Date;
}

export const systemPromptReadSchema = lazySchema(() => z.strictObject({}));
export const systemPromptEditSchema = lazySchema(() => z.strictObject({
  content: z.string().describe('The complete new text of your system prompt (Markdown). It replaces the whole file.'),
  confirm: z
    .string()
    .optional()
    .describe('The confirm token from system_prompt_read (sha256 of the current content). Without it, you only get a preview.'),
}));
export type SystemPromptEditInput = z.infer<ReturnType<typeof systemPromptEditSchema>>;

const DEFAULT_MAX_BYTES = 64 * 1024;
const MAX_PREVIEW_CHARS = 4000;

function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Constant-time token check; a token of the wrong length is simply a mismatch. */
function confirmMatches(confirm: string, currentHash: string): boolean {
  const given = Buffer.from(confirm.trim().toLowerCase(), 'utf8');
  const expected = Buffer.from(currentHash, 'utf8');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** A short line diff (LCS) for the preview; large prompts get a size summary instead. */
export function previewChange(before: string, after: string): string {
  const a = before.split('\n');
  const b = after.split('\n');
  if (a.length * b.length > 250_000) return `(${a.length} lines → ${b.length} lines; too long to diff here)`;
  const lcs: number[][] = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
    }
  }
  const out: string[] = [];
  let same = 0;
  const flushSame = (): void => {
    if (same > 0) out.push(`  … ${same} unchanged line${same > 1 ? 's' : ''}`);
    same = 0;
  };
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      same++;
      i++;
      j++;
    } else if (j < b.length && (i >= a.length || lcs[i]![j + 1]! >= lcs[i + 1]![j]!)) {
      flushSame();
      out.push(`+ ${b[j]}`);
      j++;
    } else {
      flushSame();
      out.push(`- ${a[i]}`);
      i++;
    }
  }
  flushSame();
  const text = out.join('\n');
  return text.length > MAX_PREVIEW_CHARS ? `${text.slice(0, MAX_PREVIEW_CHARS)}\n… (preview cut)` : text;
}

function backupStamp(date: Date): string {
  return date.toISOString().replace(/:/g, '-');
}

export function createSystemPromptTools(options: SystemPromptToolOptions): PolicyTool[] {
  const target = resolve(options.configHome, ...SYSTEM_PROMPT_FILE.split('/'));
  const fallback = options.fallback ?? (() => '');
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const now = options.now ?? (() => new Date());

  /** The current content as the next turn's charter would read it; refuses anything but a regular file. */
  const readCurrent = (): { content: string; exists: boolean } => {
    let stat;
    try {
      stat = lstatSync(target);
    } catch {
      return { content: fallback(), exists: false };
    }
    if (!stat.isFile()) {
      throw new AcxError('self-authorship-target', `${SYSTEM_PROMPT_FILE} is not a regular file (a link or directory); self-authorship edits only a regular file.`, {
        hint: 'The operator must replace it with a regular file.',
      });
    }
    return { content: readFileSync(target, 'utf8'), exists: true };
  };

  const read: PolicyTool = {
    name: 'system_prompt_read',
    description:
      'Read your own system prompt (prompts/system-prompt.md: who you are and how you speak) exactly as stored, ' +
      'with a confirm token (the sha256 of the current content) to pass to system_prompt_edit. HTML comments in it ' +
      'are operator notes, stripped from your instructions. Your operating rules (initialize.md) are out of reach of these tools.',
    inputSchema: systemPromptReadSchema(),
    capabilityScopes: [SELF_AUTHORSHIP_SCOPE],
    kind: 'read',
    effect: 'read-only',
    optIn: true,
    grant: 'system_prompt',
    execute() {
      const { content, exists } = readCurrent();
      return {
        file: SYSTEM_PROMPT_FILE,
        source: exists ? 'file' : 'default',
        confirm: sha256Hex(content),
        bytes: Buffer.byteLength(content, 'utf8'),
        content,
      };
    },
  };

  const edit: PolicyTool = {
    name: 'system_prompt_edit',
    description:
      'Replace your own system prompt (prompts/system-prompt.md) with `content`, the complete new text. Pass `confirm`: the ' +
      'token from system_prompt_read. Without it, or when the file changed since you read it, nothing is written and you get ' +
      'a preview of the change plus the current token. The old version is kept as a timestamped .bak. The change takes ' +
      'effect on your next turn, not this one. Keep the HTML comments (operator notes) unless you mean to drop them.',
    inputSchema: systemPromptEditSchema(),
    capabilityScopes: [SELF_AUTHORSHIP_SCOPE],
    kind: 'edit',
    effect: 'unsafe',
    optIn: true,
    grant: 'system_prompt',
    ...(options.needsApproval ? { needsApproval: true } : {}),
    execute(input: SystemPromptEditInput, context) {
      const bytes = Buffer.byteLength(input.content, 'utf8');
      if (input.content.trim() === '') {
        throw new AcxError('self-authorship-input', 'The new system prompt is empty.', { hint: 'Send the complete new text in `content`.' });
      }
      if (input.content.includes('\u0000')) {
        throw new AcxError('self-authorship-input', 'The new system prompt contains a NUL character.');
      }
      if (bytes > maxBytes) {
        throw new AcxError('self-authorship-input', `The new system prompt is ${bytes} bytes; the limit is ${maxBytes}.`, {
          hint: 'Shorten it.',
        });
      }
      const current = readCurrent();
      const currentHash = sha256Hex(current.content);
      if (input.confirm === undefined || !confirmMatches(input.confirm, currentHash)) {
        const stale = input.confirm !== undefined;
        return {
          status: stale ? 'stale' : 'preview',
          written: false,
          message: stale
            ? 'Nothing was written: the confirm token does not match the current content (it changed since you read it, or the token is wrong). Review the preview against the current text and call again with the current token.'
            : 'Nothing was written yet. Review the preview; to apply it, call again with the same content and this confirm token.',
          confirm: currentHash,
          preview: previewChange(current.content, input.content),
        };
      }
      if (input.content === current.content) {
        return { status: 'unchanged', written: false, message: 'The new text equals the current one; nothing to write.', confirm: currentHash };
      }
      let backup: string | null = null;
      if (current.exists) {
        const stamp = backupStamp(now());
        for (let n = 0; backup === null; n++) {
          const name = `${SYSTEM_PROMPT_FILE}.${stamp}${n > 0 ? `-${n}` : ''}.bak`;
          const path = join(options.configHome, ...name.split('/'));
          if (existsSync(path)) continue;
          writeFileExclusive(path, current.content);
          backup = name;
        }
      }
      mkdirSync(dirname(target), { recursive: true });
      writeFileAtomic(target, input.content);
      const newHash = sha256Hex(input.content);
      context.logger.info('system_prompt_edited', {
        old_sha256: currentHash.slice(0, 12),
        new_sha256: newHash.slice(0, 12),
        bytes,
        backup: backup ?? undefined,
      });
      return {
        status: 'written',
        written: true,
        message: 'Your system prompt was updated. The change takes effect on your next turn.',
        confirm: newHash,
        backup,
      };
    },
  };

  return [read, edit];
}
