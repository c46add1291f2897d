import type { Database } from '../../store/database.ts';
import { isUuid, newUuid, nowIso } from '../ids.ts';
import { PlatformError } from '../problem.ts';
import { isAdmin, type UserRow } from './users.ts';

export interface TimelineRow {
  uuid: string;
  name: string;
  owner_uuid: string;
  locked: number;
  created_at: string;
  updated_at: string;
}

export function insertTimeline(db: Database, owner: UserRow, name: string): TimelineRow {
  const at = nowIso();
  const row: TimelineRow = { uuid: newUuid(), name, owner_uuid: owner.uuid, locked: 0, created_at: at, updated_at: at };
  db.prepare('INSERT INTO timelines (uuid, name, owner_uuid, locked, created_at, updated_at) VALUES (:uuid, :name, :owner_uuid, :locked, :created_at, :updated_at)').run({ ...row });
  return row;
}

export function findTimeline(db: Database, uuid: string): TimelineRow | undefined {
  if (!isUuid(uuid)) return undefined;
  return db.prepare('SELECT * FROM timelines WHERE uuid = ?').get(uuid) as TimelineRow | undefined;
}

export function ownedTimelineCount(db: Database, owner: string): number {
  return (db.prepare('SELECT count(*) AS n FROM timelines WHERE owner_uuid = ?').get(owner) as { n: number }).n;
}

/** The viewers of a timeline: its owner first, then its participants in the order they joined. */
export function viewerUuids(db: Database, timeline: TimelineRow): string[] {
  const participants = db.prepare('SELECT user_uuid FROM participations WHERE timeline_uuid = ? ORDER BY created_at, user_uuid').all(timeline.uuid) as Array<{ user_uuid: string }>;
  return [timeline.owner_uuid, ...participants.map((p) => p.user_uuid)];
}

export function participantUuids(db: Database, timeline: TimelineRow): string[] {
  return viewerUuids(db, timeline).slice(1);
}

export function isViewer(db: Database, timeline: TimelineRow, user: UserRow): boolean {
  if (timeline.owner_uuid === user.uuid) return true;
  return db.prepare('SELECT 1 FROM participations WHERE timeline_uuid = ? AND user_uuid = ?').get(timeline.uuid, user.uuid) !== undefined;
}

/** SQL for "the timelines :viewer can see", to filter any list by. */
export const VISIBLE_TIMELINES = `(SELECT uuid FROM timelines WHERE owner_uuid = :viewer
  UNION SELECT timeline_uuid FROM participations WHERE user_uuid = :viewer)`;

/** The timeline, if it exists and `user` may view it: 404 for none, 403 not_a_viewer otherwise. */
export function viewableTimeline(db: Database, uuid: string, user: UserRow): TimelineRow {
  const timeline = findTimeline(db, uuid);
  if (!timeline) throw new PlatformError('not_found', `No timeline ${uuid}.`);
  if (!isViewer(db, timeline, user)) throw new PlatformError('not_a_viewer', `You are not a viewer of timeline ${uuid}.`);
  return timeline;
}

/** A viewable timeline that takes new content: a locked one refuses (403 timeline_locked). */
export function writableTimeline(db: Database, uuid: string, user: UserRow): TimelineRow {
  const timeline = viewableTimeline(db, uuid, user);
  assertUnlocked(timeline);
  return timeline;
}

export function assertUnlocked(timeline: TimelineRow): void {
  if (timeline.locked) throw new PlatformError('timeline_locked', `Timeline ${timeline.uuid} is locked: it takes no new content.`);
}

/** Owner-or-admin powers (participants, delete): a viewer who is neither gets not_timeline_owner. */
export function ownedTimeline(db: Database, uuid: string, user: UserRow): TimelineRow {
  const timeline = viewableTimeline(db, uuid, user);
  if (timeline.owner_uuid !== user.uuid && !isAdmin(user)) {
    throw new PlatformError('not_timeline_owner', `Only the owner of timeline ${uuid} may do that.`);
  }
  return timeline;
}

export function touchTimeline(db: Database, uuid: string): void {
  db.prepare('UPDATE timelines SET updated_at = ? WHERE uuid = ?').run(nowIso(), uuid);
}

/** Lock is one-way: there is no unlock, in the API or here. */
export function lockTimeline(db: Database, timeline: TimelineRow): void {
  if (timeline.locked) return;
  db.prepare('UPDATE timelines SET locked = 1, updated_at = ? WHERE uuid = ?').run(nowIso(), timeline.uuid);
}

/** Deletes the timeline and (by cascade) everything on it. The caller removes its asset files. */
export function deleteTimeline(db: Database, timeline: TimelineRow): void {
  db.prepare('DELETE FROM timelines WHERE uuid = ?').run(timeline.uuid);
}

export function addParticipant(db: Database, timeline: TimelineRow, user: UserRow): void {
  db.prepare('INSERT OR IGNORE INTO participations (timeline_uuid, user_uuid, created_at) VALUES (?, ?, ?)').run(timeline.uuid, user.uuid, nowIso());
}

export function removeParticipant(db: Database, timeline: TimelineRow, userUuid: string): void {
  db.prepare('DELETE FROM participations WHERE timeline_uuid = ? AND user_uuid = ?').run(timeline.uuid, userUuid);
}
