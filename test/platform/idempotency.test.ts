// Keyed creates as a recovering client uses them: the same Idempotency-Key gives back the record it
// first created, however often it is sent, and only for the same timeline, author and kind.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AddedUser } from '../../src/platform/index.ts';
import { sharedTimeline, startTestPlatform, type TestPlatform, violations } from '../support/platform.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

let p: TestPlatform;
let receiver: WebhookReceiver;
let ada: AddedUser;
let nova: AddedUser;
let timeline: string;
beforeEach(async () => {
  receiver = await startWebhookReceiver();
  p = await startTestPlatform({ deliverTo: [receiver.url], webhookSecret: 'k' });
  ada = p.user('ada', 'human');
  nova = p.user('nova', 'ai', { trust: ['ada'] });
  timeline = await sharedTimeline(p, ada, nova);
});
afterEach(async () => {
  await p.close();
  await receiver.close();
  expect(violations).toEqual([]);
});

const message = (token: string, room: string, body: string, key?: string) =>
  p.api('POST', `/timelines/${room}/messages`, { token, json: { message: { body } }, headers: key ? { 'idempotency-key': key } : {} });

describe('Idempotency-Key', () => {
  it('a replay returns the original message, even with another body, and creates and announces nothing', async () => {
    const first = await message(nova.token, timeline, 'the answer', 'key-1');
    const again = await message(nova.token, timeline, 'a different answer', 'key-1');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect((await p.api('GET', `/messages?timeline=${timeline}`, { token: ada.token })).body.messages.map((m: { content: { body: string } }) => m.content.body)).toEqual(['the answer']);
    // nova is the author, ada is human: nobody to wake. Post as ada to see exactly one delivery.
    await message(ada.token, timeline, 'hi', 'key-2');
    await message(ada.token, timeline, 'hi', 'key-2');
    await receiver.waitFor(1);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(receiver.received).toHaveLength(1);
  });

  it('is scoped per author, per timeline and per kind', async () => {
    const other = (await p.api('POST', '/timelines', { token: ada.token, json: { timeline: { name: 'Other' } } })).body.timeline.uuid;
    const mine = await message(ada.token, timeline, 'one', 'shared-key');
    const theirs = await message(nova.token, timeline, 'two', 'shared-key');
    const elsewhere = await message(ada.token, other, 'three', 'shared-key');
    const task = await p.api('POST', `/timelines/${timeline}/tasks`, { token: ada.token, json: { task: { instructions: 'x', activate_at: '2099-01-01T00:00:00Z' } }, headers: { 'idempotency-key': 'shared-key' } });
    const uuids = [mine, theirs, elsewhere, task].map((r) => (r.body.message ?? r.body.task).content.uuid);
    expect(new Set(uuids).size).toBe(4);
  });

  it('a replay after the timeline was locked still returns the record; a new create is refused', async () => {
    const first = await message(nova.token, timeline, 'before the lock', 'k');
    await p.api('POST', `/timelines/${timeline}/lock`, { token: ada.token, json: {} });
    expect((await message(nova.token, timeline, 'before the lock', 'k')).body).toEqual(first.body);
    expect((await message(nova.token, timeline, 'after', 'k2')).body.code).toBe('timeline_locked');
  });

  it('a replayed upload keeps one asset and one file', async () => {
    const upload = () => {
      const form = new FormData();
      form.append('asset[file]', new Blob(['chart']), 'chart.txt');
      form.append('asset[description]', 'a chart');
      return p.api('POST', `/timelines/${timeline}/assets`, { token: nova.token, form, headers: { 'idempotency-key': 'upload-1' } });
    };
    const first = await upload();
    const again = await upload();
    expect(again.body.asset.content.uuid).toBe(first.body.asset.content.uuid);
    expect(readdirSync(join(p.home, 'assets', timeline))).toEqual([first.body.asset.content.uuid]);
    expect((await p.api('GET', `/assets?timeline=${timeline}`, { token: ada.token })).body.assets).toHaveLength(1);
  });

  it('webhook endpoints are keyed too', async () => {
    const create = () => p.api('POST', `/timelines/${timeline}/webhook_endpoints`, { token: ada.token, json: { webhook_endpoint: { description: 'ci' } }, headers: { 'idempotency-key': 'ep' } });
    const first = await create();
    expect((await create()).body.webhook_endpoint.content.ingest_url).toBe(first.body.webhook_endpoint.content.ingest_url);
  });
});
