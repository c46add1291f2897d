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
export function fileChangeEntry(change: FileChange, call: { turnId: string; callId: string; toolName: string }): FileChangeEntry | undefined {
  const { record } = change;
  if (!record) return undefined;
  const after = readRegularFile(record.location);
  if (after === 'other') return undefined;
  const before = record.before === undefined || (record.before !== null && record.before.length > RECORDED_CONTENT_LIMIT) ? { state: 'unknown' as const } : record.before === null ? { state: 'missing' as const } : { state: 'content' as const, content: record.before };
  return {
    ...call,
    path: change.path,
    location: record.location,
    before,
    after: after === null ? null : { sha256: sha256(after), ...(after.length <= RECORDED_CONTENT_LIMIT ? { content: after } : {}) },
  };
}

/** A regular file's content, null when nothing is there, 'other' when it is not a regular file (never followed through a symlink). */
export function readRegularFile(location: string): Uint8Array | null | 'other' {
  let fd: number;
  try {
    fd = fs.openSync(location, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    return 'other';
  }
  try {
    if (!fs.fstatSync(fd).isFile()) return 'other';
    return fs.readFileSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

export function sha256(content: Uint8Array): string {
  return createHash('sha256').update(content).digest('hex');
}
