// What a timeline wake's journal says, as the seed gives it: the provider and model on `wake
// start`, `kind=` and `chars=` on each `posted` line (never the body), and a post the platform
// refused at ERROR, so an agent that thought, spent tokens and was not heard can be found.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
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

async function room() {
  const ana = platform.user('ana', 'human');
  const nova = platform.user('nova', 'ai', { trust: ['ana'] });
  const timeline = await sharedTimeline(platform, ana, nova);
  await postMessage(platform, ana.token, timeline, '@nova how are things?');
  return { nova, timeline };
}

const NOWHERE = '01900000-0000-7000-8000-000000000000';

describe('a timeline wake’s log lines', { timeout: 60_000 }, () => {
  it('names provider and model on wake start, kind and chars on posted (not the body), and a refused post at ERROR', async () => {
    const { nova, timeline } = await room();
    const wake = await wakeInProcess(platform, nova, timeline, {
      extra: { model: { provider: 'openai', modelId: 'gpt-test' } },
      script: (options) => {
        const done = toolResultCount(options);
        if (done === 0) return { toolCalls: [{ name: 'messages_create', input: { body: 'Fine, thanks — and you?' } }] };
        if (done === 1) return { toolCalls: [{ name: 'messages_create', input: { body: 'Hello there.', timeline: NOWHERE } }] };
        return { text: 'done' };
      },
    });
    expect(wake.outcome).toMatchObject({ outcome: 'answered', posted: 1 });
    const log = wake.logger.lines.join('\n');
    expect(log).toMatch(new RegExp(`^INFO wake start timeline=${timeline} agent=nova provider=openai model=gpt-test$`, 'm'));
    expect(log).toMatch(new RegExp(`^INFO posted timeline=${timeline} message=[0-9a-f-]{36} kind=tool chars=23$`, 'm'));
    expect(log).toMatch(new RegExp(`^ERROR post refused timeline=${timeline} kind=tool chars=12 error=".+" note="the agent was not heard"$`, 'm'));
    expect(log).not.toContain('Fine, thanks');
    expect(log).not.toContain('Hello there');
  });
});
