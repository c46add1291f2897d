// Passwords: hashed and checked on libuv's threadpool (never on the event loop), and every check
// runs the KDF once, with the current parameters, whether or not there is a hash to check against.
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type PasswordKdf, Passwords, scryptKdf } from '../../src/platform/passwords.ts';

/**
 * Occupies every thread of libuv's pool: each opens a FIFO for reading, which blocks until a
 * writer opens it. Work queued after them (an async scrypt) cannot start until release().
 */
async function holdThreadpool(): Promise<{ release(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'acx-threadpool-'));
  const size = Number(process.env.UV_THREADPOOL_SIZE) || 4;
  const fifos = Array.from({ length: size }, (_, i) => join(dir, `fifo-${i}`));
  execFileSync('mkfifo', fifos);
  const readers = fifos.map((fifo) => open(fifo, 'r'));
  return {
    async release() {
      // Opening a FIFO read-write never blocks on Linux and gives it a writer, so each reader's
      // open returns, whether it already waits in a pool thread or is still queued for one.
      const writers = fifos.map((fifo) => openSync(fifo, constants.O_RDWR));
      for (const handle of await Promise.all(readers)) await handle.close();
      for (const fd of writers) closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Whether a promise has settled, after letting the event loop turn `turns` times. */
async function settledAfterTurns(promise: Promise<unknown>, turns: number): Promise<boolean> {
  let settled = false;
  void promise.then(() => (settled = true), () => (settled = true));
  for (let i = 0; i < turns && !settled; i++) await new Promise((resolve) => setImmediate(resolve));
  return settled;
}

function countingKdf(): { kdf: PasswordKdf; calls: Array<{ keyBytes: number; N: number; r: number; p: number }> } {
  const calls: Array<{ keyBytes: number; N: number; r: number; p: number }> = [];
  return {
    calls,
    kdf: (password, salt, keyBytes, params) => {
      calls.push({ keyBytes, ...params });
      return scryptKdf(password, salt, keyBytes, params);
    },
  };
}

describe('passwords', () => {
  it('hash and verify run on the threadpool: the event loop keeps turning while the KDF cannot start', async () => {
    const passwords = new Passwords();
    const stored = await passwords.hash('a long passphrase');
    const pool = await holdThreadpool();
    const hashing = passwords.hash('another passphrase');
    const checking = passwords.verify('a long passphrase', stored);
    try {
      expect(await settledAfterTurns(hashing, 20)).toBe(false);
      expect(await settledAfterTurns(checking, 20)).toBe(false);
    } finally {
      await pool.release();
    }
    expect(await checking).toBe(true);
    expect(await passwords.verify('another passphrase', await hashing)).toBe(true);
    expect(await passwords.verify('a wrong passphrase', stored)).toBe(false);
  });

  it('an unknown account, a malformed hash and a wrong password each cost one KDF run with the current parameters', async () => {
    const { kdf, calls } = countingKdf();
    const passwords = new Passwords(kdf);
    const stored = await passwords.hash('a long passphrase');
    const current = calls.splice(0);
    expect(current).toEqual([{ keyBytes: 32, N: 16384, r: 8, p: 1 }]);
    for (const hash of [undefined, null, '', 'scrypt$1$2', 'bcrypt$whatever']) {
      expect(await passwords.verify('a long passphrase', hash)).toBe(false);
      expect(calls.splice(0)).toEqual(current);
    }
    expect(await passwords.verify('a wrong passphrase', stored)).toBe(false);
    expect(calls.splice(0)).toEqual(current);
    expect(await passwords.verify('a long passphrase', stored)).toBe(true);
    expect(calls.splice(0)).toEqual(current);
  });

  it('a password shorter than 8 characters is refused before anything is hashed', async () => {
    const { kdf, calls } = countingKdf();
    await expect(new Passwords(kdf).hash('short')).rejects.toMatchObject({ code: 'validation_failed', errors: { password: ['must be at least 8 characters'] } });
    expect(calls).toEqual([]);
  });
});
