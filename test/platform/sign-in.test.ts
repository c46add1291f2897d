// POST /session under attack: an unknown address and a wrong password are answered alike after
// the same KDF work, and a sign-in waiting on its KDF holds up no other request.
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
});
