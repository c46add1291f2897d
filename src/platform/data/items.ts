import type { Database } from '../../store/database.ts';
import { newUuid, nowIso, randomToken } from '../ids.ts';
import { PlatformError } from '../problem.ts';
import { isViewer, type TimelineRow, findTimeline } from './timelines.ts';
import type { UserRow } from './users.ts';

/** The three kinds of content peers post on a timeline, as stored. */
export interface MessageRow {
  uuid: string;
  timeline_uuid: string;
  user_uuid: string;
  body: string;
  created_at: string;
  updated_at: string;
}

export interface AssetRow {
  uuid: string;
  timeline_uuid: string;
  user_uuid: string;
  description: string;
  filename: string;
  content_type: string;
  byte_size: number;
  checksum: string;
  /** The unguessable part of the file's URL: the URL is the capability, as a signed blob URL is. */
  file_token: string;
  created_at: string;
  updated_at: string;
}

export type TaskStatus = 'pending' | 'activated' | 'blocked_timeline_locked' | 'cancelled';
export const TASK_STATUSES: readonly TaskStatus[] = ['pending', 'activated', 'blocked_timeline_locked', 'cancelled'];

export interface TaskRow {
  uuid: string;
  timeline_uuid: string;
  user_uuid: string;
  instructions: string;
  activate_at: string;
  activate_at_ms: number;
  status: TaskStatus;
  created_at: string;
  updated_at: string;
}

export function insertMessage(db: Database, timeline: TimelineRow, author: UserRow, body: string): MessageRow {
  const at = nowIso();
  const row: MessageRow = { uuid: newUuid(), timeline_uuid: timeline.uuid, user_uuid: author.uuid, body, created_at: at, updated_at: at };
  db.prepare('INSERT INTO messages (uuid, timeline_uuid, user_uuid, body, created_at, updated_at) VALUES (:uuid, :timeline_uuid, :user_uuid, :body, :created_at, :updated_at)').run({ ...row });
  return row;
}

export interface NewAsset {
  uuid: string;
  description: string;
  filename: string;
  contentType: string;
  byteSize: number;
  checksum: string;
}

export function insertAsset(db: Database, timeline: TimelineRow, author: UserRow, asset: NewAsset): AssetRow {
  const at = nowIso();
  const row: AssetRow = {
    uuid: asset.uuid,
    timeline_uuid: timeline.uuid,
    user_uuid: author.uuid,
    description: asset.description,
    filename: asset.filename,
    content_type: asset.contentType,
    byte_size: asset.byteSize,
    checksum: asset.checksum,
    file_token: randomToken('', 40),
    created_at: at,
    updated_at: at,
  };
  db.prepare(
    `INSERT INTO assets (uuid, timeline_uuid, user_uuid, description, filename, content_type, byte_size, checksum, file_token, created_at, updated_at)
     VALUES (:uuid, :timeline_uuid, :user_uuid, :description, :filename, :content_type, :byte_size, :checksum, :file_token, :created_at, :updated_at)`,
  ).run({ ...row });
  return row;
}

export function findAssetByFileToken(db: Database, token: string): AssetRow | undefined {
  return db.prepare('SELECT * FROM assets WHERE file_token = ?').get(token) as AssetRow | undefined;
}

export function insertTask(db: Database, timeline: TimelineRow, author: UserRow, instructions: string, activateAt: Date): TaskRow {
  const at = nowIso();
  const row: TaskRow = {
    uuid: newUuid(),
    timeline_uuid: timeline.uuid,
    user_uuid: author.uuid,
    instructions,
    activate_at: activateAt.toISOString(),
    activate_at_ms: activateAt.getTime(),
    status: 'pending',
    created_at: at,
    updated_at: at,
  };
  db.prepare(
    `INSERT INTO tasks (uuid, timeline_uuid, user_uuid, instructions, activate_at, activate_at_ms, status, created_at, updated_at)
     VALUES (:uuid, :timeline_uuid, :user_uuid, :instructions, :activate_at, :activate_at_ms, :status, :created_at, :updated_at)`,
  ).run({ ...row });
  return row;
}

export function pendingTaskCount(db: Database, timeline: string, author: string): number {
  return (db.prepare("SELECT count(*) AS n FROM tasks WHERE timeline_uuid = ? AND user_uuid = ? AND status = 'pending'").get(timeline, author) as { n: number }).n;
}

export function setTaskStatus(db: Database, task: TaskRow, status: TaskStatus): TaskRow {
  const updated_at = nowIso();
  db.prepare('UPDATE tasks SET status = ?, updated_at = ? WHERE uuid = ?').run(status, updated_at, task.uuid);
  return { ...task, status, updated_at };
}

export function dueTasks(db: Database, nowMs: number): TaskRow[] {
  return db.prepare("SELECT * FROM tasks WHERE status = 'pending' AND activate_at_ms <= ? ORDER BY activate_at_ms, uuid").all(nowMs) as unknown as TaskRow[];
}

export function nextDueMs(db: Database): number | undefined {
  const row = db.prepare("SELECT min(activate_at_ms) AS at FROM tasks WHERE status = 'pending'").get() as { at: number | null };
  return row.at ?? undefined;
}

/** The tables a timeline's records live in, by the `type` the wire gives them. */
export const ITEM_TABLES = {
  message: 'messages',
  asset: 'assets',
  task: 'tasks',
  webhook_endpoint: 'webhook_endpoints',
  webhook_event: 'webhook_events',
} as const;
export type ItemType = keyof typeof ITEM_TABLES;

export function findRecord<T extends { timeline_uuid: string }>(db: Database, type: ItemType, uuid: string): T | undefined {
  return db.prepare(`SELECT * FROM ${ITEM_TABLES[type]} WHERE uuid = ?`).get(uuid) as T | undefined;
}

/** A record by its own uuid, for a viewer of its timeline: 404 when there is none, 403 otherwise. */
export function viewableRecord<T extends { timeline_uuid: string }>(db: Database, type: ItemType, uuid: string, user: UserRow): { record: T; timeline: TimelineRow } {
  const record = findRecord<T>(db, type, uuid);
  const timeline = record ? findTimeline(db, record.timeline_uuid) : undefined;
  if (!record || !timeline) throw new PlatformError('not_found', `No ${type.replace('_', ' ')} ${uuid}.`);
  if (!isViewer(db, timeline, user)) throw new PlatformError('not_a_viewer', `You are not a viewer of the timeline ${type.replace('_', ' ')} ${uuid} is on.`);
  return { record, timeline };
}
