import canonicalize from 'canonicalize';
import { nodeCrypto } from './node-crypto.ts';

/**
 * RFC 8785 JSON Canonicalization Scheme. Every signed or content-addressed JSON value in acx goes
 * through here so that hashing never depends on key order or whitespace.
 */
export function canonicalJson(value: unknown): string {
  // Plain JSON data (the common case) is checked and serialised in one pass; anything else
  // (toJSON, boxed values, sparse arrays, non-finite numbers, lone surrogates, ...) takes the
  // general path below, which decides exactly as before: the same output or the same error.
  if (sortedPlain(value)) {
    // Keys already in JCS order: JSON.stringify writes exactly the JCS form (same string escapes,
    // same number format), except that it escapes lone surrogates as \udxxx where JCS refuses
    // them. Any "\ud" in the output (or a harmless look-alike) sends the value down the slow path.
    const out = JSON.stringify(value);
    if (!out.includes('\\ud')) return out;
  }
  const fast = plainJcs(value);
  if (fast !== undefined) return fast;
  assertJcsSafe(value, '$');
  const out = canonicalize(value);
  if (out === undefined) throw new TypeError('JCS: value has no JSON representation');
  return out;
}

/** UTF-8 bytes of the canonical form. */
export function canonicalBytes(value: unknown): Buffer {
  return Buffer.from(canonicalJson(value), 'utf8');
}

/** "sha256:" + hex(sha256(bytes)) — the content address used across the cartridge format. */
export function sha256Oid(bytes: Uint8Array | string): string {
  return `sha256:${sha256Hex(bytes)}`;
}

/** Hex SHA-256; strings are hashed as UTF-8. One-shot (no Hash object per call). */
export function sha256Hex(bytes: Uint8Array | string): string {
  return nodeCrypto().hash('sha256', bytes, 'hex');
}

/**
 * True for plain JSON data whose object keys are all in insertion order = JCS order (UTF-16
 * code units): null, booleans, finite numbers, strings, dense arrays, plain objects without
 * undefined members or toJSON.
 */
function sortedPlain(value: unknown): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object': {
      if (value === null) return true;
      if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return false;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) if (!(i in value) || !sortedPlain(value[i])) return false;
        return true;
      }
      const proto = Object.getPrototypeOf(value) as unknown;
      if (proto !== Object.prototype && proto !== null) return false;
      let prev: string | null = null;
      for (const key in value) {
        if (!Object.hasOwn(value, key) || (prev !== null && !(prev < key))) return false;
        prev = key;
        const v = (value as Record<string, unknown>)[key];
        if (v === undefined || !sortedPlain(v)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

/**
 * JCS of plain JSON data: null, booleans, finite numbers, well-formed strings, dense arrays and
 * plain objects. Returns undefined (serialises nothing) as soon as it meets anything else.
 */
function plainJcs(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return wellFormed(value) ? JSON.stringify(value) : undefined;
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : undefined;
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (value === null) return 'null';
      if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return undefined;
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i++) {
          if (!(i in value)) return undefined;
          const item = plainJcs(value[i]);
          if (item === undefined) return undefined;
          out += i === 0 ? item : `,${item}`;
        }
        return `${out}]`;
      }
      const proto = Object.getPrototypeOf(value) as unknown;
      if (proto !== Object.prototype && proto !== null) return undefined;
      const record = value as Record<string, unknown>;
      // Default sort compares UTF-16 code units: the order RFC 8785 prescribes.
      const keys = Object.keys(record).sort();
      let out = '{';
      let first = true;
      for (const key of keys) {
        const v = record[key];
        if (v === undefined) continue;
        if (!wellFormed(key)) return undefined;
        const item = plainJcs(v);
        if (item === undefined) return undefined;
        out += `${first ? '' : ','}${JSON.stringify(key)}:${item}`;
        first = false;
      }
      return `${out}}`;
    }
    default:
      return undefined;
  }
}

/** No lone surrogates (String.prototype.isWellFormed, ES2024; the tsconfig lib predates it). */
function wellFormed(s: string): boolean {
  return (s as string & { isWellFormed(): boolean }).isWellFormed();
}

// canonicalize silently drops or stringifies some values; signing such data would hash
// something other than what the caller meant, so refuse instead.
function assertJcsSafe(value: unknown, path: string): void {
  if (value === null) return;
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`JCS: non-finite number at ${path}`);
      return;
    case 'object':
      if (Array.isArray(value)) {
        value.forEach((item, i) => assertJcsSafe(item, `${path}[${i}]`));
        return;
      }
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        if (v !== undefined) assertJcsSafe(v, `${path}.${k}`);
      }
      return;
    default:
      throw new TypeError(`JCS: unsupported ${typeof value} at ${path}`);
  }
}
