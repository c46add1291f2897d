import { createHmac } from 'node:crypto';
import { secureEqual } from '../util/secure-compare.ts';

/**
 * The platform signs each delivery it sends with `X-BaseCradle-Signature: sha256=<hex>`, the
 * HMAC-SHA256 of the raw body under the receiver's secret. Checked over the bytes as they
 * arrived (a re-serialized JSON body would not match) and compared in constant time.
 */
export const SIGNATURE_HEADER = 'X-BaseCradle-Signature';

export type HeaderBag = Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

export type SignatureCheck = { ok: true } | { ok: false; reason: 'missing' | 'malformed' | 'mismatch' };

/** `sha256=<hex>` for a body under a secret: what a valid header holds. */
export function webhookSignature(secret: string, rawBody: string | Uint8Array): string {
  return `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`;
}

/** Whether a delivery's signature header is the body's HMAC under `secret`, and if not, why. */
export function checkWebhookSignature(input: { rawBody: string | Uint8Array; headers: HeaderBag; secret: string }): SignatureCheck {
  const header = headerValue(input.headers, SIGNATURE_HEADER);
  if (header === undefined || header.trim() === '') return { ok: false, reason: 'missing' };
  const match = /^\s*sha256=([0-9a-f]{64})\s*$/i.exec(header);
  if (!match) return { ok: false, reason: 'malformed' };
  const expected = Buffer.from(webhookSignature(input.secret, input.rawBody).slice('sha256='.length), 'hex');
  return secureEqual(Buffer.from(match[1]!, 'hex'), expected) ? { ok: true } : { ok: false, reason: 'mismatch' };
}

export function verifyWebhookSignature(input: { rawBody: string | Uint8Array; headers: HeaderBag; secret: string }): boolean {
  return checkWebhookSignature(input).ok;
}

/** A header by name, whatever case it arrived in (Node lower-cases, other senders may not). */
export function headerValue(headers: HeaderBag, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== wanted || value === undefined) continue;
    return typeof value === 'string' ? value : value[0];
  }
  return undefined;
}
