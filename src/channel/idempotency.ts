import { createHash } from 'node:crypto';

/**
 * The deterministic Idempotency-Key of a create a wake makes (FACTS.md, "Idempotency key"):
 * uuid5 over `{timeline}:{anchor}:{kind}:{ordinal}` in a fixed namespace, so a wake killed
 * mid-turn and run again re-issues each create under the key it had, and the platform answers
 * with the record it already made instead of making a second one.
 * - timeline: the timeline the wake fired on;
 * - anchor: the oldest message of the batch, or the item's own uuid;
 * - kind: what is created;
 * - ordinal: 1 + the creates of that kind before this one in the turn, in the journal's order
 *   (step, then place in the step). FACTS.md says "that already have a result": the same when
 *   creates run one at a time. For two run side by side in one step neither has a result yet, so
 *   counting results would give both one key and the platform would return the first record for
 *   the second; their places in the journal tell them apart, the same in every process.
 * No anchor, no key: the create is sent without the header.
 */
export const IDEMPOTENCY_NAMESPACE = '9f2b0c4e-6a1d-4f7e-9c3b-8d5a2e1f0b74';

export type CreateKind = 'message' | 'asset' | 'task' | 'webhook_endpoint';

export interface CreateKeyInput {
  timeline: string;
  anchor: string | undefined;
  kind: CreateKind;
  ordinal: number;
}

export function createIdempotencyKey(input: CreateKeyInput): string | undefined {
  if (!input.anchor) return undefined;
  if (!Number.isInteger(input.ordinal) || input.ordinal < 1) throw new RangeError(`A create's ordinal counts from 1, not ${input.ordinal}.`);
  return uuid5(IDEMPOTENCY_NAMESPACE, `${input.timeline}:${input.anchor}:${input.kind}:${input.ordinal}`);
}

/** RFC 9562 UUID version 5: SHA-1 of the namespace's 16 bytes and the name's UTF-8. */
export function uuid5(namespace: string, name: string): string {
  const hex = namespace.replace(/-/g, '');
  if (!/^[0-9a-f]{32}$/i.test(hex)) throw new TypeError(`"${namespace}" is not a uuid.`);
  const bytes = createHash('sha1').update(Buffer.from(hex, 'hex')).update(name, 'utf8').digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const out = bytes.toString('hex');
  return `${out.slice(0, 8)}-${out.slice(8, 12)}-${out.slice(12, 16)}-${out.slice(16, 20)}-${out.slice(20)}`;
}
