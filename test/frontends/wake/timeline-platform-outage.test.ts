// A timeline wake whose platform goes away mid-turn (found by the chaos fleet: a platform killed
// while an agent was posting): the post must not be settled as answered-but-unheard. The turn
// stops with its call open and its claim in flight; the next wake continues it and the reply is
// posted exactly once, whether the lost create never reached the platform or reached it and only
// its answer was lost (the re-issued create carries the same Idempotency-Key).
// Against the embedded platform on 127.0.0.1, behind a proxy that drops connections on request.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BaseCradleClient } from '../../../src/channel/client.ts';
import { startFlakyProxy, type Failure, type FlakyProxy } from '../../support/flaky-proxy.ts';
import { postMessage, sharedTimeline, startTestPlatform, type TestPlatform } from '../../support/platform.ts';
import { scaled } from '../../support/time-scale.ts';
import { answeredThisTurn, deadHolder, wakeInProcess } from '../../support/timeline-wake.ts';
import type { ScriptFn } from '../../support/scripted-model.ts';

let platform: TestPlatform;
let proxy: FlakyProxy;
beforeEach(async () => {
  platform = await startTestPlatform();
  proxy = await startFlakyProxy(platform.url);
});
afterEach(async () => {
  await proxy.close();
  await platform.close();
});

/** The client's attempts for one keyed create: the first and DEFAULT_MAX_RETRIES more. */
const ATTEMPTS = 3;

async function said(timeline: string, token: string): Promise<string[]> {
  const bodies: string[] = [];
  for await (const message of new BaseCradleClient({ env: {}, baseUrl: platform.url, token }).messages.list({ timeline })) bodies.push(message.content.body);
  return bodies.reverse();
}

describe('a timeline wake whose platform goes away mid-turn', { timeout: scaled(60_000) }, () => {
  it.each<[Failure, string]>([
    ['drop-before', 'never reached the platform'],
    ['drop-after', 'reached the platform, its answer lost'],
  ])('%s (the create %s): the turn stays open, the next wake posts the reply once', async (failure) => {
    const ana = platform.user('ana', 'human');
    const nova = platform.user('nova', 'ai', { trust: ['ana'] });
    const room = await sharedTimeline(platform, ana, nova);
    await postMessage(platform, ana.token, room, '@nova are you there?');

    // The model's call to post is the moment the platform goes: every attempt of that create fails.
    const postDuringOutage: ScriptFn = (options) => {
      if (answeredThisTurn(options)) return { text: 'done' };
      proxy.fail(ATTEMPTS, failure);
      return { toolCalls: [{ name: 'messages_create', input: { body: 'Here I am.' } }] };
    };
    const first = await wakeInProcess(platform, nova, room, { via: proxy.url, script: postDuringOutage, holder: deadHolder() });
    expect(first.outcome.outcome).toBe('error');
    expect(first.logger.lines.join('\n')).toMatch(/^WARNING tool name=messages_create .*outcome=interrupted/m);
    // The model never read the failure: it was called once, for the post.
    expect(first.model.calls).toHaveLength(1);
    const before = await said(room, ana.token);
    expect(before).toEqual(failure === 'drop-after' ? ['@nova are you there?', 'Here I am.'] : ['@nova are you there?']);

    const next = await wakeInProcess(platform, nova, room, { home: first.home, via: proxy.url, script: postDuringOutage });
    expect(next.outcome).toMatchObject({ outcome: 'answered', posted: 1 });
    expect(await said(room, ana.token)).toEqual(['@nova are you there?', 'Here I am.']);
    // Continued, not started over: the second wake re-issued the open call before asking the model anything.
    expect(next.model.calls).toHaveLength(1);
    expect(answeredThisTurn(next.model.calls[0]!)).toBe(true);
  });

  it('a refusal the platform means (4xx) is still the model’s to read, and the turn is settled', async () => {
    const ana = platform.user('ana', 'human');
    const nova = platform.user('nova', 'ai', { trust: ['ana'] });
    const room = await sharedTimeline(platform, ana, nova);
    await postMessage(platform, ana.token, room, '@nova hello');
    const wake = await wakeInProcess(platform, nova, room, {
      script: (options) => (answeredThisTurn(options) ? { text: 'done' } : { toolCalls: [{ name: 'messages_create', input: { body: 'x'.repeat(200_000) } }] }),
    });
    expect(wake.outcome).toMatchObject({ outcome: 'answered', posted: 0 });
    expect(wake.logger.lines.join('\n')).toMatch(/^ERROR post refused .*note="the agent was not heard"$/m);
    expect(wake.model.calls).toHaveLength(2);
  });
  // Found by the chaos run: the platform's disk full for 10 s made three wakes in a row stop on
  // their post, and the third set the message aside (a stalled item), so it was never answered.
  it('an outage that outlasts several wakes never sets the message aside; the first wake after it answers', async () => {
    const ana = platform.user('ana', 'human');
    const nova = platform.user('nova', 'ai', { trust: ['ana'] });
    const room = await sharedTimeline(platform, ana, nova);
    await postMessage(platform, ana.token, room, '@nova still there?');
    const posts = `/timelines/${room}/messages`;
    proxy.refuse(posts, 503);
    const script: ScriptFn = (options) => (answeredThisTurn(options) ? { text: 'done' } : { toolCalls: [{ name: 'messages_create', input: { body: 'Still here.' } }] });
    let home: string | undefined;
    for (let n = 1; n <= 5; n++) {
      const wake = await wakeInProcess(platform, nova, room, { ...(home ? { home } : {}), holder: deadHolder(), via: proxy.url, script });
      home = wake.home;
      expect(wake.outcome.outcome, `wake ${n}`).toBe('error');
      expect(wake.logger.lines.join('\n'), `wake ${n}`).not.toContain('items abandoned');
    }
    proxy.allow(posts);
    const after = await wakeInProcess(platform, nova, room, { home, via: proxy.url, script });
    expect(after.outcome).toMatchObject({ outcome: 'answered', posted: 1 });
    expect(await said(room, ana.token)).toEqual(['@nova still there?', 'Still here.']);
  });
});
