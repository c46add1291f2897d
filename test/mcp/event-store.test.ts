// The events a Streamable HTTP session keeps for a client that resumes: replayed in order, its
// own stream's only, the priming marker not sent again, and only the most recent ones kept.
import { describe, expect, it } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { SessionEventStore } from '../../src/mcp/event-store.ts';

const note = (n: number): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: `line ${n}` } });

async function replay(store: SessionEventStore, after: string): Promise<{ stream: string; sent: string[] }> {
  const sent: string[] = [];
  const stream = await store.replayEventsAfter(after, { send: async (id, message) => void sent.push(`${id}:${JSON.stringify((message as { params?: { data?: string } }).params?.data)}`) });
  return { stream, sent };
}

describe('SessionEventStore', () => {
  it("replays what came after the client's last event, on its stream only, without the priming marker", async () => {
    const store = new SessionEventStore();
    const primed = await store.storeEvent('call', {} as JSONRPCMessage);
    await store.storeEvent('other', note(1));
    await store.storeEvent('call', note(2));
    await store.storeEvent('call', {} as JSONRPCMessage);
    await store.storeEvent('call', note(3));
    expect(await store.getStreamIdForEventId(primed)).toBe('call');
    expect(await replay(store, primed)).toEqual({ stream: 'call', sent: ['3:"line 2"', '5:"line 3"'] });
  });

  it('keeps only the most recent events: a client away for longer starts over', async () => {
    const store = new SessionEventStore({ events: 3 });
    const ids = [];
    for (let n = 1; n <= 5; n++) ids.push(await store.storeEvent('call', note(n)));
    expect(await store.getStreamIdForEventId(ids[1]!)).toBeUndefined();
    expect(await replay(store, ids[1]!)).toEqual({ stream: '', sent: [] });
    expect(await replay(store, ids[2]!)).toEqual({ stream: 'call', sent: ['4:"line 4"', '5:"line 5"'] });
  });

  it('keeps at most its byte budget of events, and always the newest', async () => {
    const size = JSON.stringify(note(1)).length;
    const store = new SessionEventStore({ bytes: size * 2 });
    const ids = [];
    for (let n = 1; n <= 3; n++) ids.push(await store.storeEvent('call', note(n)));
    expect(await store.getStreamIdForEventId(ids[0]!)).toBeUndefined();
    expect(await replay(store, ids[1]!)).toEqual({ stream: 'call', sent: ['3:"line 3"'] });
    const big = { jsonrpc: '2.0', id: 9, result: { content: [{ type: 'text', text: 'x'.repeat(size * 3) }] } } as JSONRPCMessage;
    const bigId = await store.storeEvent('call', big);
    expect(await store.getStreamIdForEventId(ids[2]!)).toBeUndefined();
    expect(await store.getStreamIdForEventId(bigId)).toBe('call');
  });
});
