import { transaction } from '../../store/database.ts';
import { findRecord, type ItemType } from '../data/items.ts';
import { type IdempotencyScope, type KeyedKind, idempotencyKey, rememberKey, replayedRecord } from '../data/idempotency.ts';
import { assertUnlocked, type TimelineRow, viewableTimeline } from '../data/timelines.ts';
import { type EventResource, type PlatformEvent, recordEvent } from '../events.ts';
import type { PlatformContext, PlatformRuntime } from '../runtime.ts';

/**
 * The four keyed creates share one order of checks, stated here once, all inside the one
 * transaction that writes: the timeline exists and is viewable → a replayed Idempotency-Key returns the record it first
 * created (201, even if the body differs, even if the timeline has since been locked: that
 * record exists) → a locked timeline refuses → the input is validated and the record, its key
 * and its event are written in one transaction.
 */
export interface KeyedCreate<T extends { uuid: string; timeline_uuid: string }> {
  timelineId: string;
  kind: KeyedKind;
  /** Validates the input and inserts the record (inside the transaction). */
  create(timeline: TimelineRow): T;
  event?: { name: PlatformEvent; resource: (row: T) => EventResource };
}

export function scopeOf(c: PlatformContext, timeline: TimelineRow, kind: KeyedKind): IdempotencyScope | undefined {
  const key = idempotencyKey(c.req.header('idempotency-key'));
  return key === undefined ? undefined : { timeline: timeline.uuid, user: c.get('user').uuid, kind, key };
}

/** The record a replayed key names, if this request's key was used before. */
export function replay<T extends { timeline_uuid: string }>(rt: PlatformRuntime, scope: IdempotencyScope | undefined): T | undefined {
  if (!scope) return undefined;
  const uuid = replayedRecord(rt.db, scope);
  return uuid === undefined ? undefined : findRecord<T>(rt.db, scope.kind as ItemType, uuid);
}

export function keyedCreate<T extends { uuid: string; timeline_uuid: string }>(rt: PlatformRuntime, c: PlatformContext, spec: KeyedCreate<T>): { row: T; replayed: boolean } {
  let queued = 0;
  const result = transaction(rt.db, () => {
    const timeline = viewableTimeline(rt.db, spec.timelineId, c.get('user'));
    const scope = scopeOf(c, timeline, spec.kind);
    const earlier = replay<T>(rt, scope);
    if (earlier) return { row: earlier, replayed: true };
    assertUnlocked(timeline);
    const row = spec.create(timeline);
    if (scope) rememberKey(rt.db, scope, row.uuid);
    if (spec.event) {
      queued = recordEvent(rt.db, rt.outbox, { name: spec.event.name, timeline, actorUuid: c.get('user').uuid, resource: spec.event.resource(row) });
    }
    return { row, replayed: false };
  });
  if (result.replayed) c.header('Idempotent-Replayed', 'true');
  if (queued > 0) rt.kickDeliveries();
  return result;
}
