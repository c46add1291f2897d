// Verifying the platform's signed deliveries as a router receives them: the real embedded
// platform signs a delivery to a loopback receiver, and the check accepts exactly that raw
// body under that secret — not a tampered body, another secret, a missing or malformed header —
// whatever case the header name arrived in, comparing in constant time.
import * as crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { checkWebhookSignature, headerValue, verifyWebhookSignature, webhookSignature } from '../../src/channel/index.ts';
import { sharedTimeline, startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { type ReceivedDelivery, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

// Every comparison goes through node's timingSafeEqual: the spy counts the calls, the real one answers.
vi.mock('node:crypto', async (original) => {
  const actual = await original<typeof import('node:crypto')>();
  return { ...actual, timingSafeEqual: vi.fn(actual.timingSafeEqual) };
});

const SECRET = 'router-secret-for-nova-0123456789';

describe('webhook signature verification', () => {
  let p: TestPlatform;
  let receiver: WebhookReceiver;
  let delivery: ReceivedDelivery;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    p = await startTestPlatform({ deliverTo: [receiver.url], webhookSecret: SECRET });
    const ada = p.user('ada', 'human');
    const nova = p.user('nova', 'ai', { trust: ['ada'] });
    const room = await sharedTimeline(p, ada, nova);
    await p.api('POST', `/timelines/${room}/messages`, { token: ada.token, json: { message: { body: 'hello @nova' } } });
    const deliveries = await receiver.waitFor(1);
    delivery = deliveries.find((d) => d.body.recipient_uuid === nova.uuid)!;
  });
  afterAll(async () => {
    await p?.close();
    await receiver?.close();
  });

  it('accepts the platform’s own delivery under the secret it was signed with', () => {
    expect(delivery.headers['x-basecradle-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(checkWebhookSignature({ rawBody: delivery.raw, headers: delivery.headers, secret: SECRET })).toEqual({ ok: true });
    expect(verifyWebhookSignature({ rawBody: Buffer.from(delivery.raw), headers: delivery.headers, secret: SECRET })).toBe(true);
    expect(webhookSignature(SECRET, delivery.raw)).toBe(delivery.headers['x-basecradle-signature']);
  });

  it('refuses a tampered body, even one that parses to the same JSON', () => {
    const tampered = delivery.raw.replace(/"timeline_uuid":"[^"]+"/, '"timeline_uuid":"00000000-0000-7000-8000-000000000000"');
    expect(tampered).not.toBe(delivery.raw);
    expect(checkWebhookSignature({ rawBody: tampered, headers: delivery.headers, secret: SECRET })).toEqual({ ok: false, reason: 'mismatch' });
    const reserialized = JSON.stringify(JSON.parse(delivery.raw), null, 1);
    expect(verifyWebhookSignature({ rawBody: reserialized, headers: delivery.headers, secret: SECRET })).toBe(false);
  });

  it('refuses the right body under another secret', () => {
    expect(checkWebhookSignature({ rawBody: delivery.raw, headers: delivery.headers, secret: 'someone else’s secret' })).toEqual({ ok: false, reason: 'mismatch' });
  });

  it('refuses a missing, empty or malformed header', () => {
    const { 'x-basecradle-signature': _dropped, ...unsigned } = delivery.headers;
    expect(checkWebhookSignature({ rawBody: delivery.raw, headers: unsigned, secret: SECRET })).toEqual({ ok: false, reason: 'missing' });
    expect(checkWebhookSignature({ rawBody: delivery.raw, headers: { 'x-basecradle-signature': '' }, secret: SECRET })).toEqual({ ok: false, reason: 'missing' });
    const hex = delivery.headers['x-basecradle-signature']!.slice('sha256='.length);
    for (const bad of [hex, `sha1=${hex}`, `sha256=${hex.slice(2)}`, `sha256=${hex}00`, 'sha256=not-hex']) {
      expect(checkWebhookSignature({ rawBody: delivery.raw, headers: { 'x-basecradle-signature': bad }, secret: SECRET })).toEqual({ ok: false, reason: 'malformed' });
    }
  });

  it('finds the header whatever its case, in a plain object or a Headers', () => {
    const signature = delivery.headers['x-basecradle-signature']!;
    expect(verifyWebhookSignature({ rawBody: delivery.raw, headers: { 'X-BaseCradle-Signature': signature }, secret: SECRET })).toBe(true);
    expect(verifyWebhookSignature({ rawBody: delivery.raw, headers: { 'X-BASECRADLE-SIGNATURE': [signature] }, secret: SECRET })).toBe(true);
    expect(verifyWebhookSignature({ rawBody: delivery.raw, headers: new Headers({ 'x-BaseCradle-signature': signature }), secret: SECRET })).toBe(true);
    expect(headerValue({ 'X-BaseCradle-Event': 'message.created' }, 'x-basecradle-event')).toBe('message.created');
    expect(verifyWebhookSignature({ rawBody: delivery.raw, headers: { 'X-BaseCradle-Signature': `SHA256=${signature.slice(7).toUpperCase()}` }, secret: SECRET })).toBe(true);
  });

  it('compares with crypto.timingSafeEqual, for a match and a mismatch alike', () => {
    const spy = vi.mocked(crypto.timingSafeEqual);
    spy.mockClear();
    verifyWebhookSignature({ rawBody: delivery.raw, headers: delivery.headers, secret: SECRET });
    verifyWebhookSignature({ rawBody: `${delivery.raw} `, headers: delivery.headers, secret: SECRET });
    expect(spy).toHaveBeenCalledTimes(2);
    expect(spy.mock.results.map((r) => r.value)).toEqual([true, false]);
  });
});
