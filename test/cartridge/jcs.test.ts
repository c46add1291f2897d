import canonicalize from 'canonicalize';
import { describe, expect, it } from 'vitest';
import { canonicalJson, sha256Hex, sha256Oid } from '../../src/util/jcs.ts';

// What canonicalJson did before its fast paths: refuse what JCS cannot carry, then canonicalize.
function slowJcs(value: unknown): string {
  const check = (v: unknown, path: string): void => {
    if (v === null) return;
    switch (typeof v) {
      case 'string':
      case 'boolean':
        return;
      case 'number':
        if (!Number.isFinite(v)) throw new TypeError(`JCS: non-finite number at ${path}`);
        return;
      case 'object':
        if (Array.isArray(v)) v.forEach((item, i) => check(item, `${path}[${i}]`));
        else for (const [k, x] of Object.entries(v as Record<string, unknown>)) if (x !== undefined) check(x, `${path}.${k}`);
        return;
      default:
        throw new TypeError(`JCS: unsupported ${typeof v} at ${path}`);
    }
  };
  check(value, '$');
  const out = canonicalize(value);
  if (out === undefined) throw new TypeError('JCS: value has no JSON representation');
  return out;
}

function outcome(fn: () => string): string {
  try {
    return `ok ${fn()}`;
  } catch (error) {
    return `error ${(error as Error).message}`;
  }
}

describe('canonicalJson (RFC 8785)', () => {
  const cases: Array<[string, unknown]> = [
    ['sorted keys', { canon: 'raw', oid: 'sha256:ab', sourceRef: 'rom/a', sz: 3 }],
    ['unsorted keys', { sz: 3, sourceRef: 'rom/a', oid: 'sha256:ab', canon: 'raw' }],
    ['numeric-looking keys', { 10: 'a', 9: 'b', a: 1 }],
    ['UTF-16 key order', { '\u{1F600}': 1, '\uFFFF': 2, é: 3, z: 4 }],
    ['numbers', [0, -0, 1.5, 1e21, 1e-7, 123456789012345680000, -3]],
    ['escapes', ['"q"', '\\', '\n\t\u0000', '\u2028', 'é', '\u{1F600}', '\\ud800 literally']],
    ['nested', { b: [{ y: null, x: true }, []], a: {} }],
    ['undefined member', { a: undefined, b: 1 }],
    ['null prototype', Object.assign(Object.create(null) as object, { b: 1, a: 2 })],
    ['toJSON', { when: new Date(0) }],
    ['lone surrogate value', { a: '\uD800' }],
    ['lone surrogate key', { '\uDC00': 1 }],
    ['NaN', { a: Number.NaN }],
    ['Infinity', [Number.POSITIVE_INFINITY]],
    ['undefined in array', [1, undefined]],
    ['sparse array', [1, , 3]],
    ['function member', { f: () => 1 }],
    ['bigint', { n: 1n }],
    ['top-level string', 'x'],
  ];
  it.each(cases)('matches canonicalize exactly (output or error): %s', (_label, value) => {
    expect(outcome(() => canonicalJson(value))).toBe(outcome(() => slowJcs(value)));
  });

  it('hashes strings as UTF-8', () => {
    expect(sha256Hex('é')).toBe(sha256Hex(Buffer.from('é', 'utf8')));
    expect(sha256Oid('')).toBe('sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });
});
