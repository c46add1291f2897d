// `acx router --poll`: a platform that delivers nothing (no subscribers configured) and a router
// that reads each agent's unseen items itself. The embedded platform on 127.0.0.1, router.db on
// disk, a stand-in process per wake. Each read is asked for (pollNow) and awaited, so nothing
// here waits on a poll interval.
import { afterEach, describe, expect, it } from 'vitest';
import type { RoutedAgent } from '../../../src/frontends/router/router.ts';
import { postMessage, sharedTimeline, startTestPlatform, type TestPlatform } from '../../support/platform.ts';
import { type StandInRouter, startStandInRouter } from '../../support/stand-in-router.ts';

const HOUR = 3_600_000;
let platform: TestPlatform | undefined;
const routers: StandInRouter[] = [];
afterEach(async () => {
  for (const router of routers.splice(0)) await router.close();
  await platform?.close();
  platform = undefined;
});

async function setUp() {
  platform = await startTestPlatform();
  const ana = platform.user('ana', 'human');
  const nova = platform.user('nova', 'ai', { trust: ['ana'] });
  const timeline = await sharedTimeline(platform, ana, nova);
  const agent: RoutedAgent = { name: 'nova', dir: '/agents/nova', token: nova.token, uuid: nova.uuid, secret: 'nova-signing-secret-0123' };
  return { ana, nova, timeline, agent };
}

/** A polling router whose interval never comes round in a test: only its first read and pollNow() read. */
async function pollingRouter(agent: RoutedAgent, more: Partial<Parameters<typeof startStandInRouter>[0]> = {}): Promise<StandInRouter> {
  const router = await startStandInRouter({ agents: [agent], platformUrl: platform!.url, pollIntervalMs: 24 * HOUR, ...more });
  routers.push(router);
  return router;
}

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let waited = 0; !(await check()); waited += 50) {
    if (waited > 60_000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const triggers = (router: StandInRouter) => router.wakes().map((wake) => wake.argv.slice(4).join(' ') || '(task)').sort();

describe('the poll', () => {
  it("reads each kind an agent is woken for, with the same trigger a delivery gives, and skips the agent's own posts", async () => {
    const { ana, nova, timeline, agent } = await setUp();
    const router = await pollingRouter(agent);
    const message = await postMessage(platform!, ana.token, timeline, '@nova hello');
    await postMessage(platform!, nova.token, timeline, 'my own note');
    const form = new FormData();
    form.append('asset[file]', new Blob(['notes']), 'notes.txt');
    form.append('asset[description]', 'notes');
    const asset = (await platform!.api('POST', `/timelines/${timeline}/assets`, { token: ana.token, form })).body.asset.content.uuid as string;
    const endpoint = (await platform!.api('POST', `/timelines/${timeline}/webhook_endpoints`, { token: ana.token, json: { webhook_endpoint: { description: 'ci' } } })).body.webhook_endpoint;
    await platform!.api('POST', new URL(endpoint.content.ingest_url).pathname, { json: { build: 'green' } });
    const inbound = (await platform!.api('GET', `/webhook_events?timeline=${timeline}`, { token: nova.token })).body.webhook_events[0].content.uuid as string;
    // A task nova set for itself: its activation wakes it (it has no author to skip).
    const task = (await platform!.api('POST', `/timelines/${timeline}/tasks`, { token: nova.token, json: { task: { instructions: 'check the build', activate_at: new Date(Date.now() + 200).toISOString() } } })).body.task.content.uuid as string;
    await until(async () => (await platform!.api('GET', `/tasks/${task}`, { token: nova.token })).body.task.content.status === 'activated', 'the task to activate');

    await router.router.pollNow();
    await router.router.idle();
    expect(triggers(router)).toEqual(['(task)', `--asset ${asset}`, `--event ${inbound}`, `--message ${message.uuid}`].sort());
    expect(router.wakes().every((wake) => wake.argv.slice(0, 4).join(' ') === `wake /agents/nova --timeline ${timeline}`)).toBe(true);
    expect(router.wakes().map((wake) => wake.env.BASECRADLE_DELIVERY_ID).sort()).toEqual([asset, inbound, message.uuid, task].map((uuid) => `poll-nova-${uuid}`).sort());
    // nova's own message is not taken up at all (not even joined to another wake), and each item
    // is taken up under the event a delivery of it would carry.
    expect(router.rows().map((row) => row.delivery).sort()).toEqual([asset, inbound, message.uuid, task].map((uuid) => `poll-nova-${uuid}`).sort());
    expect(router.logger.lines.filter((line) => line.includes('router poll item')).map((line) => /event=(\S+)/.exec(line)![1]).sort()).toEqual(['asset.created', 'message.created', 'task.activated', 'webhook_event.received']);
    // Read again: nothing is new.
    await router.router.pollNow();
    await router.router.idle();
    expect(router.wakes()).toHaveLength(4);
  });

  it('an item a webhook delivered is not woken again by the poll, and one the poll woke is a duplicate when its delivery comes', async () => {
    const { ana, nova, timeline, agent } = await setUp();
    const router = await pollingRouter(agent);
    const delivered = await postMessage(platform!, ana.token, timeline, 'first');
    const delivery = (id: string, uuid: string) => ({
      event: 'message.created',
      event_id: id,
      occurred_at: new Date().toISOString(),
      actor_uuid: ana.uuid,
      recipient_uuid: nova.uuid,
      timeline_uuid: timeline,
      resource: { type: 'message', uuid },
    });
    expect(await router.post(delivery('e-1', delivered.uuid))).toEqual({ status: 202, text: 'accepted' });
    await router.router.pollNow();
    await router.router.idle();
    expect(router.wakes().map((wake) => wake.env.BASECRADLE_DELIVERY_ID)).toEqual(['e-1']);

    const polled = await postMessage(platform!, ana.token, timeline, 'second');
    await router.router.pollNow();
    expect(await router.post(delivery('e-2', polled.uuid))).toEqual({ status: 200, text: 'already received' });
    await router.router.idle();
    expect(router.wakes().map((wake) => wake.env.BASECRADLE_DELIVERY_ID).sort()).toEqual(['e-1', `poll-nova-${polled.uuid}`]);
    expect(router.rows().sort((a, b) => a.delivery.localeCompare(b.delivery))).toEqual([
      { delivery: 'e-1', state: 'done' },
      { delivery: 'e-2', state: 'duplicate' },
      { delivery: `poll-nova-${polled.uuid}`, state: 'done' },
    ]);
    expect(router.logger.lines.filter((line) => line.includes('router delivery duplicate'))).toEqual([
      expect.stringContaining(`delivery=e-2 agent=nova reason=item-seen item=${polled.uuid} covered_by=poll-nova-${polled.uuid}`),
    ]);
  });

  it('reads on from where it was after a restart: router.db keeps its marks and what it woke, even a day later', async () => {
    const { ana, timeline, agent } = await setUp();
    const first = await pollingRouter(agent);
    const before = await postMessage(platform!, ana.token, timeline, 'before the restart');
    await first.router.pollNow();
    await first.router.idle();
    await first.close();
    routers.splice(routers.indexOf(first), 1);
    expect(first.wakes().map((wake) => wake.argv.at(-1))).toEqual([before.uuid]);

    const databasePath = `${first.home}/router.db`;
    const second = await pollingRouter(agent, { databasePath });
    await second.router.pollNow();
    await second.router.idle();
    expect(second.wakes()).toEqual([]);
    const during = await postMessage(platform!, ana.token, timeline, 'while the router was down');
    await second.close();
    routers.splice(routers.indexOf(second), 1);

    // Back 25 hours later: older than a first read would go, but past the mark, so it is read;
    // the message before the mark is not woken again though its delivery row has been pruned.
    const third = await pollingRouter(agent, { databasePath, now: () => during.at + 25 * HOUR });
    await third.router.pollNow();
    await third.router.idle();
    expect(third.wakes().map((wake) => wake.argv.at(-1))).toEqual([during.uuid]);
  });

  it('two routers polling one router.db wake each item once', async () => {
    const { ana, timeline, agent } = await setUp();
    const one = await pollingRouter(agent);
    const two = await pollingRouter(agent, { databasePath: `${one.home}/router.db` });
    const posted = [];
    for (let i = 1; i <= 5; i++) posted.push((await postMessage(platform!, ana.token, timeline, `message ${i}`)).uuid);
    await Promise.all([one.router.pollNow(), two.router.pollNow(), one.router.pollNow(), two.router.pollNow()]);
    await Promise.all([one.router.idle(), two.router.idle()]);
    // One row per message in the shared router.db, and no message woken by both routers (a
    // message waiting behind another's wake in one router joins it, recorded as coalesced).
    const rows = one.rows();
    expect(rows.map((row) => row.delivery).sort()).toEqual(posted.map((uuid) => `poll-nova-${uuid}`).sort());
    const woken = [...one.wakes(), ...two.wakes()].map((wake) => wake.argv.at(-1)!);
    expect(new Set(woken).size).toBe(woken.length);
    expect(rows.filter((row) => row.state === 'done')).toHaveLength(woken.length);
    expect(rows.every((row) => row.state === 'done' || row.state === 'coalesced')).toBe(true);
  });

  it('its first read goes back as far as a delivery may (the replay window), not over the whole history', async () => {
    const { ana, timeline, agent } = await setUp();
    const old = await postMessage(platform!, ana.token, timeline, 'long ago');
    // The router's clock 25 hours on: the message is older than the window.
    const router = await pollingRouter(agent, { now: () => old.at + 25 * HOUR });
    await router.router.pollNow();
    await router.router.idle();
    expect(router.wakes()).toEqual([]);
    const shortWindow = await pollingRouter(agent, { now: () => old.at + 25 * HOUR, replayWindow: { pastMs: 26 * HOUR, futureMs: 5 * 60_000 } });
    await shortWindow.router.pollNow();
    await shortWindow.router.idle();
    expect(shortWindow.wakes().map((wake) => wake.argv.at(-1))).toEqual([old.uuid]);
  });
});
