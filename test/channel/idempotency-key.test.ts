import { describe, expect, it } from 'vitest';
import { idempotencyKeyFor, IDEMPOTENCY_NAMESPACE, uuid5 } from '../../src/channel/idempotency-key.ts';

describe('the deterministic Idempotency-Key of a wake\'s creates', () => {
  it('is RFC 4122 uuid5 (the vector from Python\'s uuid docs)', () => {
    expect(uuid5('6ba7b810-9dad-11d1-80b4-00c04fd430c8', 'python.org')).toBe('886313e1-3b8a-5372-9b90-0c9aee199e5d');
  });

  it('is uuid5 over timeline:anchor:kind:ordinal in the harness namespace, and none without an anchor', () => {
    const timeline = '0190a5f2-0000-7000-8000-000000000001';
    const anchor = '0190a5f2-0000-7000-8000-0000000000aa';
    const first = idempotencyKeyFor({ timeline, anchor, kind: 'message', ordinal: 1 });
    expect(first).toBe(uuid5(IDEMPOTENCY_NAMESPACE, `${timeline}:${anchor}:message:1`));
    expect(idempotencyKeyFor({ timeline, anchor, kind: 'message', ordinal: 1 })).toBe(first);
    expect(idempotencyKeyFor({ timeline, anchor, kind: 'message', ordinal: 2 })).not.toBe(first);
    expect(idempotencyKeyFor({ timeline, anchor, kind: 'task', ordinal: 1 })).not.toBe(first);
    expect(idempotencyKeyFor({ timeline, anchor: undefined, kind: 'message', ordinal: 1 })).toBeUndefined();
  });
});
