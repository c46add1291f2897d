// First-wake inference (FACTS.md), for an agent with no marks yet on a timeline: messages — the
// trigger and what follows it, else everything after the agent's own latest post, else only the
// newest, the older ones (the newest --context-messages, default 50, or all) shown as context;
// assets — the trigger and what is newer, else only the newest; webhook events — the trigger and
// what is newer, else none: the newest is recorded as seen (the seed: a first wake only
// baselines them); the marks then stand past everything read. The pure rule, and a wake through
// the embedded platform (a real server on 127.0.0.1 over a real SQLite home).
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

  it('webhook events: with no trigger none is answered, the newest is recorded as seen; later ones are answered; with a trigger, it and what is newer', async () => {
    const ana = platform.user('ana', 'human');
    const nova = platform.user('nova', 'ai', { trust: ['ana'] });
    const room = await sharedTimeline(platform, ana, nova);
    const endpoint = (await platform.api('POST', `/timelines/${room}/webhook_endpoints`, { token: ana.token, json: { webhook_endpoint: { description: 'CI' } } })).body.webhook_endpoint;
    const ingest = new URL(endpoint.content.ingest_url as string).pathname;
    const deliver = async (status: string): Promise<string> => {
      expect((await platform.api('POST', ingest, { json: { event: 'deploy', status } })).status).toBeLessThan(300);
      return (await platform.api('GET', `/webhook_events?timeline=${room}`, { token: nova.token })).body.webhook_events[0].content.uuid as string;
    };
    await deliver('old-1');
    const newest = await deliver('old-2');
    // The payload is quoted in the prompt: {\"event\":\"deploy\",\"status\":\"new\"}.
    const statusOf = (text: string) => /status\\":\\"([\w-]+)/.exec(text)?.[1];
    const eventTurns = (calls: ReadonlyArray<Parameters<typeof lastUserText>[0]>) => [...new Set(calls.map(lastUserText).filter((text) => text.startsWith('A webhook event')))];

    const first = await wakeInProcess(platform, nova, room, { script: () => ({ text: 'seen' }) });
    expect(first.outcome).toMatchObject({ outcome: 'nothing-new' });
    expect(first.model.calls).toHaveLength(0);
    expect(first.logger.lines).toContainEqual(expect.stringMatching(new RegExp(`^INFO webhook events baselined timeline=${room} newest=${newest} `)));
    expect((await wakeInProcess(platform, nova, room, { home: first.home })).outcome).toMatchObject({ outcome: 'nothing-new' });

    await deliver('new');
    const next = await wakeInProcess(platform, nova, room, { home: first.home, script: () => ({ text: 'seen' }) });
    expect(eventTurns(next.model.calls).map(statusOf)).toEqual(['new']);

    // A first wake the router started for one delivery (--event) acts on it and what is newer.
    const fromTrigger = await wakeInProcess(platform, nova, room, { script: () => ({ text: 'seen' }), extra: { triggers: { webhook_event: newest } } });
    expect(eventTurns(fromTrigger.model.calls).map(statusOf)).toEqual(['old-2', 'new']);
  });

  it('the backlog a first wake reads is --context-messages: a number, or all', async () => {
    const ana = platform.user('ana', 'human');
    const nova = platform.user('nova', 'ai', { trust: ['ana'] });
    const room = await sharedTimeline(platform, ana, nova);
    // More than a page (50), so "all" has to page back.
    for (let i = 1; i <= 55; i++) await postMessage(platform, ana.token, room, `m${i}`);
    const earlier = (calls: ReadonlyArray<Parameters<typeof lastUserText>[0]>) => (/^Earlier on this timeline[^\n]*\n([\s\S]*?)\n\nA new message/.exec(lastUserText(calls[0]!))?.[1] ?? '').split('\n').map((line) => line.replace(/^\[[^\]]+\] @ana: /, ''));
    // Each wake a first one (its own home), and silent, so none posts before the next reads.
    const silent = () => ({ text: 'seen' });
    const two = await wakeInProcess(platform, nova, room, { script: silent, extra: { firstWakeWindow: 2 } });
    expect(earlier(two.model.calls)).toEqual(['m54']);
    const all = await wakeInProcess(platform, nova, room, { script: silent, extra: { firstWakeWindow: Number.POSITIVE_INFINITY } });
    expect(earlier(all.model.calls)).toEqual(Array.from({ length: 54 }, (_, i) => `m${i + 1}`));
    const byDefault = await wakeInProcess(platform, nova, room, { script: silent });
    expect(earlier(byDefault.model.calls)).toHaveLength(49);
  });
});
