import fs from 'node:fs';
import { dirname } from 'node:path';
import { randomBytes } from 'node:crypto';
import { RewindRefusedError, type RewindRefusal } from '../core/errors.ts';
import { fileNow } from '../engine/file-record.ts';
import type { FileChangeRecord } from '../store/session-branches.ts';
import { secureEqual } from '../util/secure-compare.ts';

/**
 * Putting back the workspace files the agent's tools changed after a turn (session.rewind with
 * `files: true`), from the journal's record of each change (file-changes-schema.ts).
 */

/** A file a rewind put back: rewritten with its earlier content, or removed because it did not exist then. */
export interface RestoredFile {
  path: string;
  action: 'restored' | 'removed';
}

interface Restore {
  path: string;
  location: string;
  /** The content to put back; null: the file did not exist then. */
  content: Uint8Array | null;
}

export interface RestorePlan {
  restores: Restore[];
  refusals: RewindRefusal[];
}

/**
 * What to put back for each file changed in the dropped turns (`after`, in recorded order), given
 * the changes of the kept turns (`before`): the content the first dropped change found, or else
 * what the last kept change left. A file is refused when it is not now what the agent's tool last
 * left (someone else changed it since), or when the content to put back was never recorded.
 */
export function planFileRestore(before: readonly FileChangeRecord[], after: readonly FileChangeRecord[]): RestorePlan {
  const byLocation = new Map<string, FileChangeRecord[]>();
  for (const change of after) byLocation.set(change.location, [...(byLocation.get(change.location) ?? []), change]);
  const restores: Restore[] = [];
  const refusals: RewindRefusal[] = [];
  for (const [location, changes] of byLocation) {
    const first = changes[0]!;
    const last = changes[changes.length - 1]!;
    const path = first.path;
    if (!isAsLeft(location, last.after)) {
      refusals.push({ path, reason: 'changed-since' });
      continue;
    }
    const content = earlierContent(first, before.filter((change) => change.location === location).at(-1));
    if (content === 'unknown') refusals.push({ path, reason: 'not-recorded' });
    else restores.push({ path, location, content });
  }
  refusals.sort((a, b) => a.path.localeCompare(b.path));
  return { restores, refusals };
}

/** Whether the file is now exactly what the change left (absent when it deleted it). */
function isAsLeft(location: string, left: FileChangeRecord['after']): boolean {
  const now = fileNow(location);
  if (now === 'other') return false;
  if (now === null || left === null) return now === left;
  return secureEqual(now.sha256, left.sha256);
}

function earlierContent(first: FileChangeRecord, lastKept: FileChangeRecord | undefined): Uint8Array | null | 'unknown' {
  if (first.before.state === 'content') return first.before.content;
  if (first.before.state === 'missing') return null;
  if (!lastKept) return 'unknown';
  if (lastKept.after === null) return null;
  return lastKept.after.content ?? 'unknown';
}

/**
 * Refuses the plan when any file is refused (nothing touched); otherwise writes each content to a
 * temp file beside its file, the step that can fail on a full or read-only disk. `publish` then
 * moves them into place (and removes the files that did not exist); `discard` removes the temps.
 */
export function stageFileRestore(sessionId: string, plan: RestorePlan): { publish(): RestoredFile[]; discard(): void } {
  if (plan.refusals.length > 0) throw new RewindRefusedError(sessionId, plan.refusals);
  const temps: Array<{ restore: Restore; temp: string | undefined }> = [];
  const discard = () => {
    for (const { temp } of temps) if (temp) fs.rmSync(temp, { force: true });
  };
  try {
    for (const restore of plan.restores) {
      if (restore.content === null) {
        temps.push({ restore, temp: undefined });
        continue;
      }
      fs.mkdirSync(dirname(restore.location), { recursive: true });
      const temp = `${restore.location}.acx-rewind-${randomBytes(6).toString('hex')}`;
      temps.push({ restore, temp });
      fs.writeFileSync(temp, restore.content, { flag: 'wx', mode: modeOf(restore.location) });
    }
  } catch (error) {
    discard();
    throw error;
  }
  return {
    discard,
    publish: () =>
      temps
        .map(({ restore, temp }): RestoredFile => {
          if (temp) fs.renameSync(temp, restore.location);
          else fs.rmSync(restore.location, { force: true });
          return { path: restore.path, action: temp ? 'restored' : 'removed' };
        })
        .sort((a, b) => a.path.localeCompare(b.path)),
  };
}

/** The file's permission bits when it exists (a restore keeps them), else the usual 0644. */
function modeOf(location: string): number {
  try {
    return fs.lstatSync(location).mode & 0o777;
  } catch {
    return 0o644;
  }
}
