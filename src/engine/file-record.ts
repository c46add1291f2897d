import { createHash } from 'node:crypto';
import fs from 'node:fs';
import type { FileChangeEntry } from '../store/session-branches.ts';
import { type FileChange, RECORDED_CONTENT_LIMIT } from '../tools/tool.ts';

/**
 * The journal entry for a change a tool reported with a `record` (see FileChange), read at once —
 * the file is as the tool left it now, not after the call's next change. Undefined when there is
 * nothing to record: no `record`, or the path is now something other than a regular file or
 * nothing (a symlink, a directory), which a rewind does not restore.
 */
export function fileChangeEntry(change: FileChange, call: { turnId: string; callId: string; toolName: string }, budget: RecordingBudget): FileChangeEntry | undefined {
  const { record } = change;
  if (!record) return undefined;
  const now = fileNow(record.location);
  if (now === 'other') return undefined;
  const before = record.before === undefined || !budget.take(record.before?.length ?? 0) ? { state: 'unknown' as const } : record.before === null ? { state: 'missing' as const } : { state: 'content' as const, content: record.before };
  const after = now?.content && !budget.take(now.content.length) ? { sha256: now.sha256 } : now;
  return { ...call, path: change.path, location: record.location, before, after };
}

/** The most file content one call's changes keep in the journal (a build can write thousands of files); past it, hashes only. */
export const RECORDED_BYTES_PER_CALL = 64 * 1024 * 1024;

export interface RecordingBudget {
  /** Whether `bytes` more fit (each within RECORDED_CONTENT_LIMIT, all within the call's total); counts them when they do. */
  take(bytes: number): boolean;
}

export function recordingBudget(total = RECORDED_BYTES_PER_CALL): RecordingBudget {
  let left = total;
  return {
    take(bytes) {
      if (bytes > RECORDED_CONTENT_LIMIT || bytes > left) return false;
      left -= bytes;
      return true;
    },
  };
}

/**
 * What is at `location` now, never followed through a symlink: null when nothing is, 'other' when
 * it is not a regular file, else its hash, with its content when within RECORDED_CONTENT_LIMIT
 * (a larger file is hashed in pieces, never held whole).
 */
export function fileNow(location: string): { sha256: string; content?: Uint8Array } | null | 'other' {
  let fd: number;
  try {
    fd = fs.openSync(location, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? null : 'other';
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) return 'other';
    if (stat.size <= RECORDED_CONTENT_LIMIT) {
      const content = fs.readFileSync(fd);
      return { sha256: createHash('sha256').update(content).digest('hex'), content };
    }
    const hash = createHash('sha256');
    const chunk = Buffer.alloc(1024 * 1024);
    for (let read = fs.readSync(fd, chunk); read > 0; read = fs.readSync(fd, chunk)) hash.update(chunk.subarray(0, read));
    return { sha256: hash.digest('hex') };
  } finally {
    fs.closeSync(fd);
  }
}
