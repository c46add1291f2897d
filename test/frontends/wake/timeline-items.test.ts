// Timeline wakes through the embedded platform (a real server on 127.0.0.1 over a real SQLite
// home) with a scripted model, for the item kinds and recoveries beyond plain messages: a webhook
// event is its own turn under its own mark; the agent's own asset is skipped and its mark still
// advances; an item whose failed turn a compaction summarised away is abandoned, named in an ERROR.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteChannelState as ChannelState } from '../../../src/store/sqlite-channel-state.ts';
import { postMessage, sharedTimeline, startTestPlatform, type TestPlatform } from '../../support/platform.ts';
import { lastUserText } from '../../support/scripted-model.ts';
import { answeredThisTurn, deadHolder, replyOnce, wakeInProcess } from '../../support/timeline-wake.ts';
import { scaled } from '../../support/time-scale.ts';

let platform: TestPlatform;
beforeEach(async () => {
  platform = await startTestPlatform();
});
afterEach(async () => {
  await platform.close();
});

function setUp() {
  const ana = platform.user('ana', 'human');
  const nova = platform.user('nova', 'ai', { trust: ['ana'] });
  return { ana, nova };
}

async function upload(token: string, timeline: string, name: string): Promise<string> {
  const form = new FormData();
  form.append('asset[file]', new Blob([name], { type: 'text/plain' }), name);
  const sent = await platform.api('POST', `/timelines/${timeline}/assets`, { token, form });
  expect(sent.status, sent.text).toBe(201);
  return sent.body.asset.content.uuid as string;
}

/** Each turn's prompt once (a turn's later model calls end with the same prompt). */
const prompts = (calls: ReadonlyArray<Parameters<typeof lastUserText>[0]>) => [...new Set(calls.map(lastUserText))];
const markOf = async (home: string, timeline: string, kind: 'message' | 'asset' | 'webhook_event') => {
  const state = new ChannelState(join(home, 'channel.db'));
  try {
    return await state.mark(timeline, kind);
  } finally {
    await state.close();
  }
};

describe('timeline wake item kinds', { timeout: scaled(60_000) }, () => {
  it('a webhook event gets its own turn under its own mark, its line carries [created_at]; the next wake does not see it again', async () => {
    const { ana, nova } = setUp();
    const room = await sharedTimeline(platform, ana, nova);
    const endpoint = (await platform.api('POST', `/timelines/${room}/webhook_endpoints`, { token: ana.token, json: { webhook_endpoint: { description: 'CI' } } })).body.webhook_endpoint;
    const ingest = new URL(endpoint.content.ingest_url as string).pathname;
    const deliver = async (payload: object): Promise<{ uuid: string; createdAt: string }> => {
      const sent = await platform.api('POST', ingest, { json: payload });
      expect(sent.status, sent.text).toBeLessThan(300);
      const listed = await platform.api('GET', `/webhook_events?timeline=${room}`, { token: nova.token });
      const newest = listed.body.webhook_events[0];
      return { uuid: newest.content.uuid as string, createdAt: newest.created_at as string };
    };
    await postMessage(platform, ana.token, room, '@nova the deploy is running');
    const deploy = await deliver({ event: 'deploy', status: 'ok' });

    // Woken for that delivery, as the router wakes it (a first wake with no --event only baselines events).
    const first = await wakeInProcess(platform, nova, room, { script: replyOnce, extra: { triggers: { webhook_event: deploy.uuid } } });
    expect(first.outcome).toMatchObject({ outcome: 'answered', posted: 2 });
    const eventPrompts = prompts(first.model.calls).filter((text) => text.startsWith('A webhook event arrived'));
    expect(eventPrompts).toHaveLength(1);
    expect(eventPrompts[0]).toContain(`[${deploy.createdAt}] webhook event ${deploy.uuid} from endpoint ${endpoint.content.uuid}`);
    expect(eventPrompts[0]).toContain('deploy');
    // Its own turn: not folded into the message batch.
    expect(prompts(first.model.calls).find((text) => text.includes('the deploy is running'))).not.toContain(deploy.uuid);
    expect(first.logger.lines.find((line) => line.includes('wake end'))).toMatch(/turns=2/);
    expect(await markOf(first.home, room, 'webhook_event')).toBe(deploy.uuid);

    const again = await wakeInProcess(platform, nova, room, { home: first.home });
    expect(again.outcome).toMatchObject({ outcome: 'nothing-new' });
    expect(again.model.calls).toHaveLength(0);

    // A newer event is the only thing the next wake reads: the old one stays behind its mark.
    const failed = await deliver({ event: 'deploy', status: 'failed' });
    const third = await wakeInProcess(platform, nova, room, { home: first.home, script: () => ({ text: 'noted' }) });
    expect(third.outcome).toMatchObject({ outcome: 'answered', posted: 0 });
    expect(prompts(third.model.calls)).toHaveLength(1);
    expect(prompts(third.model.calls)[0]).toContain(`[${failed.createdAt}] webhook event ${failed.uuid}`);
    expect(prompts(third.model.calls)[0]).not.toContain(deploy.uuid);
    expect(await markOf(first.home, room, 'webhook_event')).toBe(failed.uuid);
  });

  it('the actor self-filter: the agent\'s own asset gets no turn, and the asset mark moves past it', async () => {
    const { ana, nova } = setUp();
    const room = await sharedTimeline(platform, ana, nova);
    const anas = await upload(ana.token, room, 'a.txt');
    const first = await wakeInProcess(platform, nova, room, { script: () => ({ text: 'seen' }) });
    expect(first.outcome).toMatchObject({ outcome: 'answered' });
    expect(await markOf(first.home, room, 'asset')).toBe(anas);

    const own = await upload(nova.token, room, 'mine.txt');
    const second = await wakeInProcess(platform, nova, room, { home: first.home, script: () => ({ text: 'should not run' }) });
    expect(second.outcome).toMatchObject({ outcome: 'nothing-new', posted: 0 });
    expect(second.model.calls, 'no turn for its own asset').toHaveLength(0);
    expect(await markOf(first.home, room, 'asset'), 'the mark advanced past its own asset').toBe(own);

    // The next peer asset is read alone; the agent's own never shows up.
    await upload(ana.token, room, 'b.txt');
    const third = await wakeInProcess(platform, nova, room, { home: first.home, script: () => ({ text: 'seen' }) });
    expect(prompts(third.model.calls)).toHaveLength(1);
    expect(prompts(third.model.calls)[0]).toContain('"b.txt"');
    expect(prompts(third.model.calls)[0]).not.toContain('mine.txt');
  });

  it('an item whose failed turn a compaction summarised away is abandoned with an ERROR naming it; the wake goes on and it is never retried', async () => {
    const { ana, nova } = setUp();
    const room = await sharedTimeline(platform, ana, nova);
    const asset = await upload(ana.token, room, 'report.txt');
    // A wake (now dead) took the asset and its turn failed: the claim stays in flight.
    const failing = await wakeInProcess(platform, nova, room, {
      holder: deadHolder(),
      harness: { retries: 0 },
      script: () => ({ error: Object.assign(new Error('the provider rejected the request'), { statusCode: 400, isRetryable: false }) }),
    });
    expect(failing.outcome).toMatchObject({ outcome: 'error' });

    // The next wake first answers a new message; that turn's large context compacts the session,
    // summarising the failed asset turn away before it is taken up again.
    await postMessage(platform, ana.token, room, '@nova what is new?');
    const summary = 'SUMMARY: ana shared report.txt.';
    const next = await wakeInProcess(platform, nova, room, {
      home: failing.home,
      harness: { contextTokens: 40_000, retries: 0 },
      script: (options) => {
        const text = lastUserText(options);
        if (/summar/i.test(JSON.stringify(options.prompt[0] ?? '')) && !text.startsWith('A new')) return { text: summary };
        return answeredThisTurn(options) ? { text: 'answered', inputTokens: 30_000 } : { toolCalls: [{ name: 'messages_create', input: { body: 'Nothing new.' } }], inputTokens: 30_000 };
      },
    });
    const abandoned = next.logger.lines.filter((line) => line.includes('ERROR items abandoned'));
    expect(abandoned, next.logger.lines.join('\n')).toHaveLength(1);
    expect(abandoned[0]).toMatch(new RegExp(`kind=asset items=${asset} reason=turn-compacted`));
    expect(next.outcome).toMatchObject({ outcome: 'answered', posted: 1 });
    const state = new ChannelState(join(failing.home, 'channel.db'));
    try {
      expect(await state.phase({ timeline: room, kind: 'asset', item: asset }), 'its claim is given up for good').toBe('abandoned');
    } finally {
      await state.close();
    }

    const after = await wakeInProcess(platform, nova, room, { home: failing.home, script: () => ({ text: 'should not run' }) });
    expect(after.outcome).toMatchObject({ outcome: 'nothing-new' });
    expect(after.model.calls).toHaveLength(0);
  });
});
