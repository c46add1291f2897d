// Event delivery as a router receives it: signed POSTs to each subscriber, one per recipient, with the
// router's headers and body; retried until it is taken; kept in the outbox across a restart.
import { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { sharedTimeline, startTestPlatform, type TestPlatform, violations } from '../support/platform.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

const SECRET = 'shared-test-signing-secret';
const sign = (key: string, raw: string) => `sha256=${createHmac('sha256', key).update(raw).digest('hex')}`;

let platform: TestPlatform | undefined;
let receivers: WebhookReceiver[] = [];
afterEach(async () => {
  await platform?.close();
  await Promise.all(receivers.map((r) => r.close()));
  platform = undefined;
  receivers = [];
  expect(violations).toEqual([]);
});

async function setUp(options: Parameters<typeof startTestPlatform>[0] = {}) {
  const receiver = await startWebhookReceiver();
  receivers.push(receiver);
  platform = await startTestPlatform({ deliverTo: [receiver.url], webhookSecret: SECRET, delivery: { retryBaseMs: 50, maxBackoffMs: 200 }, ...options });
  const ada = platform.user('ada', 'human');
  const nova = platform.user('nova', 'ai', { trust: ['ada'] });
  const timeline = await sharedTimeline(platform, ada, nova);
  return { receiver, platform, ada, nova, timeline };
}

describe('deliveries', () => {
  it("a person's message reaches the timeline's agent, signed, with the router's headers and body", async () => {
    const { receiver, platform, ada, nova, timeline } = await setUp();
    const posted = (await platform.api('POST', `/timelines/${timeline}/messages`, { token: ada.token, json: { message: { body: 'hi @nova' } } })).body.message;
    const [delivery] = await receiver.waitFor(1);
    expect(delivery!.headers['x-basecradle-event']).toBe('message.created');
    expect(delivery!.headers['x-basecradle-signature']).toBe(sign(SECRET, delivery!.raw));
    expect(delivery!.body).toMatchObject({
      event: 'message.created',
      event_id: delivery!.headers['x-basecradle-delivery'],
      recipient_uuid: nova.uuid,
      timeline_uuid: timeline,
      actor_uuid: ada.uuid,
      resource: { type: 'message', uuid: posted.content.uuid, url: `${platform.url}/messages/${posted.content.uuid}` },
    });
    // The resource URL is one the recipient can read with its own token.
    const read = await platform.api('GET', new URL(delivery!.body.resource.url).pathname, { token: nova.token });
    expect(read.body.message.content.body).toBe('hi @nova');
  });

  it('goes to every AI viewer but the author, never to a person, and to every subscriber', async () => {
    const second = await startWebhookReceiver();
    receivers.push(second);
    const { receiver, platform, ada, nova, timeline } = await setUp({ deliverTo: [] });
    await platform.restart({ deliverTo: [receiver.url, second.url] });
    const orion = platform.user('orion', 'ai', { trust: ['ada', 'nova'] });
    await platform.api('POST', `/timelines/${timeline}/participations`, { token: ada.token, json: { user_id: orion.uuid } });
    await platform.api('POST', `/timelines/${timeline}/messages`, { token: nova.token, json: { message: { body: 'from nova' } } });
    const got = await receiver.waitFor(1);
    await second.waitFor(1);
    await new Promise((resolve) => setTimeout(resolve, 200)); // nothing else is on its way
    expect(got.map((d) => d.body.recipient_uuid)).toEqual([orion.uuid]);
    expect(second.received.map((d) => d.body.recipient_uuid)).toEqual([orion.uuid]);
    // Each subscriber's copy is its own delivery.
    expect(second.received[0]!.headers['x-basecradle-delivery']).not.toBe(got[0]!.headers['x-basecradle-delivery']);
  });

  it("signs with the recipient's own key when it has one", async () => {
    const { receiver, platform, ada, timeline } = await setUp({ webhookSecrets: { NOVA: 'nova-own-key' } });
    await platform.api('POST', `/timelines/${timeline}/messages`, { token: ada.token, json: { message: { body: 'x' } } });
    const [delivery] = await receiver.waitFor(1);
    expect(delivery!.headers['x-basecradle-signature']).toBe(sign('nova-own-key', delivery!.raw));
    expect(delivery!.headers['x-basecradle-signature']).not.toBe(sign(SECRET, delivery!.raw));
  });

  it('an asset, a task coming due (to its own author too) and an inbound webhook each wake the agent', async () => {
    const { receiver, platform, ada, nova, timeline } = await setUp();
    const form = new FormData();
    form.append('asset[file]', new Blob(['notes']), 'notes.txt');
    form.append('asset[description]', 'notes');
    await platform.api('POST', `/timelines/${timeline}/assets`, { token: ada.token, form });
    await platform.api('POST', `/timelines/${timeline}/tasks`, { token: nova.token, json: { task: { instructions: 'remind me', activate_at: new Date(Date.now() + 300).toISOString() } } });
    const endpoint = (await platform.api('POST', `/timelines/${timeline}/webhook_endpoints`, { token: ada.token, json: { webhook_endpoint: { description: 'ci' } } })).body.webhook_endpoint;
    await platform.api('POST', new URL(endpoint.content.ingest_url).pathname, { json: { event: 'build', status: 'green' } });
    const got = await receiver.waitFor(3);
    expect(got.map((d) => d.body.event).sort()).toEqual(['asset.created', 'task.activated', 'webhook_event.received']);
    expect(got.every((d) => d.body.recipient_uuid === nova.uuid)).toBe(true);
    const activated = got.find((d) => d.body.event === 'task.activated')!;
    expect(activated.body.actor_uuid).toBeNull();
    const task = await platform.api('GET', new URL(activated.body.resource.url).pathname, { token: nova.token });
    expect(task.body.task.content.status).toBe('activated');
  });

  it('a refused delivery is retried under the same delivery id until the subscriber takes it', async () => {
    const { receiver, platform, ada, timeline } = await setUp();
    receiver.respondWith(503);
    await platform.api('POST', `/timelines/${timeline}/messages`, { token: ada.token, json: { message: { body: 'x' } } });
    await receiver.waitFor(2);
    receiver.respondWith(200);
    const got = await receiver.waitFor(3);
    const ids = new Set(got.map((d) => d.headers['x-basecradle-delivery']));
    expect(ids.size).toBe(1);
    expect(got.map((d) => d.headers['x-test-answered'] ?? '200')).toEqual(['503', '503', '200']);
    expect(platform.logs.some((line) => line.startsWith('WARNING delivery retry') && line.includes('status=503'))).toBe(true);
  });

  it('what could not be delivered while the subscriber was down goes out when the platform starts again', async () => {
    const { receiver, platform, ada, timeline } = await setUp({ delivery: { retryBaseMs: 60_000 } });
    receiver.respondWith(500);
    await platform.api('POST', `/timelines/${timeline}/messages`, { token: ada.token, json: { message: { body: 'while you were out' } } });
    const [refused] = await receiver.waitFor(1);
    await platform.close();
    receiver.respondWith(200);
    // The retry was due in a minute; a new process finds it in the outbox (and retries it then).
    const db = (await import('../../src/store/database.ts')).openDatabase(`${platform.home}/platform.db`);
    db.prepare('UPDATE deliveries SET next_attempt_ms = 0').run();
    db.close();
    await platform.restart();
    const got = await receiver.waitFor(2);
    expect(got[1]!.headers['x-basecradle-delivery']).toBe(refused!.headers['x-basecradle-delivery']);
    expect(got[1]!.raw).toBe(refused!.raw);
  });

  it('gives up after the last attempt and says so; the dashboard counts the failure', async () => {
    const { receiver, platform, ada, nova, timeline } = await setUp({ delivery: { retryBaseMs: 20, maxAttempts: 2 } });
    receiver.respondWith(500);
    await platform.api('POST', `/timelines/${timeline}/messages`, { token: ada.token, json: { message: { body: 'x' } } });
    await receiver.waitFor(2);
    await expect.poll(() => platform.logs.some((line) => line.startsWith('ERROR delivery failed') && line.includes('gave up after 2 attempts'))).toBe(true);
    expect((await platform.api('GET', '/users/dashboard', { token: nova.token })).body.identity.integration_failure_count).toBe(1);
  });

  it('never sends a delivery it cannot sign', async () => {
    const { receiver, platform, ada, timeline } = await setUp({ webhookSecret: undefined });
    await platform.api('POST', `/timelines/${timeline}/messages`, { token: ada.token, json: { message: { body: 'x' } } });
    await expect.poll(() => platform.logs.some((line) => line.startsWith('ERROR delivery failed') && line.includes('no signing key'))).toBe(true);
    expect(receiver.received).toEqual([]);
  });
});
