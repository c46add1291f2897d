// POST /session under attack: an unknown address and a wrong password are answered alike after
// the same KDF work, a sign-in waiting on its KDF holds up no other request, and failed sign-ins
// are throttled per account and per client address (on a clock the test moves; nothing sleeps).
import { afterEach, describe, expect, it } from 'vitest';
import { hashPassword } from '../../src/platform/index.ts';
import { type PasswordKdf, scryptKdf } from '../../src/platform/passwords.ts';
import { startTestPlatform, type TestPlatform, violations } from '../support/platform.ts';

let p: TestPlatform | undefined;
afterEach(async () => {
  await p?.close();
  p = undefined;
  expect(violations).toEqual([]);
});

const PASSWORD = 'correct horse battery';

/** The real KDF, counted, and held while `gate` is set: each call waits for gate.open(). */
function instrumentedKdf() {
  let gate: { entered: () => void; wait: Promise<void>; open: () => void } | undefined;
  const kdf = {
    calls: 0,
    /** Holds every KDF call from now on; `entered` resolves when one is waiting. */
    hold() {
      let open!: () => void;
      let entered!: () => void;
      const reached = new Promise<void>((resolve) => (entered = resolve));
      gate = { entered, wait: new Promise<void>((resolve) => (open = resolve)), open };
      return {
        entered: reached,
        release: () => {
          gate = undefined;
          open();
        },
      };
    },
    fn: (async (password, salt, keyBytes, params) => {
      kdf.calls++;
      const held = gate;
      if (held) {
        held.entered();
        await held.wait;
      }
      return scryptKdf(password, salt, keyBytes, params);
    }) as PasswordKdf,
  };
  return kdf;
}

describe('POST /session', () => {
  it('an unknown address and a wrong password get the same answer after one KDF run each', async () => {
    const kdf = instrumentedKdf();
    p = await startTestPlatform({ passwordKdf: kdf.fn });
    p.user('ada', 'human', { email: 'ada@example.com', passwordHash: await hashPassword(PASSWORD) });
    const signIn = async (email: string, password: string) => {
      const before = kdf.calls;
      const answer = await p!.api('POST', '/session', { json: { email_address: email, password, name: 'x' } });
      return { status: answer.status, body: { ...answer.body, instance: undefined }, kdfRuns: kdf.calls - before };
    };
    const unknown = await signIn('nobody@example.com', PASSWORD);
    const wrong = await signIn('ada@example.com', 'not the password');
    expect(unknown).toEqual({
      status: 401,
      body: { type: 'https://basecradle.com/docs/api#error-invalid_credentials', title: 'Invalid credentials', status: 401, code: 'invalid_credentials', detail: 'The email address or password is incorrect.' },
      kdfRuns: 1,
    });
    expect(wrong).toEqual(unknown);
    expect(await signIn('ada@example.com', PASSWORD)).toMatchObject({ status: 201, kdfRuns: 1 });
  });

  it('a sign-in waiting on its KDF holds up no other request', async () => {
    const kdf = instrumentedKdf();
    p = await startTestPlatform({ passwordKdf: kdf.fn });
    const ada = p.user('ada', 'human', { email: 'ada@example.com', passwordHash: await hashPassword(PASSWORD) });
    const held = kdf.hold();
    let signedIn = false;
    const signIn = p.api('POST', '/session', { json: { email_address: 'ada@example.com', password: PASSWORD, name: 'x' } }).finally(() => (signedIn = true));
    // Either the sign-in reaches its KDF (and waits there), or it answered without waiting: the race says which.
    await Promise.race([held.entered, signIn]);
    expect(signedIn).toBe(false);
    const dashboard = await p.api('GET', '/users/dashboard', { token: ada.token });
    expect(dashboard.status).toBe(200);
    expect(signedIn).toBe(false);
    held.release();
    expect((await signIn).status).toBe(201);
  });

  it('failures shut an account, then twice as long each time; the right password waits too; others are unaffected', async () => {
    let now = 1_000_000;
    const kdf = instrumentedKdf();
    p = await startTestPlatform({ passwordKdf: kdf.fn, signInThrottle: { now: () => now } });
    p.user('ada', 'human', { email: 'ada@example.com', passwordHash: await hashPassword(PASSWORD) });
    p.user('eve', 'human', { email: 'eve@example.com', passwordHash: await hashPassword(PASSWORD) });
    const signIn = (email: string, password: string, from = '127.0.0.1') =>
      p!.api('POST', '/session', { json: { email_address: email, password, name: 'x' }, from });

    for (let i = 0; i < 5; i++) expect((await signIn('ada@example.com', 'guess')).body.code).toBe('invalid_credentials');
    const runs = kdf.calls;
    const shut = await signIn('ada@example.com', PASSWORD);
    expect(shut.status).toBe(429);
    expect(shut.headers.get('retry-after')).toBe('1');
    expect(shut.headers.get('content-type')).toBe('application/problem+json');
    expect(shut.body).toMatchObject({ code: 'rate_limited', status: 429, detail: 'Too many failed sign-ins for this account or from this address; try again in 1 s.' });
    // Refused before the password is looked at: no KDF run, so a shut key cannot be used to guess.
    expect(kdf.calls).toBe(runs);
    expect((await signIn('ada@example.com', PASSWORD, '127.0.0.2')).status).toBe(429);
    expect((await signIn('eve@example.com', PASSWORD)).status).toBe(201);
    expect((await signIn('eve@example.com', PASSWORD, '127.0.0.3')).status).toBe(201);

    now += 1000;
    expect((await signIn('ada@example.com', 'guess')).status).toBe(401);
    expect((await signIn('ada@example.com', PASSWORD)).headers.get('retry-after')).toBe('2');
    now += 1999;
    expect((await signIn('ada@example.com', PASSWORD)).headers.get('retry-after')).toBe('1');
    now += 1;
    expect((await signIn('ada@example.com', PASSWORD)).status).toBe(201);
    // A success starts the account's count again: four more failures are answered 401, not 429.
    for (let i = 0; i < 4; i++) expect((await signIn('ada@example.com', 'guess', '127.0.0.2')).status).toBe(401);
    expect((await signIn('ada@example.com', PASSWORD, '127.0.0.2')).status).toBe(201);
  });

  it('an address that fails 20 times is shut for every account, unknown or not; other addresses are not', async () => {
    let now = 1_000_000;
    p = await startTestPlatform({ signInThrottle: { now: () => now } });
    p.user('eve', 'human', { email: 'eve@example.com', passwordHash: await hashPassword(PASSWORD) });
    const signIn = (email: string, password: string, from: string) => p!.api('POST', '/session', { json: { email_address: email, password, name: 'x' }, from });
    // A spray: one guess at each of 20 addresses, none of them an account here.
    for (let i = 0; i < 20; i++) expect((await signIn(`user${i}@example.com`, 'guess', '127.0.0.4')).status).toBe(401);
    const shut = await signIn('eve@example.com', PASSWORD, '127.0.0.4');
    expect(shut.status).toBe(429);
    expect(shut.headers.get('retry-after')).toBe('1');
    expect((await signIn('eve@example.com', PASSWORD, '127.0.0.5')).status).toBe(201);
    // A success from the address does not clear it (an attacker's own account would).
    now += 1000;
    expect((await signIn('eve@example.com', PASSWORD, '127.0.0.4')).status).toBe(201);
    expect((await signIn('user0@example.com', 'guess', '127.0.0.4')).status).toBe(401);
    expect((await signIn('eve@example.com', PASSWORD, '127.0.0.4')).headers.get('retry-after')).toBe('2');
  });

  it('an email address with no account is throttled exactly as one with an account', async () => {
    p = await startTestPlatform({ signInThrottle: { now: () => 1_000_000 } });
    p.user('ada', 'human', { email: 'ada@example.com', passwordHash: await hashPassword(PASSWORD) });
    const answers = async (email: string, from: string) => {
      const seen: Array<[number, string | null]> = [];
      for (let i = 0; i < 7; i++) {
        const answer = await p!.api('POST', '/session', { json: { email_address: email, password: 'guess', name: 'x' }, from });
        seen.push([answer.status, answer.headers.get('retry-after')]);
      }
      return seen;
    };
    const known = await answers('ada@example.com', '127.0.0.6');
    expect(known).toEqual([...Array(5).fill([401, null]), [429, '1'], [429, '1']]);
    expect(await answers('nobody@example.com', '127.0.0.7')).toEqual(known);
  });
});
