import { describe, expect, it } from 'vitest';
import { withoutUndefinedKeys } from '../../src/util/undefined-keys.ts';

describe('withoutUndefinedKeys', () => {
  it('drops the keys that hold undefined, at any depth, as a JSON round trip would', () => {
    const message = {
      role: 'assistant',
      content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'note', input: { text: 'milk', extra: undefined }, providerExecuted: undefined, providerOptions: undefined }],
    };
    const plain = withoutUndefinedKeys(message);
    expect(plain).toStrictEqual(JSON.parse(JSON.stringify(message)));
    expect(Object.keys(plain.content[0]!)).toEqual(['type', 'toolCallId', 'toolName', 'input']);
    // The input was given: it is not changed in place.
    expect('extra' in message.content[0]!.input).toBe(true);
  });

  it('gives back the same objects where there is nothing to drop', () => {
    const part = { type: 'text', text: 'hi' };
    const message = { role: 'assistant', content: [part, { type: 'tool-call', input: { n: 1 }, providerExecuted: undefined }] };
    const plain = withoutUndefinedKeys(message);
    expect(plain).not.toBe(message);
    expect(plain.content[0]).toBe(part);
    const clean = { role: 'user', content: [part] };
    expect(withoutUndefinedKeys(clean)).toBe(clean);
  });

  it('keeps bytes, class instances and array holes as they are', () => {
    const bytes = new Uint8Array([1, 2]);
    const when = new Date(0);
    const value = { bytes, when, list: [undefined, 1] };
    const plain = withoutUndefinedKeys(value);
    expect(plain).toBe(value);
    expect(plain.bytes).toBe(bytes);
    expect(plain.list).toEqual([undefined, 1]);
  });
});
