// Where the client's token comes from, and where it never goes: a token option or
// BASECRADLE_TOKEN; else one login per process from BASECRADLE_EMAIL + BASECRADLE_PASSWORD
// (+ BASECRADLE_SESSION_NAME), counted on the real platform; a clear error when nothing is set;
// and no token or password in any log line or error a user could read.
import { inspect } from 'node:util';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APIConnectionError, BaseCradleClient, InvalidCredentialsError, MissingCredentialsError, UnauthorizedError } from '../../src/channel/index.ts';
import { type AddedUser, hashPassword } from '../../src/platform/index.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { checkedClient, newObservations, refusal } from '../support/channel.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';

const PASSWORD = 'correct horse battery';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('credentials', () => {
  let p: TestPlatform;
  let ada: AddedUser;
  let bob: AddedUser;
  const seen = newObservations();
  const logger = createMemoryLogger('debug');
  const sessionsOf = async (user: AddedUser) => new BaseCradleClient({ env: {}, baseUrl: p.url, token: user.token }).sessions.list().toArray();
  const logins = () => seen.requests.filter((r) => r.startsWith('POST /session ')).length;

  beforeAll(async () => {
    p = await startTestPlatform();
    ada = p.user('ada', 'ai', { email: 'ada@example.com', passwordHash: await hashPassword(PASSWORD) });
    bob = p.user('bob', 'human', { email: 'bob@example.com', passwordHash: await hashPassword(PASSWORD) });
  });
  afterAll(() => p?.close());

  it('uses the token option, else BASECRADLE_TOKEN', async () => {
    expect((await checkedClient(seen, { baseUrl: p.url, token: ada.token, env: { BASECRADLE_TOKEN: bob.token } }).dashboard.get()).identity.handle).toBe('ada');
    expect((await checkedClient(seen, { baseUrl: p.url, env: { BASECRADLE_TOKEN: bob.token } }).dashboard.get()).identity.handle).toBe('bob');
    expect((await checkedClient(seen, { env: { BASECRADLE_BASE_URL: p.url, BASECRADLE_TOKEN: bob.token } }).dashboard.get()).identity.handle).toBe('bob');
  });

  it('mints one token per process from email and password, however many clients and requests there are', async () => {
    const env = { BASECRADLE_EMAIL: 'ada@example.com', BASECRADLE_PASSWORD: PASSWORD, BASECRADLE_SESSION_NAME: 'wake on box-1' };
    const first = checkedClient(seen, { baseUrl: p.url, env, logger });
    const second = checkedClient(seen, { baseUrl: p.url, env, logger });
    const before = logins();
    const answers = await Promise.all([first.dashboard.get(), second.dashboard.get(), first.users.list(), second.timelines.list().toArray()]);
    expect(answers[0].identity.handle).toBe('ada');
    expect(answers[1].identity.handle).toBe('ada');
    expect(logins() - before).toBe(1);
    await checkedClient(seen, { baseUrl: p.url, env, logger }).messages.list().toArray();
    expect(logins() - before).toBe(1);
    // What the account shows: its first token, and one session named as the variable says.
    expect((await sessionsOf(ada)).map((s) => s.name).sort()).toEqual(['acx platform user add', 'wake on box-1']);
  });

  it('a wrong password is invalid_credentials, is not cached, and is never handed a token minted with the right one', async () => {
    const wrong = { BASECRADLE_EMAIL: 'bob@example.com', BASECRADLE_PASSWORD: 'not the password' };
    const refused = await refusal(checkedClient(seen, { baseUrl: p.url, env: wrong }).users.list());
    expect(refused).toBeInstanceOf(InvalidCredentialsError);
    expect(refused).toMatchObject({ status: 401, code: 'invalid_credentials' });
    expect(refused.hint).toContain('BASECRADLE_PASSWORD');
    const right = { BASECRADLE_EMAIL: 'bob@example.com', BASECRADLE_PASSWORD: PASSWORD };
    expect((await checkedClient(seen, { baseUrl: p.url, env: right }).dashboard.get()).identity.handle).toBe('bob');
    expect(await refusal(checkedClient(seen, { baseUrl: p.url, env: wrong }).users.list())).toBeInstanceOf(InvalidCredentialsError);
    // The default session name, when BASECRADLE_SESSION_NAME is not set.
    expect((await sessionsOf(bob)).map((s) => s.name).sort()).toEqual(['acx', 'acx platform user add']);
  });

  it('with nothing set, the first request that needs a token fails naming the variables, and nothing is sent', async () => {
    const before = seen.requests.length;
    const none = await refusal(checkedClient(seen, { baseUrl: p.url, env: {} }).users.list());
    expect(none).toBeInstanceOf(MissingCredentialsError);
    expect(none.message).toBe('No BaseCradle credentials: set BASECRADLE_TOKEN, or BASECRADLE_EMAIL and BASECRADLE_PASSWORD (none of them is set).');
    expect(none.hint).toContain('acx platform user add');
    const half = await refusal(checkedClient(seen, { baseUrl: p.url, env: { BASECRADLE_EMAIL: 'ada@example.com' } }).users.list());
    expect(half.message).toContain('BASECRADLE_EMAIL is set but BASECRADLE_PASSWORD is not');
    expect(seen.requests.length).toBe(before);
  });

  it('no token or password appears in a log line or in any error a user reads', async () => {
    const lines = createMemoryLogger('debug');
    const env = { BASECRADLE_EMAIL: 'bob@example.com', BASECRADLE_PASSWORD: PASSWORD, BASECRADLE_SESSION_NAME: 'leak check' };
    const viaLogin = checkedClient(seen, { baseUrl: p.url, env, logger: lines });
    await viaLogin.dashboard.get();
    const minted = await viaLogin.transport.token();
    const errors: unknown[] = [];
    errors.push(await refusal(viaLogin.timelines.get('01a233da-e98e-72b6-b5fb-9028834b425b')));
    const revokedToken = (await checkedClient(seen, { baseUrl: p.url, token: bob.token }).sessions.mint({ email: 'bob@example.com', password: PASSWORD, name: 'soon revoked' })).token;
    const revoked = checkedClient(seen, { baseUrl: p.url, token: revokedToken, logger: lines });
    await revoked.sessions.signOut();
    const unauthorized = await refusal(revoked.users.list());
    expect(unauthorized).toBeInstanceOf(UnauthorizedError);
    errors.push(unauthorized);
    const closed = checkedClient(seen, { baseUrl: `http://127.0.0.1:${await freePort()}`, token: bob.token, logger: lines, maxRetries: 1, retryDelayMs: () => 0 });
    const unreachable = await refusal(closed.users.list());
    expect(unreachable).toBeInstanceOf(APIConnectionError);
    errors.push(unreachable);
    errors.push(await refusal(checkedClient(seen, { baseUrl: p.url, env: { BASECRADLE_EMAIL: 'bob@example.com', BASECRADLE_PASSWORD: 'wrong but secret' }, logger: lines }).users.list()));

    const secrets = [minted, bob.token, revokedToken, PASSWORD, 'wrong but secret'];
    const readable = [...lines.lines, ...errors.map((error) => inspect(error, { depth: 8 })), ...errors.map((error) => JSON.stringify(error))];
    expect(lines.lines.length).toBeGreaterThan(3);
    for (const text of readable) for (const secret of secrets) expect(text.includes(secret), `${secret.slice(0, 8)}… in: ${text.slice(0, 200)}`).toBe(false);
  });
});
