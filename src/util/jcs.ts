import canonicalize from 'canonicalize';
import { createHash } from 'node:crypto';

/**
 * RFC 8785 JSON Canonicalization Scheme. Every signed or content-addressed JSON value in acx goes
 * through here so that hashing never depends on key order or whitespace.
 */
export function canonicalJson(value: unknown): string {
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

export function sha256Hex(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex');
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
