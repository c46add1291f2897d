// First-wake inference (FACTS.md), for an agent with no marks yet on a timeline: messages — the
// trigger and what follows it, else everything after the agent's own latest post, else only the
// newest, the older ones shown as context; assets and webhook events — the trigger and what is
// newer, else only the newest; the marks then stand past everything read. The pure rule, and a
// wake through the embedded platform (a real server on 127.0.0.1 over a real SQLite home).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Message } from '../../../src/channel/types.ts';
import { firstWakeReplySet } from '../../../src/frontends/wake/timeline-work.ts';
import { postMessage, sharedTimeline, startTestPlatform, type TestPlatform } from '../../support/platform.ts';
import { lastUserText } from '../../support/scripted-model.ts';
import { wakeInProcess } from '../../support/timeline-wake.ts';
import { scaled } from '../../support/time-scale.ts';

const NOVA = { uuid: 'u-nova', handle: 'nova', name: 'Nova', kind: 'ai' };
const ANA = { uuid: 'u-ana', handle: 'ana', name: 'Ana', kind: 'human' };
const message = (id: string, user: typeof NOVA): Message => ({
  type: 'message',
  created_at: '2026-12-01T10:00:00Z',
  user,
  timeline: { uuid: 't' },
  content: { uuid: id, body: id },
});
const ids = (messages: readonly Message[]) => messages.map((m) => m.content.uuid);

describe('firstWakeReplySet', () => {
  const window = [message('a1', ANA), message('n1', NOVA), message('a2', ANA), message('a3', ANA)];
  it('answers the trigger and what follows it, skipping the agent\'s own posts', () => {
    expect(ids(firstWakeReplySet(window, NOVA, 'a1'))).toEqual(['a1', 'a2', 'a3']);
    expect(ids(firstWakeReplySet(window, NOVA, 'a3'))).toEqual(['a3']);
  });
  it('without a trigger in the window: everything after the agent\'s own latest post', () => {
    expect(ids(firstWakeReplySet(window, NOVA, undefined))).toEqual(['a2', 'a3']);
    expect(ids(firstWakeReplySet(window, NOVA, 'not-in-window'))).toEqual(['a2', 'a3']);
  });
  it('with no post of its own either: only the newest message; nothing when that is its own', () => {
    expect(ids(firstWakeReplySet([message('a1', ANA), message('a2', ANA)], NOVA, undefined))).toEqual(['a2']);
    expect(ids(firstWakeReplySet([message('a1', ANA), message('n1', NOVA)], NOVA, undefined))).toEqual([]);
    expect(firstWakeReplySet([], NOVA, undefined)).toEqual([]);
  });
});

describe('a first wake through the platform', { timeout: scaled(60_000) }, () => {
  let platform: TestPlatform;
  beforeEach(async () => {
    platform = await startTestPlatform();
  });
  afterEach(async () => {
    await platform.close();
  });

  const upload = async (token: string, timeline: string, name: string): Promise<string> => {
    const form = new FormData();
    form.append('asset[file]', new Blob([name], { type: 'text/plain' }), name);
    const sent = await platform.api('POST', `/timelines/${timeline}/assets`, { token, form });
    expect(sent.status, sent.text).toBe(201);
    return sent.body.asset.content.uuid as string;
  };

  it('answers only the newest message, the older ones as context; the next wake finds nothing new', async () => {
    const ana = platform.user('ana', 'human');
    const nova = platform.user('nova', 'ai', { trust: ['ana'] });
    const room = await sharedTimeline(platform, ana, nova);
    for (const body of ['one', 'two', 'three']) await postMessage(platform, ana.token, room, body);
    const first = await wakeInProcess(platform, nova, room);
    expect(first.outcome).toMatchObject({ outcome: 'answered', posted: 1 });
    const prompt = lastUserText(first.model.calls[0]!);
    expect(prompt).toMatch(/^Earlier on this timeline \(already answered or not for you\):\n\[[^\]]+\] @ana: one\n\[[^\]]+\] @ana: two\n\nA new message on this timeline:\n\[[^\]]+\] @ana: three\n/);
    const again = await wakeInProcess(platform, nova, room, { home: first.home });
    expect(again.outcome).toMatchObject({ outcome: 'nothing-new' });
  });

  it('assets: only the newest without a trigger; the trigger and everything newer with one', async () => {
    const ana = platform.user('ana', 'human');
    const nova = platform.user('nova', 'ai', { trust: ['ana'] });
    const plain = await sharedTimeline(platform, ana, nova, 'Plain');
    for (const name of ['a.txt', 'b.txt', 'c.txt']) await upload(ana.token, plain, name);
    const seen = (calls: ReadonlyArray<Parameters<typeof lastUserText>[0]>) => calls.map(lastUserText).filter((text) => text.startsWith('A new asset')).map((text) => /"(\w)\.txt"/.exec(text)?.[1]);
    const newestOnly = await wakeInProcess(platform, nova, plain, { script: () => ({ text: 'seen' }) });
    expect(seen(newestOnly.model.calls)).toEqual(['c']);
    expect((await wakeInProcess(platform, nova, plain, { home: newestOnly.home })).outcome).toMatchObject({ outcome: 'nothing-new' });

    const triggered = await sharedTimeline(platform, ana, nova, 'Triggered');
    const firstAsset = await upload(ana.token, triggered, 'a.txt');
    for (const name of ['b.txt', 'c.txt']) await upload(ana.token, triggered, name);
    const fromTrigger = await wakeInProcess(platform, nova, triggered, { script: () => ({ text: 'seen' }), extra: { triggers: { asset: firstAsset } } });
    expect(seen(fromTrigger.model.calls)).toEqual(['a', 'b', 'c']);
  });
});
