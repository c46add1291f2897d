// The client's wire behaviour against real loopback servers: what is sent again after a
// transport failure (a GET and a keyed create, never an unkeyed POST, never after an HTTP error
// answer), bounded retries, timeouts, the base URL, errors for answers that are not problem
// documents, and error checks that work across two copies of the module.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  APIConnectionError,
  BaseCradleClient,
  BaseCradleError,
  DEFAULT_BASE_URL,
  ERROR_CLASS_BY_CODE,
  ForbiddenError,
  NotAViewerError,
  NotFoundError,
  PROBLEM_CODES,
  retryDelayMs,
} from '../../src/channel/index.ts';
import type { AddedUser } from '../../src/platform/index.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { checkedClient, newObservations, refusal } from '../support/channel.ts';
import { startCannedServer, startFlakyProxy, type FlakyProxy } from '../support/flaky-proxy.ts';
import { PROBLEM_CODES as ORACLE_CODES } from '../support/openapi.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';

/** Every answer the client read in this file, checked against openapi.yaml. */
const seen = newObservations();


describe('retries after a transport failure', () => {
  let p: TestPlatform;
  let proxy: FlakyProxy;
  let ada: AddedUser;
  let room: string;
  const logger = createMemoryLogger('debug');
  const waits: number[] = [];
  /** Through the flaky proxy; waits are recorded instead of slept (the default delays are tested on their own). */
  const client = (more: Partial<ConstructorParameters<typeof BaseCradleClient>[0]> = {}) =>
    checkedClient(seen, { baseUrl: proxy.url, token: ada.token, logger, retryDelayMs: (n) => (waits.push(n), 0), ...more });
  const direct = () => checkedClient(seen, { baseUrl: p.url, token: ada.token });
  const arrivals = (what: string) => proxy.arrivals.filter((a) => a === what).length;

  beforeAll(async () => {
    p = await startTestPlatform();
    proxy = await startFlakyProxy(p.url);
    ada = p.user('ada', 'human');
    room = (await direct().timelines.create('Room')).uuid;
  });
  afterAll(async () => {
    await proxy?.close();
    await p?.close();
  });

  it('a GET whose connection was cut is sent again and succeeds', async () => {
    waits.length = 0;
    proxy.fail(1, 'drop-before');
    expect((await client().dashboard.get()).identity.handle).toBe('ada');
    expect(arrivals('GET /users/dashboard')).toBe(2);
    expect(waits).toEqual([0]);
    expect(logger.lines.some((line) => line.includes('basecradle retry') && line.includes('GET /users/dashboard'))).toBe(true);
  });

  it('a keyed create whose answer was lost is sent again under its key: one message, and the client gets it', async () => {
    proxy.fail(1, 'drop-after');
    const sent = await client().messages.create(room, 'exactly once', { idempotencyKey: randomUUID() });
    const path = `POST /timelines/${room}/messages`;
    expect(arrivals(path)).toBe(2);
    const onPlatform = await direct().messages.list({ timeline: room }).toArray();
    expect(onPlatform.map((m) => [m.content.uuid, m.content.body])).toEqual([[sent.content.uuid, 'exactly once']]);
  });

  it('a keyed multipart upload is sent again whole after a cut connection', async () => {
    proxy.fail(1, 'drop-before');
    const asset = await client().assets.create(room, { data: 'file body', filename: 'a.txt' }, { idempotencyKey: randomUUID() });
    expect(arrivals(`POST /timelines/${room}/assets`)).toBe(2);
    expect(Buffer.from((await direct().assets.download(asset)).bytes).toString()).toBe('file body');
  });

  it('an unkeyed POST is never sent again: the connection error reaches the caller after one attempt', async () => {
    const before = arrivals('POST /timelines');
    proxy.fail(1, 'drop-before');
    const error = await refusal(client().timelines.create('Never twice'));
    expect(error).toBeInstanceOf(APIConnectionError);
    expect(error.message).toMatch(/^No answer from BaseCradle for POST \/timelines after 1 attempt: /);
    expect(error.hint).toContain('never sent twice');
    expect(arrivals('POST /timelines')).toBe(before + 1);

    // Its answer lost, an unkeyed message was still made once; sending it again would have made two.
    proxy.fail(1, 'drop-after');
    expect(await refusal(client().messages.create(room, 'unkeyed'))).toBeInstanceOf(APIConnectionError);
    const bodies = (await direct().messages.list({ timeline: room }).toArray()).map((m) => m.content.body);
    expect(bodies.filter((b) => b === 'unkeyed')).toHaveLength(1);
  });

  it('a DELETE is not sent again either', async () => {
    const doomed = await direct().timelines.create('Doomed');
    proxy.fail(1, 'drop-before');
    expect(await refusal(client().timelines.delete(doomed.uuid))).toBeInstanceOf(APIConnectionError);
    expect(arrivals(`DELETE /timelines/${doomed.uuid}`)).toBe(1);
  });

  it('retries are bounded by maxRetries, with the backoff asked for each', async () => {
    waits.length = 0;
    proxy.fail(4, 'drop-before');
    const error = await refusal(client({ maxRetries: 2 }).users.list());
    expect(error).toBeInstanceOf(APIConnectionError);
    expect(error.message).toMatch(/^No answer from BaseCradle for GET \/users after 3 attempts: /);
    expect(waits).toEqual([0, 1]);
    proxy.fail(0, 'drop-before');
    // The fourth failure is still queued: the next request absorbs it, then passes.
    expect(await client({ maxRetries: 0 }).users.list().catch((e: unknown) => e)).toBeInstanceOf(APIConnectionError);
    expect(await client({ maxRetries: 0 }).users.list()).toEqual([]);
  });

  it('an attempt that gets no answer times out, and a GET is tried again', async () => {
    proxy.fail(2, 'hang');
    const before = arrivals('GET /timelines');
    const error = await refusal(client({ timeoutMs: 200, maxRetries: 1 }).timelines.list().toArray());
    expect(error).toBeInstanceOf(APIConnectionError);
    expect(error.message).toContain('the attempt timed out');
    expect(arrivals('GET /timelines')).toBe(before + 2);
  });

  it('a caller’s abort ends the request at once: no retry, and the abort itself reaches the caller', async () => {
    proxy.fail(1, 'hang');
    const before = arrivals('GET /users');
    const controller = new AbortController();
    const pending = client({ timeoutMs: 60_000 }).users.list({ signal: controller.signal });
    while (arrivals('GET /users') === before) await new Promise((resolve) => setTimeout(resolve, 10));
    controller.abort();
    const error = await pending.catch((e: unknown) => e);
    expect(APIConnectionError.isInstance(error)).toBe(false);
    expect((error as Error).name).toBe('AbortError');
    expect(arrivals('GET /users')).toBe(before + 1);
  });

  it('an HTTP error answer is never retried', async () => {
    const stranger = p.user('stranger', 'human');
    const before = arrivals(`GET /timelines/${room}`);
    const error = await refusal(client({ token: stranger.token }).timelines.get(room));
    expect(error).toBeInstanceOf(NotAViewerError);
    expect(arrivals(`GET /timelines/${room}`)).toBe(before + 1);
  });

  it('waits min(0.5·2ⁿ, 8) s before retry n by default', () => {
    expect([0, 1, 2, 3, 4, 5, 10].map(retryDelayMs)).toEqual([500, 1000, 2000, 4000, 8000, 8000, 8000]);
  });

  it('without a retryDelayMs option the client waits 0.5 s before its first retry', async () => {
    proxy.fail(1, 'drop-before');
    const lines = createMemoryLogger('debug');
    const defaults = checkedClient(seen, { baseUrl: proxy.url, token: ada.token, maxRetries: 1, logger: lines });
    await defaults.users.list();
    expect(lines.lines.filter((line) => line.includes('basecradle retry')).map((line) => /delay_ms=(\d+)/.exec(line)?.[1])).toEqual(['500']);
  });
});

describe('answers that are not the platform’s problem documents', () => {
  it('an unknown code, a non-string code and a non-problem body give a plain BaseCradleError that says what came back', async () => {
    const answers = [
      { status: 418, headers: { 'content-type': 'application/problem+json' }, body: JSON.stringify({ type: 'x', title: 'Teapot', status: 418, code: 'brand_new', detail: 'Short and stout.', instance: 'req-1' }) },
      { status: 400, headers: { 'content-type': 'application/problem+json' }, body: JSON.stringify({ title: 'Odd', code: 7, detail: 'A number for a code.' }) },
      { status: 502, headers: { 'content-type': 'text/html' }, body: '<h1>Bad Gateway</h1>' },
      // The right shape under the wrong type is not a problem document either.
      { status: 404, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: 'not_found', detail: 'json, not problem+json' }) },
    ];
    let next = 0;
    const server = await startCannedServer(() => answers[next++]!);
    try {
      const client = new BaseCradleClient({ env: {}, baseUrl: server.url, token: 'bc_uat_canned-token-0000' });
      const teapot = await refusal(client.users.list());
      expect(teapot.constructor).toBe(BaseCradleError);
      expect(teapot).toMatchObject({ status: 418, code: 'basecradle', title: 'Teapot', detail: 'Short and stout.', instance: 'req-1', problem: { code: 'brand_new' } });
      expect(teapot.message).toBe('BaseCradle refused GET /users: 418 brand_new — Short and stout.');
      const numeric = await refusal(client.users.list());
      expect(numeric.constructor).toBe(BaseCradleError);
      expect(numeric).toMatchObject({ status: 400, code: 'basecradle', detail: 'A number for a code.' });
      const html = await refusal(client.users.list());
      expect(html.constructor).toBe(BaseCradleError);
      expect(html).toMatchObject({ status: 502, code: 'basecradle', problem: undefined });
      expect(html.message).toBe('BaseCradle refused GET /users: 502 — <h1>Bad Gateway</h1>');
      const plainJson = await refusal(client.users.list());
      expect(plainJson.constructor).toBe(BaseCradleError);
      expect(NotFoundError.isInstance(plainJson)).toBe(false);
      expect(server.requests).toHaveLength(4);
    } finally {
      await server.close();
    }
  });

  it('a file URL on another origin is fetched without the token', async () => {
    const files = await startCannedServer(() => ({ status: 200, headers: { 'content-type': 'text/plain' }, body: 'elsewhere' }));
    const platform = await startCannedServer(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"users":[]}' }));
    try {
      const client = new BaseCradleClient({ env: {}, baseUrl: platform.url, token: 'bc_uat_do-not-leak-000' });
      expect(Buffer.from((await client.assets.download(`${files.url}/f/x.txt`)).bytes).toString()).toBe('elsewhere');
      expect(files.requests[0]!.authorization).toBeUndefined();
      await client.users.list();
      expect(platform.requests[0]!.authorization).toBe('Bearer bc_uat_do-not-leak-000');
    } finally {
      await files.close();
      await platform.close();
    }
  });
});

describe('configuration', () => {
  it('the base URL comes from the option, else BASECRADLE_BASE_URL, else the public platform', () => {
    expect(new BaseCradleClient({ env: {}, baseUrl: 'http://127.0.0.1:4700/' }).baseUrl).toBe('http://127.0.0.1:4700');
    expect(new BaseCradleClient({ env: { BASECRADLE_BASE_URL: 'http://127.0.0.1:4800' } }).baseUrl).toBe('http://127.0.0.1:4800');
    expect(new BaseCradleClient({ env: {} }).baseUrl).toBe(DEFAULT_BASE_URL);
    expect(new BaseCradleClient({ env: { BASECRADLE_BASE_URL: ' ' } }).baseUrl).toBe(DEFAULT_BASE_URL);
    expect(DEFAULT_BASE_URL).toBe('https://basecradle.com');
  });

  it('a base URL that is not http(s) is refused with what to set', () => {
    let caught: unknown;
    try {
      new BaseCradleClient({ env: { BASECRADLE_BASE_URL: 'basecradle.com' } });
    } catch (error) {
      caught = error;
    }
    expect(BaseCradleError.isInstance(caught)).toBe(true);
    expect((caught as BaseCradleError).message).toBe('The BaseCradle base URL must be an http(s) URL, not "basecradle.com".');
    expect((caught as BaseCradleError).hint).toContain('BASECRADLE_BASE_URL');
  });

  it('an empty id is refused before any request (it would name another route)', async () => {
    const client = new BaseCradleClient({ env: {}, baseUrl: 'http://127.0.0.1:9', token: 'bc_uat_unused-000000' });
    const error = await refusal(client.messages.get(''));
    expect(error).toMatchObject({ code: 'invalid_argument', message: 'A message uuid is required (got "").' });
  });
});

describe('error codes', () => {
  it('the client knows exactly the platform’s problem codes, each with its own class, and a misspelled code does not compile', () => {
    expect([...PROBLEM_CODES].sort()).toEqual([...ORACLE_CODES].sort());
    expect(Object.keys(ERROR_CLASS_BY_CODE).sort()).toEqual([...PROBLEM_CODES].sort());
    for (const [code, Class] of Object.entries(ERROR_CLASS_BY_CODE)) expect(Class.name.replace(/Error$/, '').replace(/[A-Z]/g, (c, i) => (i ? '_' : '') + c.toLowerCase())).toBe(code);
    // A failed check narrows to the other classes (the classes are nominal), not to never: this compiles.
    const statusOf = (error: BaseCradleError): number | undefined => (NotFoundError.isInstance(error) ? 404 : APIConnectionError.isInstance(error) ? 0 : error.status);
    expect(statusOf(new NotAViewerError({ message: 'x', status: 403 }))).toBe(403);
    // @ts-expect-error 'not_fuond' is not a BaseCradle code.
    expect(new BaseCradleError({ message: 'typo', code: 'not_fuond' }).code).toBe('not_fuond');
  });
});

describe('error checks across two copies of the module', () => {
  it('isInstance() recognises an error made by another copy, where instanceof cannot', async () => {
    // The query makes vite load a second, separate copy of the module, as a second install would be.
    // @ts-expect-error TypeScript cannot resolve a specifier with a query.
    const other = (await import('../../src/channel/errors.ts?copy=two')) as typeof import('../../src/channel/errors.ts');
    expect(other.NotFoundError).not.toBe(NotFoundError);
    const foreign = new other.NotAViewerError({ message: 'from the other copy', status: 403, code: 'not_a_viewer' });
    expect(foreign instanceof NotAViewerError).toBe(false);
    expect(NotAViewerError.isInstance(foreign)).toBe(true);
    expect(ForbiddenError.isInstance(foreign)).toBe(true);
    expect(BaseCradleError.isInstance(foreign)).toBe(true);
    expect(NotFoundError.isInstance(foreign)).toBe(false);
    expect(other.ForbiddenError.isInstance(new NotAViewerError({ message: 'here', status: 403 }))).toBe(true);
    expect(BaseCradleError.isInstance(new Error('plain'))).toBe(false);
    expect(BaseCradleError.isInstance(undefined)).toBe(false);
  });
});

describe('the answers read in this file', () => {
  it('all matched openapi.yaml', () => {
    expect(seen.requests.length).toBeGreaterThan(0);
    expect(seen.violations).toEqual([]);
  });
});
