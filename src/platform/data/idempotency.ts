import type { Database } from '../../store/database.ts';
import { nowIso } from '../ids.ts';

/**
 * Keyed creates (messages, assets, tasks, webhook endpoints). A key is scoped per timeline,
 * author and kind; a replay returns the record the key first created, even if the body differs,
 * so a client that lost the answer to a create can send it again and get exactly one record.
 */
export type KeyedKind = 'message' | 'asset' | 'task' | 'webhook_endpoint';

export interface IdempotencyScope {
  timeline: string;
  user: string;
  kind: KeyedKind;
  key: string;
}

/** The Idempotency-Key header, trimmed; empty means none. */
export function idempotencyKey(header: string | undefined): string | undefined {
  const key = header?.trim();
  return key ? key : undefined;
}

export function replayedRecord(db: Database, scope: IdempotencyScope): string | undefined {
  const row = db
    .prepare('SELECT record_uuid FROM idempotency_keys WHERE timeline_uuid = ? AND user_uuid = ? AND kind = ? AND key = ?')
    .get(scope.timeline, scope.user, scope.kind, scope.key) as { record_uuid: string } | undefined;
  return row?.record_uuid;
}

/** Recorded in the transaction that creates the record, so a key never outlives or precedes it. */
export function rememberKey(db: Database, scope: IdempotencyScope, recordUuid: string): void {
  db.prepare('INSERT INTO idempotency_keys (timeline_uuid, user_uuid, kind, key, record_uuid, created_at) VALUES (?, ?, ?, ?, ?, ?)').run(
    scope.timeline,
    scope.user,
    scope.kind,
    scope.key,
    recordUuid,
    nowIso(),
  );
}
