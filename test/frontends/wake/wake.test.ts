// Wake mode's turn-level behaviour, in process against the local model server: events that piled
// up are answered together in one turn; a peer AI's message is read at human speed first, and
// what arrives meanwhile is folded in; a message that lands while a turn generates gets the turn
// built again (unless it already acted); a batch whose turn failed is answered again as it was.
import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { batchPrompt, type PacingSettings, turnIdFor, wake } from '../../../src/frontends/wake/session.ts';
import { SqliteWakeStore } from '../../../src/store/sqlite-wake-store.ts';
import { tool } from '../../../src/tools/tool.ts';
import { z } from 'zod';
import { echoTool, openaiModel, rig, startModelServer } from '../../engine/helpers.ts';
import type { ModelServer, RecordedRequest } from '../../support/model-server.ts';
import { scaled } from '../../support/time-scale.ts';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

const OFF = { max: 0, windowMs: 60_000, cooldownMs: 60_000 };
const NO_PACING: PacingSettings = { enabled: false, charsPerSecond: 17, floorMs: 20_000, maxBuilds: 3 };
/** A lease holder that has exited: the wake under test takes its lease over. */
const gone = () => ({ pid: spawnSync(process.execPath, ['-e', '0']).pid!, host: hostname(), started: null });
const userTexts = (request: RecordedRequest) =>
  request.view.messages.filter((m) => m.role === 'user' && !m.text?.startsWith('<acx-brief>')).map((m) => m.text ?? '');

async function setup(agent: Parameters<typeof rig>[1] = {}) {
  const r = rig(await openaiModel(server), agent);
  const store = new SqliteWakeStore(join(r.home, 'wake.db'));
  return { r, store };
}

/** Another process, alive, delivering an event while the wake under test holds the lease. */
const otherWake = { pid: process.pid + 1, host: hostname(), started: null };

/** A held model response: resolves `reached` once the request for it is in, answers on `release`. */
function heldResponse() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  return { released, release };
}

async function requestsReach(count: number): Promise<void> {
  for (let i = 0; server.requests.length < count; i++) {
    if (i > scaled(400)) throw new Error(`the model server never got request ${count}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('wake()', () => {
  it('answers the events that piled up in one turn, each with its sender and arrival time', async () => {
    const { r, store } = await setup();
    const dead = gone();
    await store.admit('room', { id: 'e1', text: 'Is the deploy done?', sender: 'alice' }, OFF, dead);
    await store.admit('room', { id: 'e2', text: 'Also, who is on call?', sender: 'bob' }, OFF, dead);
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
    expect((await store.items('room')).map((item) => [item.eventId, item.state, item.reply])).toEqual([
      ['e1', 'done', 'Deploy is done; Carol is on call.'],
      ['e2', 'done', 'Deploy is done; Carol is on call.'],
    ]);
    await store.close();
  });

  it("reads a peer AI's message at human speed, folds in what arrives meanwhile, and answers people at once", async () => {
    const { r, store } = await setup();
    let clock = Date.parse('2026-11-30T12:00:00Z');
    const sleeps: number[] = [];
    const pacing: PacingSettings = { enabled: true, charsPerSecond: 17, floorMs: 20_000, maxBuilds: 3 };
    const longText = 'x'.repeat(17 * 30); // 30 s to read at 17 chars/s
    await store.admit('ai-room', { id: 'a1', text: 'Hello from the other bot.', sender: 'bot-b', senderKind: 'ai' }, OFF, gone(), clock);
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
        if (sleeps.length === 1) await store.admit('ai-room', { id: 'a2', text: longText, sender: 'bot-b', senderKind: 'ai' }, OFF, gone(), clock);
      },
    });
    expect(sleeps).toEqual([15_000, 30_000]);
    expect(server.requests).toHaveLength(1);
    expect(userTexts(server.requests[0]!).at(-1)).toMatch(/^2 messages arrived since your last reply:/);
    expect(r.logger.lines.join('\n')).toMatch(/INFO wake pacing session=ai-room event=a1 read=20\.0s wait=15\.0s/);

    // A person's message is answered at once.
    sleeps.length = 0;
    await store.admit('ai-room', { id: 'h1', text: 'Stop, both of you.', sender: 'dana', senderKind: 'human' }, OFF, gone(), clock);
    server.enqueue('Stopping.');
    await wake({ agent: r.agent, store, sessionId: 'ai-room', breaker: OFF, pacing, logger: r.logger, now: () => clock, sleep: async (ms) => void sleeps.push(ms) });
    expect(sleeps).toEqual([]);
    expect(batchPrompt((await store.items('ai-room')).slice(-1))).toMatch(/\] dana: Stop, both of you\.$/);
    await store.close();
  });

  it('builds the turn again when a message lands while it generates: one reply, for both', async () => {
    const { r, store } = await setup();
    await store.admit('ops', { id: 'e1', text: 'Deploy the release now.', sender: 'alice' }, OFF, gone());
    const draft = heldResponse();
    server.enqueue({ text: 'Deploying now.', pauseUntil: draft.released }, 'Not deploying: Bob asked to stop.');
    const replies: Array<{ events: string[]; text: string }> = [];
    const woken = wake({
      agent: r.agent,
      store,
      sessionId: 'ops',
      breaker: OFF,
      logger: r.logger,
      onReply: (items, result) => void replies.push({ events: items.map((item) => item.eventId), text: result.text }),
    });
    await requestsReach(1);
    await store.admit('ops', { id: 'e2', text: 'STOP! Do not deploy.', sender: 'bob', senderKind: 'human' }, OFF, otherWake);
    draft.release();
    expect(await woken).toEqual({ outcome: 'answered', answered: 2, failedEvents: [] });

    expect(replies).toEqual([{ events: ['e1', 'e2'], text: 'Not deploying: Bob asked to stop.' }]);
    expect(server.requests).toHaveLength(2);
    const rebuilt = server.requests[1]!;
    expect(userTexts(rebuilt).at(-1)).toMatch(
      /^While you were answering, another message arrived, so nothing from that answer has been delivered\. Answer again, taking it into account:\n\n\[\S+Z\] bob: STOP! Do not deploy\.$/,
    );
    expect(rebuilt.view.messages.filter((m) => m.role === 'assistant').map((m) => m.text)).toEqual(['Deploying now.']);
    expect((await store.items('ops')).map((item) => [item.eventId, item.state, item.build, item.reply])).toEqual([
      ['e1', 'done', 1, 'Not deploying: Bob asked to stop.'],
      ['e2', 'done', 2, 'Not deploying: Bob asked to stop.'],
    ]);
    expect(r.logger.lines.join('\n')).toMatch(/INFO wake rebuild session=ops batch=e1 build=2 late=e2/);
    expect(r.logger.lines.join('\n')).toMatch(/INFO wake end session=ops outcome=answered events=2 turns=2 steps=2/);
    await store.close();
  });

  it('never rebuilds a turn that called a tool, and the last allowed build stands', async () => {
    const echo = echoTool();
    const { r, store } = await setup({ agent: { tools: [echo] } });
    const replies: string[][] = [];
    const run = (pacing: PacingSettings) =>
      wake({ agent: r.agent, store, sessionId: 's', breaker: OFF, pacing, logger: r.logger, onReply: (items) => void replies.push(items.map((item) => item.eventId)) });

    // The turn echoed (a real effect): the message that landed meanwhile gets its own turn.
    await store.admit('s', { id: 't1', text: 'echo hi' }, OFF, gone());
    const held = heldResponse();
    server.enqueue({ toolCalls: [{ name: 'echo', input: { text: 'hi' } }] }, { text: 'Echoed hi.', pauseUntil: held.released }, 'Answer to t2.');
    const first = run({ ...NO_PACING, enabled: true, floorMs: 0 });
    await requestsReach(2);
    await store.admit('s', { id: 't2', text: 'and another thing' }, OFF, otherWake);
    held.release();
    await first;
    expect(replies).toEqual([['t1'], ['t2']]);
    expect(echo.seen).toEqual(['hi']);

    // Two builds allowed: the second stands although another message landed during it.
    replies.length = 0;
    const before = server.requests.length;
    await store.admit('s', { id: 'u1', text: 'one' }, OFF, gone());
    const build1 = heldResponse();
    const build2 = heldResponse();
    server.enqueue({ text: 'draft 1', pauseUntil: build1.released }, { text: 'Answer to one and two.', pauseUntil: build2.released }, 'Answer to three.');
    const second = run({ ...NO_PACING, enabled: true, maxBuilds: 2 });
    await requestsReach(before + 1);
    await store.admit('s', { id: 'u2', text: 'two' }, OFF, otherWake);
    build1.release();
    await requestsReach(before + 2);
    await store.admit('s', { id: 'u3', text: 'three' }, OFF, otherWake);
    build2.release();
    await second;
    expect(replies).toEqual([['u1', 'u2'], ['u3']]);
    expect((await store.item('s', 'u3'))?.reply).toBe('Answer to three.');
    await store.close();
  });

  it('takes a rebuild that failed up again at the same build, in the same turn', async () => {
    const { r, store } = await setup();
    await store.admit('f', { id: 'f1', text: 'first' }, OFF, gone());
    const draft = heldResponse();
    server.enqueue({ text: 'draft', pauseUntil: draft.released }, { fail: { status: 400 } });
    const failing = wake({ agent: r.agent, store, sessionId: 'f', breaker: OFF, logger: r.logger });
    await requestsReach(1);
    await store.admit('f', { id: 'f2', text: 'second' }, OFF, otherWake);
    draft.release();
    await expect(failing).rejects.toThrow();
    expect((await store.items('f')).map((item) => [item.eventId, item.state, item.batchId, item.build, item.attempts])).toEqual([
      ['f1', 'pending', 'f1', 1, 1],
      ['f2', 'pending', 'f1', 2, 0],
    ]);

    server.enqueue('Answer to first and second.');
    const replies: string[] = [];
    await wake({ agent: r.agent, store, sessionId: 'f', breaker: OFF, logger: r.logger, onReply: (_, result) => void replies.push(result.turnId) });
    expect(replies).toEqual([turnIdFor('f', 'f1', 2)]);
    const prompts = r.readJournal((journal) => journal.messages('f').filter((m) => m.kind === 'user').map((m) => String(m.message.content)));
    expect(prompts, 'one prompt per build, the failed rebuild not taken a second time').toHaveLength(2);
    expect(prompts[1]).toMatch(/^While you were answering/);
    expect((await store.items('f')).map((item) => item.state)).toEqual(['done', 'done']);
    await store.close();
  });

  it('in tool speech mode, only a message that calls for a reply gets the reply nudge', async () => {
    const said: string[] = [];
    const say = tool({
      name: 'say',
      description: 'Post to the room.',
      inputSchema: z.object({ text: z.string() }),
      capabilityScopes: [],
      kind: 'edit',
      effect: 'unsafe',
      execute: ({ text }) => void said.push(text),
    });
    const { r, store } = await setup({ agent: { tools: [say], speech: { mode: 'tool', tool: 'say' } } });
    server.setFallback('Nothing to add.');
    await store.admit('room', { id: 'n1', text: 'heartbeat', addressed: false }, OFF, gone());
    await wake({ agent: r.agent, store, sessionId: 'room', breaker: OFF, pacing: NO_PACING, logger: r.logger });
    expect(server.requests, 'an ambient message: no nudge').toHaveLength(1);

    await store.admit('room', { id: 'n2', text: '@agent are you there?' }, OFF, gone());
    await wake({ agent: r.agent, store, sessionId: 'room', breaker: OFF, pacing: NO_PACING, logger: r.logger });
    expect(server.requests, 'addressed: one nudge').toHaveLength(3);
    expect((await store.items('room')).map((item) => [item.eventId, item.addressed, item.state])).toEqual([
      ['n1', false, 'done'],
      ['n2', true, 'done'],
    ]);
    await store.close();
  });

  it('answers a batch whose turn failed again as it was, in the same turn, before newer events', async () => {
    const { r, store } = await setup();
    const dead = gone();
    await store.admit('q', { id: 'b1', text: 'first' }, OFF, dead);
    await store.admit('q', { id: 'b2', text: 'second' }, OFF, dead);
    server.enqueue({ fail: { status: 400 } });
    await expect(wake({ agent: r.agent, store, sessionId: 'q', breaker: OFF, pacing: NO_PACING, logger: r.logger })).rejects.toThrow();
    expect((await store.items('q')).map((item) => [item.eventId, item.state, item.batchId, item.attempts])).toEqual([
      ['b1', 'pending', 'b1', 1],
      ['b2', 'pending', 'b1', 1],
    ]);

    await store.admit('q', { id: 'b3', text: 'third' }, OFF, gone());
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
    await store.close();
  });
});
