// A wake on a timeline has no one to approve a call: under the default permission mode
// (allow-edits) a media tool is refused at once and the model reads why, the operator reads a
// WARNING with the remedy, and the turn goes on. A turn that still ends waiting on a call never
// marks its item handled: the item stays claimed in flight for the next wake (docs/wake.md).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { MediaModels } from '../../../src/model/media.ts';
import { SqliteChannelState } from '../../../src/store/sqlite-channel-state.ts';
import { createOpenAIImageTools } from '../../../src/tools/builtin/images.ts';
import { tool } from '../../../src/tools/tool.ts';
import { postMessage, sharedTimeline, startTestPlatform, type TestPlatform } from '../../support/platform.ts';
import { toolResultCount } from '../../support/scripted-model.ts';
import { wakeInProcess } from '../../support/timeline-wake.ts';

let platform: TestPlatform;
beforeEach(async () => {
  platform = await startTestPlatform();
});
afterEach(async () => {
  await platform.close();
});

/** The media calls that reached the provider (none may). */
const providerCalls: string[] = [];
const media = { provider: 'openai', image: async (request: { prompt: string }) => (providerCalls.push(request.prompt), Promise.reject(new Error('not reached'))) } as unknown as MediaModels;

/** What the model was handed back for its call to `name`. */
function resultOf(options: LanguageModelV4CallOptions, name: string): string {
  for (const message of options.prompt) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) if (part.type === 'tool-result' && part.toolName === name) return JSON.stringify(part.output);
  }
  return '';
}

async function room() {
  const ana = platform.user('ana', 'human');
  const nova = platform.user('nova', 'ai', { trust: ['ana'] });
  const timeline = await sharedTimeline(platform, ana, nova);
  const asked = await postMessage(platform, ana.token, timeline, '@nova draw me a cat');
  return { ana, nova, timeline, asked };
}

describe('a call that needs an approval, in a timeline wake', { timeout: 60_000 }, () => {
  it('a media tool under the default permission mode is refused, the model is told, and the turn answers', async () => {
    const { ana, nova, timeline } = await room();
    const generate = createOpenAIImageTools({ workspace: mkdtempSync(join(tmpdir(), 'acx-approvals-')), media }).find((t) => t.name === 'generate_image')!;
    const wake = await wakeInProcess(platform, nova, timeline, {
      permissionMode: 'allow-edits',
      tools: [generate],
      script: (options) => {
        const done = toolResultCount(options);
        if (done === 0) return { toolCalls: [{ name: 'generate_image', input: { prompt: 'a cat' } }] };
        if (done === 1) return { toolCalls: [{ name: 'messages_create', input: { body: 'I may not draw here.' } }] };
        return { text: 'told them' };
      },
    });
    expect(wake.outcome).toMatchObject({ outcome: 'answered', posted: 1 });
    expect(providerCalls).toEqual([]);
    expect(resultOf(wake.model.calls[1]!, 'generate_image')).toContain(
      'a wake is non-interactive and generate_image needs approval under allow-edits; the operator can allow it with --permission-mode allow-all (ACX_PERMISSION_MODE).',
    );
    expect(wake.logger.lines.filter((line) => line.includes('tool call denied'))).toEqual([
      expect.stringMatching(/^WARNING tool call denied timeline=\S+ tool=generate_image permission_mode=allow-edits why="a wake is non-interactive and nobody can approve it" hint=/),
    ]);
    const posts = (await platform.api('GET', `/messages?timeline=${timeline}`, { token: ana.token })).body.messages.map((m: { content: { body: string } }) => m.content.body);
    expect(posts[0]).toBe('I may not draw here.');
  });

  it('a turn that ends still waiting on a call leaves its item claimed in flight, not handled, and the wake fails', async () => {
    const { nova, timeline, asked } = await room();
    // A tool with no executor: the turn suspends until someone supplies its result.
    const outside = tool({ name: 'ask_outside', description: 'Asks someone outside', inputSchema: z.object({}), capabilityScopes: [], kind: 'read', effect: 'read-only' });
    const wake = await wakeInProcess(platform, nova, timeline, {
      tools: [outside],
      script: (options) => (toolResultCount(options) === 0 ? { toolCalls: [{ name: 'ask_outside', input: {} }] } : { text: 'done' }),
    });
    expect(wake.outcome).toMatchObject({ outcome: 'error' });
    expect(String((wake.outcome as { error: unknown }).error)).toContain('the turn ended waiting on ask_outside, so its items are not answered');
    expect(wake.logger.lines.some((line) => line.startsWith('ERROR wake end') && line.includes('outcome=error'))).toBe(true);
    expect(wake.logger.lines.some((line) => line.includes('outcome=answered'))).toBe(false);
    const state = new SqliteChannelState(join(wake.home, 'channel.db'));
    try {
      expect(await state.phase({ timeline, kind: 'message', item: asked.uuid })).toBe('in-flight');
      expect(await state.mark(timeline, 'message')).toBeUndefined();
    } finally {
      await state.close();
    }
  });
});
