// A message that lands while a timeline wake is mid-turn is answered by that wake before it ends
// (found by the chaos fleet: its own delivery, finding the timeline busy, was put off 15 s, then
// 30, then 60, so replies under steady traffic took a minute). Against the embedded platform.
import { z } from 'zod';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BaseCradleClient } from '../../../src/channel/client.ts';
import { tool } from '../../../src/tools/tool.ts';
import { postMessage, sharedTimeline, startTestPlatform, type TestPlatform } from '../../support/platform.ts';
import { lastUserText, type ScriptFn } from '../../support/scripted-model.ts';
import { scaled } from '../../support/time-scale.ts';
import { answeredThisTurn, wakeInProcess } from '../../support/timeline-wake.ts';

let platform: TestPlatform;
beforeEach(async () => {
  platform = await startTestPlatform();
});
afterEach(async () => {
  await platform.close();
});

/** A tool of the agent's that takes a while, during which ana writes again (once). */
function lookUpWhileAnaWrites(room: string, ana: { token: string }) {
  let arrived = 0;
  return tool({
    name: 'look_up',
    description: 'Looks something up',
    inputSchema: z.object({}),
    capabilityScopes: [],
    kind: 'read',
    effect: 'read-only',
    execute: async () => {
      if (arrived++ === 0) await postMessage(platform, ana.token, room, 'second question');
      return 'found';
    },
  });
}

const lookUpThenReply: ScriptFn = (options) => {
  if (answeredThisTurn(options)) return { text: 'done' };
  const asked = lastUserText(options).includes('second question') ? 'second' : 'first';
  return { toolCalls: [{ name: 'look_up', input: {} }, { name: 'messages_create', input: { body: `re: ${asked}` } }] };
};

describe('a timeline wake with messages arriving mid-turn', { timeout: scaled(60_000) }, () => {
  it('answers them in a turn of its own before it ends, and settles its mark past them', async () => {
    const ana = platform.user('ana', 'human');
    const nova = platform.user('nova', 'ai', { trust: ['ana'] });
    const room = await sharedTimeline(platform, ana, nova);
    await postMessage(platform, ana.token, room, 'first question');
    const wake = await wakeInProcess(platform, nova, room, { tools: [lookUpWhileAnaWrites(room, ana)], script: lookUpThenReply });
    expect(wake.outcome).toMatchObject({ outcome: 'answered', posted: 2 });
    expect(wake.logger.lines.find((line) => line.startsWith('INFO wake end'))).toMatch(/ turns=2 /);
    const said: string[] = [];
    for await (const message of new BaseCradleClient({ env: {}, baseUrl: platform.url, token: ana.token }).messages.list({ timeline: room })) said.push(message.content.body);
    expect(said.reverse()).toEqual(['first question', 'second question', 're: first', 're: second']);
    // Nothing is left for the delivery of the second question.
    const after = await wakeInProcess(platform, nova, room, { home: wake.home });
    expect(after.outcome).toMatchObject({ outcome: 'nothing-new' });
  });

  it('a further round the wake breaker declines ends the wake, which says so; what arrived waits for the breaker to reset', async () => {
    const ana = platform.user('ana', 'human');
    const nova = platform.user('nova', 'ai', { trust: ['ana'] });
    const room = await sharedTimeline(platform, ana, nova);
    await postMessage(platform, ana.token, room, 'first question');
    // One wake a minute: the wake itself is admitted, its further round is one too many.
    const breaker = { max: 1, windowMs: 60_000, cooldownMs: 60_000 };
    const wake = await wakeInProcess(platform, nova, room, { tools: [lookUpWhileAnaWrites(room, ana)], script: lookUpThenReply, extra: { breaker } });
    expect(wake.outcome).toMatchObject({ outcome: 'answered', posted: 1 });
    expect(wake.logger.lines.filter((line) => line.startsWith('WARNING wake breaker tripped'))).toHaveLength(1);
    expect(wake.logger.lines.find((line) => line.startsWith('INFO wake end'))).toMatch(/ turns=1 .*rounds_stopped="circuit breaker tripped"/);
    const said: string[] = [];
    for await (const message of new BaseCradleClient({ env: {}, baseUrl: platform.url, token: ana.token }).messages.list({ timeline: room })) said.push(message.content.body);
    expect(said.reverse()).toEqual(['first question', 'second question', 're: first']);
  });
});
