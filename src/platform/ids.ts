import { createHash, randomBytes } from 'node:crypto';

/**
 * Identifiers of the local platform. Every record gets a UUIDv7 from one monotonic generator,
 * and records are written by one process one at a time, so within a timeline UUID order is
 * commit order: the newest uuid a reader has seen is a safe high-water mark, as the platform
 * promises its peers. (node's randomUUIDv7 is not monotonic inside one millisecond.)
 */
let lastMs = 0;
let counter = 0;

export function newUuid(): string {
  let ms = Date.now();
  if (ms <= lastMs) {
    ms = lastMs;
    counter += 1;
    // 12 bits of counter per millisecond; past that, borrow the next millisecond.
    if (counter > 0xfff) {
      ms += 1;
      counter = 0;
    }
  } else {
    counter = randomBytes(2).readUInt16BE(0) & 0x3ff; // a random start leaves room to count up
  }
  lastMs = ms;
  const bytes = randomBytes(16);
  bytes.writeUIntBE(ms, 0, 6);
  bytes[6] = 0x70 | (counter >> 8);
  bytes[7] = counter & 0xff;
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID.test(value);
}

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** `prefix` + `length` random alphanumerics (rejection sampling: no modulo bias). */
export function randomToken(prefix: string, length = 32): string {
  let out = prefix;
  while (out.length < prefix.length + length) {
    for (const byte of randomBytes(length)) {
      if (byte < 248 && out.length < prefix.length + length) out += ALPHANUMERIC[byte % 62];
    }
  }
  return out;
}

/** An API token, shaped like the platform's own (`bc_uat_` + 32 alphanumerics). Shown once, stored only as its hash. */
export const newApiToken = (): string => randomToken('bc_uat_');

/** What is stored for a token: its SHA-256, hex. A leaked database gives no usable token. */
export function tokenHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** The current time as the platform writes it: ISO 8601, milliseconds, UTC. */
export const nowIso = (): string => new Date().toISOString();
