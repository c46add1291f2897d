import type { Page } from '../pagination.ts';
import type { Actor, Asset, Message, Task, Timeline, TimelineItem, WebhookEvent } from '../types.ts';

/**
 * How platform records read to a model: one line each, its `[created_at]` first, who made it,
 * its uuid (what the other tools take), then its content. Peer-written text is data, so it is
 * quoted, never spliced into the tool's own words.
 */
export const who = (actor: Actor): string => `@${actor.handle} (${actor.kind})`;

export function messageLine(message: Message): string {
  return `[${message.created_at}] ${who(message.user)} message ${message.content.uuid}: ${JSON.stringify(message.content.body)}`;
}

export function assetLine(asset: Asset): string {
  const file = asset.content.file;
  const what = file ? `${JSON.stringify(file.filename)} ${file.content_type}, ${file.byte_size} bytes` : 'no file';
  return `[${asset.created_at}] ${who(asset.user)} asset ${asset.content.uuid}: ${what}${asset.content.description ? `, described ${JSON.stringify(asset.content.description)}` : ''}`;
}

export function taskLine(task: Task): string {
  return `[${task.created_at}] ${who(task.user)} task ${task.content.uuid} (${task.content.status}, activates ${task.content.activate_at}): ${JSON.stringify(task.content.instructions)}`;
}

export function webhookEventLine(event: WebhookEvent): string {
  return `[${event.created_at}] webhook event ${event.content.uuid} from endpoint ${event.webhook_endpoint.uuid} (${event.content.content_type}): ${JSON.stringify(event.content.payload.slice(0, 2000))}`;
}

export function itemLine(item: TimelineItem): string {
  switch (item.type) {
    case 'message':
      return messageLine(item);
    case 'asset':
      return assetLine(item);
    case 'task':
      return taskLine(item);
    case 'webhook_event':
      return webhookEventLine(item);
    default: {
      // A kind this client does not know yet (the API is additive): its time, type and uuid.
      const unknown = item as { created_at?: string; type?: string; content?: { uuid?: string } };
      return `[${unknown.created_at}] ${unknown.type} ${unknown.content?.uuid ?? ''}`.trim();
    }
  }
}

export function timelineLine(timeline: Timeline): string {
  const people = [timeline.owner, ...timeline.participants].map((a) => `@${a.handle}`).join(', ');
  return `${JSON.stringify(timeline.name)} ${timeline.uuid}: owner @${timeline.owner.handle}; viewers ${people}${timeline.locked ? '; LOCKED (read-only for good)' : ''}`;
}

/** A page for the model: oldest first (reading order), and how to get older ones. */
export function pageText<T>(page: Page<T>, line: (item: T) => string, noun: string, limit: number): string {
  const shown = page.items.slice(0, limit);
  if (shown.length === 0) return `No ${noun}.`;
  const more = page.items.length > limit || page.nextCursor !== null;
  const cursor = page.items.length > limit ? (shown[shown.length - 1] as { content?: { uuid: string }; uuid?: string }) : undefined;
  const next = cursor ? (cursor.content?.uuid ?? cursor.uuid) : page.nextCursor;
  const lines = [...shown].reverse().map(line);
  return [`${shown.length} ${noun}, oldest first:`, ...lines, ...(more && next ? [`Older ones exist: call again with before=${next}.`] : [])].join('\n');
}
