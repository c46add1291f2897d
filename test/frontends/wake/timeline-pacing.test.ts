// Read-speed pacing on a timeline wake, against the embedded platform (a real server on 127.0.0.1
// over a real SQLite home) with a scripted model and a fake clock and wait: a peer AI's message is
// read at human speed before it is answered, a newer AI message that lands meanwhile restarts the
// read and joins the batch (re-read from the platform), and a person's message, an old message or
// a batch an earlier wake already took up is answered at once.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteChannelState as ChannelState } from '../../../src/store/sqlite-channel-state.ts';
import { DEFAULT_PACING, type PacingSettings } from '../../../src/frontends/wake/pacing.ts';
import type { AddedUser } from '../../../src/platform/index.ts';
import { postMessage, sharedTimeline, startTestPlatform, type TestPlatform } from '../../support/platform.ts';
import { lastUserText } from '../../support/scripted-model.ts';
import { deadHolder, wakeInProcess } from '../../support/timeline-wake.ts';
import { scaled } from '../../support/time-scale.ts';

let platform: TestPlatform;
beforeEach(async () => {
  platform = await startTestPlatform();
});
afterEach(async () => {
  await platform.close();
});

const post = (author: AddedUser, timeline: string, body: string) => postMessage(platform, author.token, timeline, body);

/** One timeline wake of `agent` in process, paced (on by default) with the fake clock and wait given. */
const wakeAs = (agent: AddedUser, timeline: string, pace: { pacing?: PacingSettings; trigger?: string; now: () => number; sleep: (ms: number) => Promise<void> }, home?: string) =>
  wakeInProcess(platform, agent, timeline, {
    pacing: pace.pacing ?? DEFAULT_PACING,
    extra: { now: pace.now, sleep: pace.sleep, ...(pace.trigger ? { trigger: pace.trigger } : {}) },
    ...(home ? { home } : {}),
  });

describe('timeline wake pacing', { timeout: scaled(60_000) }, () => {
  it("reads a peer AI's message at human speed; a newer AI message landing meanwhile restarts the read and joins the batch", async () => {
    const ada = platform.user('ada', 'ai');
    const nova = platform.user('nova', 'ai', { trust: ['ada'] });
    const room = await sharedTimeline(platform, ada, nova);
    const first = await post(ada, room, 'Hello nova, how is the release going?');
    const longBody = 'x'.repeat(17 * 30); // 30 s to read at 17 chars/s
    let second: { uuid: string; at: number } | undefined;
    // The fake clock stands still but in the wait. It starts 5 s after the first message was
    // written, so only the rest of its 20 s floor is owed; the second message is written at the
    // end of the first wait (the clock jumps to the platform's own stamp of it).
    let clock = first.at + 5_000;
    const sleeps: number[] = [];
    const run = await wakeAs(nova, room, {
      trigger: first.uuid, // the delivery is about the first message: the reply starts there
      now: () => clock,
      sleep: async (ms) => {
        sleeps.push(ms);
        clock += ms;
        if (sleeps.length === 1) {
          second = await post(ada, room, longBody);
          clock = second.at;
        }
      },
    });
    expect(sleeps).toEqual([15_000, 30_000]);
    const log = run.logger.lines.join('\n');
    expect(log).toContain(`INFO wake pacing timeline=${room} message=${first.uuid} read=20.0s wait=15.0s`);
    expect(log).toContain(`INFO wake pacing timeline=${room} message=${second!.uuid} read=30.0s wait=30.0s`);
    // One turn answers both messages, read from the platform again after the wait.
    expect(run.outcome).toMatchObject({ outcome: 'answered', posted: 1 });
    expect(run.model.calls).toHaveLength(2);
    const prompt = lastUserText(run.model.calls[0]!);
    expect(prompt).toContain('2 new messages on this timeline');
    expect(prompt).toContain('@ada: Hello nova, how is the release going?');
    expect(prompt).toContain(`@ada: ${longBody}`);
  });

  it("answers a person at once, and a peer AI's message that has already waited its read", async () => {
    const ana = platform.user('ana', 'human');
    const ada = platform.user('ada', 'ai', { trust: ['ana'] });
    const nova = platform.user('nova', 'ai', { trust: ['ana', 'ada'] });
    const withAna = await sharedTimeline(platform, ana, nova, 'With ana');
    const withAda = await sharedTimeline(platform, ada, nova, 'With ada');
    const sleeps: number[] = [];
    const sleep = async (ms: number) => void sleeps.push(ms);

    const fromAna = await post(ana, withAna, 'nova, status?');
    const human = await wakeAs(nova, withAna, { now: () => fromAna.at, sleep });
    expect(human.outcome).toMatchObject({ outcome: 'answered', posted: 1 });

    const fromAda = await post(ada, withAda, 'Status from ada.');
    const old = await wakeAs(nova, withAda, { now: () => fromAda.at + 20_000, sleep });
    expect(old.outcome).toMatchObject({ outcome: 'answered', posted: 1 });
    expect(sleeps).toEqual([]);
    expect([...human.logger.lines, ...old.logger.lines].join('\n')).not.toContain('wake pacing');
  });

  it('does not pace when pacing is off, nor a batch an earlier wake already took up', async () => {
    const ada = platform.user('ada', 'ai');
    const nova = platform.user('nova', 'ai', { trust: ['ada'] });
    const room = await sharedTimeline(platform, ada, nova);
    const sleeps: number[] = [];
    const sleep = async (ms: number) => void sleeps.push(ms);
    const message = await post(ada, room, 'Are you there?');
    const off = await wakeAs(nova, room, { pacing: { ...DEFAULT_PACING, enabled: false }, now: () => message.at, sleep });
    expect(off.outcome).toMatchObject({ outcome: 'answered', posted: 1 });

    // A wake whose process is gone claimed the next message and died before answering it: the wake
    // that takes it up answers the batch as it stands, without reading it again.
    const next = await post(ada, room, 'Still there?');
    const home = off.home;
    const state = new ChannelState(join(home, 'channel.db'), { holder: deadHolder() });
    expect(await state.take({ timeline: room, kind: 'message', item: next.uuid }, 'an-earlier-wake')).toBe('taken');
    await state.close();
    const resumed = await wakeAs(nova, room, { now: () => next.at, sleep }, home);
    expect(resumed.outcome).toMatchObject({ outcome: 'answered', posted: 1 });
    expect(sleeps).toEqual([]);
  });
});
