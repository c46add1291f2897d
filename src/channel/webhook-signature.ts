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
  const found = findSigningSecret({ rawBody: input.rawBody, headers: input.headers, secrets: [input.secret] });
  return found.ok ? { ok: true } : found;
}

/**
 * Which of `secrets` signed the delivery (a receiver that does not yet know whose it is tries
 * each key it holds), or why none did. Every key is compared, each in constant time.
 */
export function findSigningSecret(input: {
  rawBody: string | Uint8Array;
  headers: HeaderBag;
  secrets: readonly string[];
  /** The header the signature rides in (default X-BaseCradle-Signature). */
  header?: string;
}): { ok: true; secret: string } | Extract<SignatureCheck, { ok: false }> {
  const header = headerValue(input.headers, input.header ?? SIGNATURE_HEADER);
  if (header === undefined || header.trim() === '') return { ok: false, reason: 'missing' };
  const match = /^\s*sha256=([0-9a-f]{64})\s*$/i.exec(header);
  if (!match) return { ok: false, reason: 'malformed' };
  const presented = Buffer.from(match[1]!, 'hex');
  let signer: string | undefined;
  for (const secret of input.secrets) {
    const expected = Buffer.from(webhookSignature(secret, input.rawBody).slice('sha256='.length), 'hex');
    if (secureEqual(presented, expected)) signer ??= secret;
  }
  return signer === undefined ? { ok: false, reason: 'mismatch' } : { ok: true, secret: signer };
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
