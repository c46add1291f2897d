// The deterministic keys a wake's creates carry (FACTS.md): uuid5 over
// timeline:anchor:kind:ordinal. The expected values come from Python's own uuid.uuid5, the
// harness's language, so the keys match what the Python harness would send for the same create.
import { describe, expect, it } from 'vitest';
import { createIdempotencyKey, uuid5 } from '../../src/channel/index.ts';

const TIMELINE = '01a233da-e98e-72b6-b5fb-9028834b425b';
const ANCHOR = '01a233da-e98e-72b6-b5fb-9028834b4200';

describe('idempotency keys', () => {
  it('uuid5 matches the RFC vector Python documents', () => {
    // python3 -c "import uuid; print(uuid.uuid5(uuid.NAMESPACE_DNS, 'python.org'))"
    expect(uuid5('6ba7b810-9dad-11d1-80b4-00c04fd430c8', 'python.org')).toBe('886313e1-3b8a-5372-9b90-0c9aee199e5d');
  });

  it('a create’s key is uuid5(namespace, "timeline:anchor:kind:ordinal"), as the harness computes it', () => {
    expect(createIdempotencyKey({ timeline: TIMELINE, anchor: ANCHOR, kind: 'message', ordinal: 1 })).toBe('1eb655aa-a3d4-500f-892c-8952e7e6b4b4');
    expect(createIdempotencyKey({ timeline: TIMELINE, anchor: ANCHOR, kind: 'task', ordinal: 2 })).toBe('03ed1c43-d3cc-51fc-b001-5975c8ab834e');
  });

  it('the same create gets the same key on every run; any part changed gives another', () => {
    const base = { timeline: TIMELINE, anchor: ANCHOR, kind: 'message' as const, ordinal: 1 };
    const key = createIdempotencyKey(base);
    expect(createIdempotencyKey({ ...base })).toBe(key);
    const others = [{ ...base, ordinal: 2 }, { ...base, kind: 'asset' as const }, { ...base, anchor: TIMELINE }, { ...base, timeline: ANCHOR }].map(createIdempotencyKey);
    expect(new Set([key, ...others]).size).toBe(5);
  });

  it('no anchor means no key; an ordinal below 1 is a mistake', () => {
    expect(createIdempotencyKey({ timeline: TIMELINE, anchor: undefined, kind: 'message', ordinal: 1 })).toBeUndefined();
    expect(() => createIdempotencyKey({ timeline: TIMELINE, anchor: ANCHOR, kind: 'message', ordinal: 0 })).toThrow("A create's ordinal counts from 1, not 0.");
  });
});
