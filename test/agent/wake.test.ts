// Wake mode's turn-level behaviour, in process against the local model server: events that piled
// up are answered together in one turn; a peer AI's message is read at human speed first, and
// what arrives meanwhile is folded in; a batch whose turn failed is answered again as it was.
import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { batchPrompt, type PacingSettings, wake } from '../../src/agent/wake.ts';
import { WakeStore } from '../../src/store/wake-store.ts';
import { openaiModel, rig, startModelServer } from '../engine/helpers.ts';
import type { ModelServer, RecordedRequest } from '../support/model-server.ts';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

const OFF = { max: 0, windowMs: 60_000, cooldownMs: 60_000 };
const NO_PACING: PacingSettings = { enabled: false, charsPerSecond: 17, floorMs: 20_000 };
/** A lease holder that has exited: the wake under test takes its lease over. */
const gone = () => ({ pid: spawnSync(process.execPath, ['-e', '0']).pid!, host: hostname(), started: null });
const userTexts = (request: RecordedRequest) =>
  request.view.messages.filter((m) => m.role === 'user' && !m.text?.startsWith('<acx-brief>')).map((m) => m.text ?? '');

async function setup() {
  const r = rig(await openaiModel(server));
  const store = new WakeStore(join(r.home, 'wake.db'));
  return { r, store };
}

describe('wake()', () => {
  it('answers the events that piled up in one turn, each with its sender and arrival time', async () => {
    const { r, store } = await setup();
    const dead = gone();
    store.admit('room', { id: 'e1', text: 'Is the deploy done?', sender: 'alice' }, OFF, dead);
    store.admit('room', { id: 'e2', text: 'Also, who is on call?', sender: 'bob' }, OFF, dead);
    server.enqueue('Deploy is done; Carol is on call.');
    const replies: string[][] = [];
    const outcome = await wake({
      agent: r.agent,
      store,
      sessionId: 'room',
      breaker: OFF,
      pacing: NO_PACING,
      logger: r.logger,
      onReply: (items) => void replies.push(items.map((item) => item.eventId)),
    });
    expect(outcome).toEqual({ outcome: 'answered', answered: 2, failedEvents: [] });
    expect(replies).toEqual([['e1', 'e2']]);
    expect(server.requests).toHaveLength(1);
    const asked = userTexts(server.requests[0]!).at(-1)!;
    expect(asked).toMatch(/^2 messages arrived since your last reply:\n\n\[\S+Z\] alice: Is the deploy done\?\n\n\[\S+Z\] bob: Also, who is on call\?$/);
    expect(store.items('room').map((item) => [item.eventId, item.state, item.reply])).toEqual([
      ['e1', 'done', 'Deploy is done; Carol is on call.'],
      ['e2', 'done', 'Deploy is done; Carol is on call.'],
    ]);
    store.close();
  });

  it("reads a peer AI's message at human speed, folds in what arrives meanwhile, and answers people at once", async () => {
    const { r, store } = await setup();
    let clock = Date.parse('2026-11-30T12:00:00Z');
    const sleeps: number[] = [];
    const pacing: PacingSettings = { enabled: true, charsPerSecond: 17, floorMs: 20_000 };
    const longText = 'x'.repeat(17 * 30); // 30 s to read at 17 chars/s
    store.admit('ai-room', { id: 'a1', text: 'Hello from the other bot.', sender: 'bot-b', senderKind: 'ai' }, OFF, gone(), clock);
    clock += 5_000; // it waited 5 s already: only the rest of the 20 s floor is owed
    server.enqueue('Hi, bot-b.');
    await wake({
      agent: r.agent,
      store,
      sessionId: 'ai-room',
      breaker: OFF,
      pacing,
      logger: r.logger,
      now: () => clock,
      sleep: async (ms) => {
        sleeps.push(ms);
        clock += ms;
        // While it reads, the other bot writes again: the read restarts on the newer message.
        if (sleeps.length === 1) store.admit('ai-room', { id: 'a2', text: longText, sender: 'bot-b', senderKind: 'ai' }, OFF, gone(), clock);
      },
    });
    expect(sleeps).toEqual([15_000, 30_000]);
    expect(server.requests).toHaveLength(1);
    expect(userTexts(server.requests[0]!).at(-1)).toMatch(/^2 messages arrived since your last reply:/);
    expect(r.logger.lines.join('\n')).toMatch(/INFO wake pacing session=ai-room event=a1 read=20\.0s wait=15\.0s/);

    // A person's message is answered at once.
    sleeps.length = 0;
    store.admit('ai-room', { id: 'h1', text: 'Stop, both of you.', sender: 'dana', senderKind: 'human' }, OFF, gone(), clock);
    server.enqueue('Stopping.');
    await wake({ agent: r.agent, store, sessionId: 'ai-room', breaker: OFF, pacing, logger: r.logger, now: () => clock, sleep: async (ms) => void sleeps.push(ms) });
    expect(sleeps).toEqual([]);
    expect(batchPrompt(store.items('ai-room').slice(-1))).toMatch(/\] dana: Stop, both of you\.$/);
    store.close();
  });

  it('answers a batch whose turn failed again as it was, in the same turn, before newer events', async () => {
    const { r, store } = await setup();
    const dead = gone();
    store.admit('q', { id: 'b1', text: 'first' }, OFF, dead);
    store.admit('q', { id: 'b2', text: 'second' }, OFF, dead);
    server.enqueue({ fail: { status: 400 } });
    await expect(wake({ agent: r.agent, store, sessionId: 'q', breaker: OFF, pacing: NO_PACING, logger: r.logger })).rejects.toThrow();
    expect(store.items('q').map((item) => [item.eventId, item.state, item.batchId, item.attempts])).toEqual([
      ['b1', 'pending', 'b1', 1],
      ['b2', 'pending', 'b1', 1],
    ]);

    store.admit('q', { id: 'b3', text: 'third' }, OFF, gone());
    server.enqueue('Answer to first and second.', 'Answer to third.');
    const batches: string[][] = [];
    await wake({
      agent: r.agent,
      store,
      sessionId: 'q',
      breaker: OFF,
      pacing: NO_PACING,
      logger: r.logger,
      onReply: (items) => void batches.push(items.map((item) => item.eventId)),
    });
    expect(batches).toEqual([['b1', 'b2'], ['b3']]);
    const turns = r.readJournal((journal) => journal.messages('q').filter((m) => m.kind === 'user').map((m) => m.message.content));
    expect(turns, 'the failed batch was not taken a second time').toHaveLength(2);
    store.close();
  });
});
