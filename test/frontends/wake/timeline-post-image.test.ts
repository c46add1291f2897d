// assets_post_image on a timeline wake: an image one of the agent's tools returned this turn is
// shared as an asset without the model retyping its bytes (issue 12, §5).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BaseCradleClient } from '../../../src/channel/client.ts';
import { tool } from '../../../src/tools/tool.ts';
import { sharedTimeline, postMessage, startTestPlatform, type TestPlatform } from '../../support/platform.ts';
import { toolResultCount } from '../../support/scripted-model.ts';
import { wakeInProcess } from '../../support/timeline-wake.ts';
import { scaled } from '../../support/time-scale.ts';

// A 1×1 PNG.
const PIXEL = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

const chart = tool({
  name: 'chart',
  description: 'Draws a chart',
  inputSchema: z.object({}),
  capabilityScopes: [],
  kind: 'read',
  effect: 'read-only',
  execute: () => [
    { type: 'text' as const, text: 'Here is the chart.' },
    { type: 'image' as const, data: PIXEL, mediaType: 'image/png' },
  ],
});

let platform: TestPlatform;
beforeEach(async () => {
  platform = await startTestPlatform();
});
afterEach(async () => {
  await platform.close();
});

describe('assets_post_image on a timeline wake', { timeout: scaled(60_000) }, () => {
  it("shares the image a tool returned earlier in the turn as an asset, byte for byte", async () => {
    const ana = platform.user('ana', 'human');
    const nova = platform.user('nova', 'ai', { trust: ['ana'] });
    const room = await sharedTimeline(platform, ana, nova);
    await postMessage(platform, ana.token, room, '@nova draw me the chart and share it');

    const wake = await wakeInProcess(platform, nova, room, {
      tools: [chart],
      script: (options) => {
        const done = toolResultCount(options);
        if (done === 0) return { toolCalls: [{ name: 'chart', input: {} }] };
        if (done === 1) return { toolCalls: [{ name: 'assets_post_image', input: { description: 'the chart', filename: 'chart.png' } }] };
        return { text: 'shared' };
      },
    });
    expect(wake.outcome).toMatchObject({ outcome: 'answered' });
    const assets = await platform.api("GET", `/assets?timeline=${room}`, { token: ana.token });
    const shared = (assets.body.assets as Array<{ content: { uuid: string; description?: string; file?: { filename: string; content_type: string } } }>).filter((asset) => asset.content.file?.filename === 'chart.png');
    expect(shared).toHaveLength(1);
    expect(shared[0]!.content.file!.content_type).toBe('image/png');
    expect(shared[0]!.content.description).toBe('the chart');
    const client = new BaseCradleClient({ env: {}, baseUrl: platform.url, token: ana.token });
    const { bytes } = await client.assets.download(await client.assets.get(shared[0]!.content.uuid));
    expect(Buffer.from(bytes).toString('base64')).toBe(PIXEL);
  });

  it('says no tool returned an image when none did this turn', async () => {
    const ana = platform.user('ana', 'human');
    const nova = platform.user('nova', 'ai', { trust: ['ana'] });
    const room = await sharedTimeline(platform, ana, nova);
    await postMessage(platform, ana.token, room, '@nova share the chart');
    const wake = await wakeInProcess(platform, nova, room, {
      script: (options) => (toolResultCount(options) === 0 ? { toolCalls: [{ name: 'assets_post_image', input: {} }] } : { text: 'nothing to share' }),
    });
    expect(wake.outcome).toMatchObject({ outcome: 'answered' });
    expect(JSON.stringify(wake.model.calls[1]!.prompt)).toContain('No tool has returned an image this turn');
  });
});
