// PATCH /users/password, the SDK's change_password: the current password authorizes the change
// (a token alone does not), the confirmation must match, a wrong current password costs the
// account a sign-in try (the throttle counts guesses by either route), and no session is signed out.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { hashPassword } from '../../src/platform/index.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';

let p: TestPlatform | undefined;
afterEach(async () => {
  await p?.close();
  p = undefined;
});

const OLD = 'correct horse battery';
const NEW = 'staple horse battery 2';

async function withAda(options: Parameters<typeof startTestPlatform>[0] = {}) {
  p = await startTestPlatform(options);
  const ada = p.user('ada', 'human', { email: 'ada@example.com', passwordHash: await hashPassword(OLD) });
  const change = (body: Record<string, unknown>, token = ada.token) => p!.api('PATCH', '/users/password', { token, json: body });
  const signIn = (password: string) => p!.api('POST', '/session', { json: { email_address: 'ada@example.com', password, name: 'check' } });
  return { ada, change, signIn };
}

describe('PATCH /users/password', () => {
  it('with the current password changes it: the old one stops signing in, the new one signs in, and no session is signed out', async () => {
    const { ada, change, signIn } = await withAda();
    const answer = await change({ current_password: OLD, password: NEW, password_confirmation: NEW });
    expect(answer.status).toBe(204);
    expect(answer.text).toBe('');
    expect((await signIn(OLD)).body.code).toBe('invalid_credentials');
    expect((await signIn(NEW)).status).toBe(201);
    expect((await p!.api('GET', '/users/dashboard', { token: ada.token })).status).toBe(200);
    // Stored as a scrypt hash, never as the password.
    const db = readFileSync(join(p!.home, 'platform.db'));
    expect(db.includes(NEW)).toBe(false);
  });

  it('refuses a wrong current password, a confirmation that differs, a short password and missing fields, and changes nothing', async () => {
    const { change, signIn } = await withAda();
    const wrong = await change({ current_password: 'not my password', password: NEW, password_confirmation: NEW });
    expect(wrong.status).toBe(422);
    expect(wrong.body).toMatchObject({ code: 'current_password_incorrect', detail: 'The current password is incorrect.', errors: { current_password: ['is incorrect'] } });

    const mismatch = await change({ current_password: OLD, password: NEW, password_confirmation: `${NEW}x` });
    expect(mismatch.status).toBe(422);
    expect(mismatch.body).toMatchObject({ code: 'password_confirmation_mismatch', errors: { password_confirmation: ["doesn't match Password"] } });

    const short = await change({ current_password: OLD, password: 'short', password_confirmation: 'short' });
    expect(short.body).toMatchObject({ code: 'validation_failed', errors: { password: ['must be at least 8 characters'] } });

    const missing = await change({ password: NEW });
    expect(missing.body).toMatchObject({ code: 'validation_failed', errors: { current_password: ["can't be blank"], password_confirmation: ["can't be blank"] } });

    expect((await signIn(OLD)).status).toBe(201);
    expect((await signIn(NEW)).body.code).toBe('invalid_credentials');
    expect((await p!.api('PATCH', '/users/password', { json: { current_password: OLD, password: NEW, password_confirmation: NEW } })).body.code).toBe('unauthorized');
  });

  it('a wrong current password counts against the account like a failed sign-in: both routes are shut, even to the right password', async () => {
    let now = 1_000_000;
    const { change, signIn } = await withAda({ signInThrottle: { accountFailures: 2, now: () => now } });
    for (let i = 0; i < 2; i++) expect((await change({ current_password: `guess ${i}!`, password: NEW, password_confirmation: NEW })).body.code).toBe('current_password_incorrect');
    const shut = await change({ current_password: OLD, password: NEW, password_confirmation: NEW });
    expect(shut.status).toBe(429);
    expect(shut.headers.get('retry-after')).toBe('1');
    expect((await signIn(OLD)).status).toBe(429);
    now += 1000;
    expect((await change({ current_password: OLD, password: NEW, password_confirmation: NEW })).status).toBe(204);
  });

  it('an account with no password (tokens only) is told there is none to change', async () => {
    p = await startTestPlatform();
    const nova = p.user('nova', 'ai');
    const answer = await p.api('PATCH', '/users/password', { token: nova.token, json: { current_password: 'anything at all', password: NEW, password_confirmation: NEW } });
    expect(answer.body).toMatchObject({ code: 'current_password_incorrect', detail: 'This account has no password (it signs in with tokens only), so there is none to change.' });
  });
});
