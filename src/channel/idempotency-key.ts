import { createHash } from 'node:crypto';

/**
 * The deterministic Idempotency-Key of a platform create made by a wake, as the BaseCradle
 * harness derives it (FACTS.md): uuid5 over `timeline:anchor:kind:ordinal` in a fixed namespace.
 * The same create re-issued after a crash carries the same key, so the platform returns the
 * first record instead of making a second one. No anchor, no key.
 */
export const IDEMPOTENCY_NAMESPACE = '9f2b0c4e-6a1d-4f7e-9c3b-8d5a2e1f0b74';

export type KeyedCreate = 'message' | 'asset' | 'task' | 'webhook_endpoint' | 'stall_note';

export function idempotencyKeyFor(parts: { timeline: string; anchor: string | undefined; kind: KeyedCreate; ordinal: number }): string | undefined {
  if (!parts.anchor) return undefined;
  return uuid5(IDEMPOTENCY_NAMESPACE, `${parts.timeline}:${parts.anchor}:${parts.kind}:${parts.ordinal}`);
}

/** RFC 4122 §4.3, name-based with SHA-1 (version 5). */
export function uuid5(namespace: string, name: string): string {
  const ns = Buffer.from(namespace.replace(/-/g, ''), 'hex');
  if (ns.length !== 16) throw new TypeError(`not a uuid: ${namespace}`);
  const bytes = createHash('sha1').update(ns).update(name, 'utf8').digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
