// A timeline wake that takes up a batch a dead wake left in flight, against the embedded platform
// (a real server on 127.0.0.1 over a real SQLite home) with a scripted model: the batch is
// finished as that wake fixed it, and a message that arrived since gets a turn of its own — it is
// never swallowed by the resumed turn, whose prompt the journal already holds.
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEngineHarness } from '../../../src/agent/engine-harness.ts';
import { HarnessAgent } from '../../../src/agent/harness-agent.ts';
import { BaseCradleClient } from '../../../src/channel/client.ts';
import { ChannelState } from '../../../src/channel/state.ts';
import { wakeOnTimeline } from '../../../src/frontends/wake/timeline.ts';
import { fromLanguageModel } from '../../../src/model/providers.ts';
import type { AddedUser } from '../../../src/platform/index.ts';
import { createMemoryLogger } from '../../../src/util/logger.ts';
import { postMessage, sharedTimeline, startTestPlatform, type TestPlatform } from '../../support/platform.ts';
import { lastUserText, scriptedModel, type ScriptFn } from '../../support/scripted-model.ts';

let platform: TestPlatform;
beforeEach(async () => {
  platform = await startTestPlatform();
});
afterEach(async () => {
  await platform.close();
});

/** A holder whose process has exited: claims it leaves in flight are taken over. */
const deadHolder = () => ({ pid: spawnSync(process.execPath, ['-e', '0']).pid!, host: hostname(), started: null });

async function wakeAs(agent: AddedUser, timeline: string, home: string, script: ScriptFn, holder?: ReturnType<typeof deadHolder>) {
  const model = scriptedModel(script);
  const logger = createMemoryLogger('debug');
  const state = new ChannelState(join(home, 'channel.db'), holder ? { holder } : {});
  try {
    const outcome = await wakeOnTimeline({
      client: new BaseCradleClient({ env: {}, baseUrl: platform.url, token: agent.token }),
      state,
      timeline,
      logger,
      pacing: { enabled: false, charsPerSecond: 17, floorMs: 0, maxBuilds: 1 },
      agent: async (platformTools) => {
        const harness = createEngineHarness({ model: fromLanguageModel(model), home });
        const engineAgent = new HarnessAgent({ harness, tools: platformTools, permissionMode: 'allow-all', speech: { mode: 'tool', tool: 'messages_create' } });
        return { agent: engineAgent, maxSteps: 6, close: async () => harness.close?.() };
      },
    }).catch((error: unknown) => ({ outcome: 'error' as const, error }));
    return { outcome, model, logger };
  } finally {
    state.close();
  }
}

/** Replies to the turn's batch once with messages_create quoting its last line, then ends. */
const replyToBatch: ScriptFn = (options: LanguageModelV4CallOptions) => {
  const last = options.prompt.at(-2);
  if (last?.role === 'tool') return { text: 'replied' };
  const lines = lastUserText(options).split('\n').filter((line) => line.startsWith('['));
  return { toolCalls: [{ name: 'messages_create', input: { body: `re: ${lines.map((line) => line.replace(/^\[[^\]]+\] @\w+: /, '')).join(' + ')}` } }] };
};

describe('resuming a timeline batch', { timeout: 60_000 }, () => {
  it('a message that arrived after a wake died mid-batch gets its own turn, not lost in the resumed one', async () => {
    const ana = platform.user('ana', 'human');
    const nova = platform.user('nova', 'ai', { trust: ['ana'] });
    const room = await sharedTimeline(platform, ana, nova);
    const home = mkdtempSync(join(tmpdir(), 'acx-resume-'));
    await postMessage(platform, ana.token, room, 'first question');
    // The first wake's model fails: its turn is journaled, its claim stays in flight, its process is gone.
    const failed = await wakeAs(nova, room, home, () => ({ error: new Error('provider down') }), deadHolder());
    expect(failed.outcome.outcome).toBe('error');
    await postMessage(platform, ana.token, room, 'second question');
    const next = await wakeAs(nova, room, home, replyToBatch);
    expect(next.outcome).toMatchObject({ outcome: 'answered', posted: 2 });
    const said: string[] = [];
    for await (const message of new BaseCradleClient({ env: {}, baseUrl: platform.url, token: ana.token }).messages.list({ timeline: room })) said.push(message.content.body);
    expect(said.reverse()).toEqual(['first question', 'second question', 're: first question', 're: second question']);
  });
});
