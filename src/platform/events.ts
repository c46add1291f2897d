import type { Database } from '../store/database.ts';
import { type TimelineRow, viewerUuids } from './data/timelines.ts';
import { findUser } from './data/users.ts';
import { newUuid, nowIso } from './ids.ts';

/**
 * The events the platform tells its peers about, and who hears of each. Every event is
 * written to the delivery outbox in the same transaction as the record it is about, so an
 * event is never announced for a record that did not commit, nor lost for one that did; the
 * deliverer (delivery.ts) sends the outbox, however often it must try.
 */
export type PlatformEvent = 'message.created' | 'asset.created' | 'task.activated' | 'webhook_event.received';

export interface EventResource {
  type: 'message' | 'asset' | 'task' | 'webhook_event';
  uuid: string;
}

export interface OutboxConfig {
  /** Where every delivery goes: routers, each of which wakes the recipient it is addressed to. */
  subscribers: readonly string[];
  baseUrl: string;
}

const RESOURCE_PATH: Record<EventResource['type'], string> = { message: 'messages', asset: 'assets', task: 'tasks', webhook_event: 'webhook_events' };

/**
 * One delivery per recipient and subscriber. The recipients are the timeline's AI viewers
 * (people read the page; agents are woken), never suspended ones, and never the actor: an
 * agent is not woken by its own post. A task activation and an inbound webhook have no actor
 * (the platform's clock and an outside sender did it), so they reach every AI viewer: a task
 * an agent scheduled for itself is meant to wake it.
 */
export function recordEvent(
  db: Database,
  config: OutboxConfig,
  event: { name: PlatformEvent; timeline: TimelineRow; actorUuid: string | null; resource: EventResource },
): number {
  if (config.subscribers.length === 0) return 0;
  const recipients = viewerUuids(db, event.timeline).filter((uuid) => {
    if (uuid === event.actorUuid) return false;
    const user = findUser(db, uuid);
    return user !== undefined && user.kind === 'ai' && user.suspended === 0;
  });
  const occurredAt = nowIso();
  const insert = db.prepare(
    `INSERT INTO deliveries (uuid, event, timeline_uuid, recipient_uuid, target_url, body, state, attempts, next_attempt_ms, created_at)
     VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?)`,
  );
  let count = 0;
  for (const recipient of recipients) {
    for (const target of config.subscribers) {
      const delivery = newUuid();
      // The body is fixed here, once: a retry re-sends the same bytes under the same signature.
      const body = JSON.stringify({
        event: event.name,
        event_id: delivery,
        occurred_at: occurredAt,
        actor_uuid: event.actorUuid,
        recipient_uuid: recipient,
        timeline_uuid: event.timeline.uuid,
        resource: { ...event.resource, url: `${config.baseUrl}/${RESOURCE_PATH[event.resource.type]}/${event.resource.uuid}` },
      });
      insert.run(delivery, event.name, event.timeline.uuid, recipient, target, body, Date.now(), occurredAt);
      count += 1;
    }
  }
  return count;
}
