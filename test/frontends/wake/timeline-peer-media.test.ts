// A peer's image on a timeline: the wake it triggers shows it to the model with the turn's prompt
// (not only if the model thinks to call assets_view), on every call of that turn and never again
// (it is not kept in the transcript); a model without vision reads a line saying what it was; and
// assets_view takes "latest".
import type { LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { postMessage, sharedTimeline, startTestPlatform, type TestPlatform } from '../../support/platform.ts';
import { toolResultCount } from '../../support/scripted-model.ts';
import { replyOnce, wakeInProcess } from '../../support/timeline-wake.ts';

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

let platform: TestPlatform;
beforeEach(async () => {
  platform = await startTestPlatform();
});
afterEach(async () => {
  await platform.close();
});

async function room() {
  const ana = platform.user('ana', 'human');
  const nova = platform.user('nova', 'ai', { trust: ['ana'] });
  return { ana, nova, timeline: await sharedTimeline(platform, ana, nova) };
}

async function share(token: string, timeline: string, bytes: Buffer, name: string): Promise<string> {
  const form = new FormData();
  form.append('asset[file]', new Blob([bytes]), name);
  form.append('asset[description]', 'my cat');
  const sent = await platform.api('POST', `/timelines/${timeline}/assets`, { token, form });
  expect(sent.status, sent.text).toBe(201);
  return sent.body.asset.content.uuid as string;
}

const base64Of = (data: unknown) => (typeof data === 'string' ? data : Buffer.from(data as Uint8Array).toString('base64'));

/** The images a model call was shown (as the provider reads them: file parts, base64), wherever they sit in the prompt. */
function imagesIn(options: LanguageModelV4CallOptions): string[] {
  const found: string[] = [];
  for (const message of options.prompt) {
    if (message.role === 'system') continue;
    for (const part of message.content as Array<{ type: string; mediaType?: string; data?: unknown; output?: { type: string; value?: unknown } }>) {
      if (part.type === 'file') found.push(`${part.mediaType}:${base64Of((part.data as { data?: unknown }).data ?? part.data)}`);
      if (part.type === 'tool-result' && part.output?.type === 'content') {
        for (const inner of part.output.value as Array<{ type: string; data?: { data?: string } | string; mediaType?: string }>) {
          if (inner.type !== 'text') found.push(`${inner.mediaType}:${base64Of(typeof inner.data === 'string' ? inner.data : inner.data?.data)}`);
        }
      }
    }
  }
  return found;
}

describe("a peer's image on a timeline", { timeout: 60_000 }, () => {
  it('is shown to the model on the wake it triggers, on each call of that turn, and is not kept for later turns', async () => {
    const { ana, nova, timeline } = await room();
    const asset = await share(ana.token, timeline, PNG, 'cat');
    const first = await wakeInProcess(platform, nova, timeline, { extra: { triggers: { asset } }, script: replyOnce });
    expect(first.outcome).toMatchObject({ outcome: 'answered', posted: 1 });
    expect(first.model.calls).toHaveLength(2);
    for (const call of first.model.calls) expect(imagesIn(call)).toEqual([`image/png:${PNG.toString('base64')}`]);

    // The next turn (a message) replays the transcript: the picture is not in it.
    await postMessage(platform, ana.token, timeline, 'did you like it?');
    const second = await wakeInProcess(platform, nova, timeline, { home: first.home, script: replyOnce });
    expect(second.outcome).toMatchObject({ outcome: 'answered' });
    expect(imagesIn(second.model.calls[0]!)).toEqual([]);
  });

  it('a model without vision reads what the image was instead, and the log says so', async () => {
    const { ana, nova, timeline } = await room();
    const asset = await share(ana.token, timeline, PNG, 'cat.png');
    const wake = await wakeInProcess(platform, nova, timeline, { vision: false, extra: { triggers: { asset } }, script: replyOnce });
    expect(wake.outcome).toMatchObject({ outcome: 'answered' });
    expect(imagesIn(wake.model.calls[0]!)).toEqual([]);
    expect(JSON.stringify(wake.model.calls[0]!.prompt)).toContain(`[image image/png, ${PNG.length.toLocaleString('en-US')} bytes: this model reads text only, so the image was not shown]`);
    expect(wake.logger.lines.filter((line) => line.includes('image degraded to text'))).toEqual([expect.stringMatching(/^WARNING image degraded to text .*images=1 reason="the model reads text only"/)]);
  });

  it('assets_view "latest" shows the newest file on the timeline', async () => {
    const { ana, nova, timeline } = await room();
    await share(ana.token, timeline, Buffer.from('an older note'), 'note.txt');
    await share(ana.token, timeline, PNG, 'cat.png');
    await postMessage(platform, ana.token, timeline, '@nova look at the latest file');
    const wake = await wakeInProcess(platform, nova, timeline, {
      script: (options) => {
        const done = toolResultCount(options);
        if (done === 0) return { toolCalls: [{ name: 'assets_view', input: { asset: 'latest' } }] };
        if (done === 1) return { toolCalls: [{ name: 'messages_create', input: { body: 'A cat.' } }] };
        return { text: 'done' };
      },
    });
    expect(wake.outcome).toMatchObject({ outcome: 'answered' });
    // The message turn runs first, so its assets_view is the first tool result the model reads.
    const viewed = wake.model.calls.find((call) => toolResultCount(call) === 1)!;
    expect(imagesIn(viewed)).toContain(`image/png:${PNG.toString('base64')}`);
  });
});
