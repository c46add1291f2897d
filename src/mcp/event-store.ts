import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/**
 * The events one Streamable HTTP session sent on its SSE streams, so a client whose stream
 * dropped reconnects with `Last-Event-ID` and gets what it missed (the SDK transport does the
 * replay; this keeps the events). Bounded: the session's most recent events are kept, at most
 * `events` of them and `bytes` of JSON (the newest always), older ones forgotten — a client that
 * was away for longer than that starts over with a new request. Event ids are this session's sequence numbers; they need no secrecy, since only
 * the session's holder (bearer token and session id) may resume.
 */
export const DEFAULT_EVENTS_KEPT = { events: 1000, bytes: 4 * 1024 * 1024 };

export class SessionEventStore implements EventStore {
  private readonly limits: { events: number; bytes: number };
  private next = 1;
  private bytes = 0;
  /** Insertion order is event order. */
  private readonly events = new Map<string, { streamId: string; message: JSONRPCMessage; bytes: number }>();

  constructor(limits: Partial<typeof DEFAULT_EVENTS_KEPT> = {}) {
    this.limits = { ...DEFAULT_EVENTS_KEPT, ...limits };
  }

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const eventId = String(this.next++);
    const bytes = JSON.stringify(message).length;
    this.events.set(eventId, { streamId, message, bytes });
    this.bytes += bytes;
    while (this.events.size > 1 && (this.events.size > this.limits.events || this.bytes > this.limits.bytes)) {
      const [oldest, event] = this.events.entries().next().value!;
      this.events.delete(oldest);
      this.bytes -= event.bytes;
    }
    return eventId;
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return this.events.get(eventId)?.streamId;
  }

  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    const last = this.events.get(lastEventId);
    if (!last) return '';
    let after = false;
    for (const [eventId, event] of [...this.events]) {
      if (eventId === lastEventId) after = true;
      // The priming event (an empty message) marks a place to resume from; it is not sent again.
      else if (after && event.streamId === last.streamId && Object.keys(event.message).length > 0) await send(eventId, event.message);
    }
    return last.streamId;
  }
}
