// A timeline wake made ready before its delivery (src/frontends/cli/timeline-wake-ahead.ts), as a
// warm process makes it, then handed a delivery: the embedded platform, a local model server, the
// agent's real settings and stores.
import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { prepareTimelineWakeAhead } from '../../../src/frontends/cli/timeline-wake-ahead.ts';
import { wakeTimelineDelivery } from '../../../src/frontends/cli/timeline-wake.ts';
import { createMemoryLogger } from '../../../src/util/logger.ts';
import { ROOT } from '../../support/cli.ts';
import { startModelServer, type ModelServer } from '../../support/model-server.ts';
import { sharedTimeline, startTestPlatform, type TestPlatform } from '../../support/platform.ts';

let platform: TestPlatform;
let model: ModelServer;
const savedEnv = { ...process.env };

beforeEach(async () => {
  platform = await startTestPlatform();
  model = await startModelServer();
});

afterEach(async () => {
  process.env = { ...savedEnv };
  await platform.close();
  await model.close();
});

/** nova's agent, its homes, and a timeline where ana has just asked it something. */
async function setUp() {
  const ana = platform.user('ana', 'human');
  const nova = platform.user('nova', 'ai', { trust: ['ana'] });
  const timeline = await sharedTimeline(platform, ana, nova);
  await platform.api('POST', `/timelines/${timeline}/messages`, { token: ana.token, json: { message: { body: '@nova are you there?' } } });
  const home = mkdtempSync(join(tmpdir(), 'acx-wake-ahead-'));
  const agent = join(home, 'nova');
  cpSync(join(ROOT, 'test/fixtures/agents/timeline-peer'), agent, { recursive: true });
  Object.assign(process.env, { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: model.openaiBaseURL, ACX_HOME: home, ACX_CONFIG_HOME: home, BASECRADLE_TOKEN: nova.token });
  model.enqueue({ toolCalls: [{ name: 'messages_create', input: { body: 'Here, ana.' } }] }, 'answered');
  const messages = async () =>
    ((await platform.api('GET', `/messages?timeline=${timeline}`, { token: ana.token })).body.messages as Array<{ user: { handle: string }; content: { body: string } }>).map((m) => `${m.user.handle}: ${m.content.body}`).reverse();
  return { agent, timeline, nova, messages };
}

describe('a timeline wake made ready before its delivery', () => {
  it('answers the delivery with the agent prepared ahead: the brief read with the event, the platform tools bound to its timeline', async () => {
    const { agent, timeline, nova, messages } = await setUp();
    const logger = createMemoryLogger('debug');
    const ahead = await prepareTimelineWakeAhead(agent, logger, { BASECRADLE_BASE_URL: platform.url, BASECRADLE_TOKEN: nova.token });
    expect(ahead?.agentReady).toBeDefined();
    const outcome = await wakeTimelineDelivery(agent, { timeline, baseUrl: platform.url }, {}, logger, {}, ahead);
    expect(outcome.outcome).toBe('answered');
    expect(await messages()).toEqual(['ana: @nova are you there?', 'nova: Here, ana.']);
    expect(logger.lines.filter((line) => line.includes('wake prepared ahead'))).toEqual(['DEBUG wake prepared ahead used']);
    // The agent it prepared is the one that answered: briefed by the wake, and only once.
    await expect(ahead!.agentReady!.brief()).rejects.toThrow(/briefed once/);
    const [request] = model.requests;
    // The brief: the platform's dashboard, fetched when the event came, and the tool manifest.
    expect(request!.view.system.join('\n')).toMatch(/## Your tools[\s\S]*## The platform \(its dashboard\)/);
    expect(request!.view.tools).toContain('messages_create');
  });

  it('is set aside for a delivery that names another platform: the wake does everything itself and answers', async () => {
    const { agent, timeline, nova, messages } = await setUp();
    const logger = createMemoryLogger('debug');
    const ahead = await prepareTimelineWakeAhead(agent, logger, { BASECRADLE_BASE_URL: 'http://127.0.0.1:9', BASECRADLE_TOKEN: nova.token });
    const outcome = await wakeTimelineDelivery(agent, { timeline, baseUrl: platform.url }, {}, logger, {}, ahead);
    expect(outcome.outcome).toBe('answered');
    expect(await messages()).toEqual(['ana: @nova are you there?', 'nova: Here, ana.']);
    expect(logger.lines.filter((line) => line.includes('wake prepared ahead not used'))).toEqual([expect.stringContaining('reason="the delivery names another platform"')]);
  });

  it('a wake with nothing to answer closes what was made ready for it', async () => {
    const { agent, timeline, nova } = await setUp();
    const logger = createMemoryLogger('debug');
    // The first wake answers ana; the second finds nothing new.
    await wakeTimelineDelivery(agent, { timeline, baseUrl: platform.url }, {}, logger);
    const ahead = await prepareTimelineWakeAhead(agent, logger, { BASECRADLE_BASE_URL: platform.url, BASECRADLE_TOKEN: nova.token });
    const outcome = await wakeTimelineDelivery(agent, { timeline, baseUrl: platform.url }, {}, logger, {}, ahead);
    expect(outcome.outcome).toBe('nothing-new');
    // The marks and claims it opened are closed with the wake (they are the wake's, not kept).
    await expect(ahead!.state.mark(timeline, 'message')).rejects.toThrow(/not open/);
  });
});
