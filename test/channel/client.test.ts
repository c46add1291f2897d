// The BaseCradle client against the embedded platform: every operation of openapi.yaml called
// through its typed method, every answer the client read validated against the spec (the last
// test fails if an operation was never reached), the typed errors by code, idempotent creates,
// lazy pagination, and a file uploaded as multipart and downloaded by its URL.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BaseCradleClient,
  EndpointDisabledError,
  ForbiddenError,
  InvalidCursorError,
  InvalidFilterError,
  InvalidRequestError,
  NotAViewerError,
  NotFoundError,
  NotTimelineOwnerError,
  PayloadTooLargeError,
  RateLimitedError,
  TaskNotPendingError,
  TimelineLockedError,
  UnauthorizedError,
  ValidationError,
  ValidationFailedError,
} from '../../src/channel/index.ts';
import { type AddedUser, hashPassword } from '../../src/platform/index.ts';
import { checkedClient, newObservations, refusal, specOperations } from '../support/channel.ts';
import { OPENAPI_MISSING } from '../support/openapi.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';

// A 1×1 PNG.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
const LATER = () => new Date(Date.now() + 3_600_000);


describe.skipIf(OPENAPI_MISSING)('the BaseCradle client against the local platform', () => {
  const seen = newObservations();
  let p: TestPlatform;
  let ada: AddedUser;
  let nova: AddedUser;
  let eve: AddedUser;
  let asAda: BaseCradleClient;
  let asNova: BaseCradleClient;
  let asEve: BaseCradleClient;
  let room: string;

  beforeAll(async () => {
    p = await startTestPlatform({ maxAssetBytes: 64 * 1024 });
    ada = p.user('ada', 'human', { email: 'ada@example.com', passwordHash: await hashPassword('correct horse battery') });
    nova = p.user('nova', 'ai', { trust: ['ada'] });
    eve = p.user('eve', 'human');
    asAda = checkedClient(seen, { baseUrl: p.url, token: ada.token });
    asNova = checkedClient(seen, { baseUrl: p.url, token: nova.token });
    asEve = checkedClient(seen, { baseUrl: p.url, token: eve.token });
    room = (await asAda.timelines.create('Room')).uuid;
  });
  afterAll(() => p?.close());

  it('timelines: create, list, read with items, add and remove a participant', async () => {
    const made = await asAda.timelines.create('Planning');
    expect(made).toMatchObject({ name: 'Planning', locked: false, owner: { handle: 'ada' }, participants: [] });
    expect(await asNova.trust.grant(ada.uuid)).toMatchObject({ handle: 'ada', trust: { you_trust: true, trusts_you: true, mutual: true } });
    expect(await asAda.timelines.addParticipant(made.uuid, nova.uuid)).toMatchObject({ uuid: nova.uuid, handle: 'nova', kind: 'ai' });
    await asNova.messages.create(made.uuid, 'on it');
    const read = await asAda.timelines.get(made.uuid);
    expect(read.timeline.participants.map((u) => u.handle)).toEqual(['nova']);
    expect(read.items.map((item) => [item.type, item.content.uuid])).toEqual([['message', expect.any(String)]]);
    const names = (await asNova.timelines.list().toArray()).map((t) => t.name);
    expect(names).toEqual(['Planning']);
    await asAda.timelines.removeParticipant(made.uuid, nova.uuid);
    const gone = await refusal(asNova.timelines.get(made.uuid));
    expect(gone).toBeInstanceOf(NotAViewerError);
    expect(ForbiddenError.isInstance(gone)).toBe(true);
    expect(gone).toMatchObject({ status: 403, code: 'not_a_viewer', title: 'Not a viewer', instance: expect.any(String) });
    expect(gone.problem).toMatchObject({ status: 403, code: 'not_a_viewer', detail: gone.detail });
  });

  it('messages: a keyed create replayed returns the original record, even with another body', async () => {
    const key = randomUUID();
    const first = await asAda.messages.create(room, 'hello', { idempotencyKey: key });
    const again = await asAda.messages.create(room, 'hello, edited', { idempotencyKey: key });
    expect(again.content).toEqual({ uuid: first.content.uuid, body: 'hello' });
    const listed = await asAda.messages.list({ timeline: room }).toArray();
    expect(listed.map((m) => m.content.body)).toEqual(['hello']);
    expect((await asAda.messages.get(first.content.uuid)).content.body).toBe('hello');
    // Without a key each create is its own message.
    await asAda.messages.create(room, 'twice');
    await asAda.messages.create(room, 'twice');
    expect((await asAda.messages.list({ timeline: room }).toArray()).map((m) => m.content.body)).toEqual(['twice', 'twice', 'hello']);
  });

  it('assets: a multipart upload, replayed under its key, and its bytes downloaded by URL', async () => {
    const key = randomUUID();
    const asset = await asAda.assets.create(room, { data: PNG, filename: 'dot.png', contentType: 'image/png', description: 'a dot' }, { idempotencyKey: key });
    expect(asset.content).toMatchObject({ description: 'a dot', file: { filename: 'dot.png', byte_size: PNG.length, content_type: 'image/png' } });
    const replayed = await asAda.assets.create(room, { data: 'other bytes', filename: 'other.txt' }, { idempotencyKey: key });
    expect(replayed.content.uuid).toBe(asset.content.uuid);
    expect((await asAda.assets.list({ timeline: room }).toArray()).map((a) => a.content.uuid)).toEqual([asset.content.uuid]);
    const fetched = await asAda.assets.get(asset.content.uuid);
    const file = await asAda.assets.download(fetched);
    expect(Buffer.from(file.bytes).equals(PNG)).toBe(true);
    expect(file).toMatchObject({ contentType: 'image/png', filename: 'dot.png' });
    const text = await asAda.assets.create(room, { data: 'plain words', filename: 'notes.txt' });
    expect(Buffer.from((await asAda.assets.download(text.content.file!.url)).bytes).toString()).toBe('plain words');
    const big = await refusal(asAda.assets.create(room, { data: new Uint8Array(200 * 1024), filename: 'big.bin' }));
    expect(big).toBeInstanceOf(PayloadTooLargeError);
    expect(big).toMatchObject({ status: 413, code: 'payload_too_large' });
  });

  it('tasks: create (keyed), read, list by status, cancel; a second cancel is task_not_pending', async () => {
    const key = randomUUID();
    const task = await asAda.tasks.create(room, { instructions: 'check the build', activateAt: LATER() }, { idempotencyKey: key });
    expect(task.content).toMatchObject({ instructions: 'check the build', status: 'pending' });
    const replayed = await asAda.tasks.create(room, { instructions: 'something else', activateAt: LATER().toISOString() }, { idempotencyKey: key });
    expect(replayed.content.uuid).toBe(task.content.uuid);
    expect((await asAda.tasks.get(task.content.uuid)).content.instructions).toBe('check the build');
    expect((await asAda.tasks.list({ timeline: room, status: 'pending' }).toArray()).map((t) => t.content.uuid)).toEqual([task.content.uuid]);
    expect((await asAda.tasks.cancel(task.content.uuid)).content.status).toBe('cancelled');
    expect(await asAda.tasks.list({ timeline: room, status: 'pending' }).toArray()).toEqual([]);
    const twice = await refusal(asAda.tasks.cancel(task.content.uuid));
    expect(twice).toBeInstanceOf(TaskNotPendingError);
    expect(twice).toMatchObject({ status: 409, code: 'task_not_pending' });
  });

  it('webhook endpoints and events: create (keyed), deliver, list, disable → 410, enable, rotate → the old URL 404s', async () => {
    const key = randomUUID();
    const endpoint = await asAda.webhookEndpoints.create(room, 'CI', { idempotencyKey: key });
    expect(endpoint.content).toMatchObject({ description: 'CI', enabled: true, ingest_url: expect.stringMatching(/\/webhooks\//) });
    expect((await asAda.webhookEndpoints.create(room, 'CI again', { idempotencyKey: key })).content.uuid).toBe(endpoint.content.uuid);
    expect((await asAda.webhookEndpoints.list({ timeline: room }).toArray()).map((e) => e.content.uuid)).toEqual([endpoint.content.uuid]);
    expect((await asAda.webhookEndpoints.get(endpoint.content.uuid)).content.description).toBe('CI');

    await asAda.webhookEndpoints.deliver(endpoint.content.ingest_url, { payload: '{"event":"build","status":"green"}', headers: { 'X-Signature': 'abc' } });
    const [event] = await asAda.webhookEvents.list({ timeline: room, endpoint: endpoint.content.uuid }).toArray();
    expect(event!.content.payload).toBe('{"event":"build","status":"green"}');
    expect((await asAda.webhookEvents.get(event!.content.uuid)).webhook_endpoint.uuid).toBe(endpoint.content.uuid);

    expect((await asAda.webhookEndpoints.disable(endpoint.content.uuid)).content.enabled).toBe(false);
    const disabled = await refusal(asAda.webhookEndpoints.deliver(endpoint.content.ingest_url, { payload: '{}' }));
    expect(disabled).toBeInstanceOf(EndpointDisabledError);
    expect(disabled).toMatchObject({ status: 410, code: 'endpoint_disabled' });
    expect((await asAda.webhookEndpoints.enable(endpoint.content.uuid)).content.enabled).toBe(true);
    const rotated = await asAda.webhookEndpoints.rotate(endpoint.content.uuid);
    expect(rotated.content.uuid).toBe(endpoint.content.uuid);
    expect(rotated.content.ingest_url).not.toBe(endpoint.content.ingest_url);
    expect(await refusal(asAda.webhookEndpoints.deliver(endpoint.content.ingest_url, { payload: '{}' }))).toBeInstanceOf(NotFoundError);
    await asAda.webhookEndpoints.deliver(rotated.content.ingest_url, { payload: '{"n":2}' });
    expect(await asAda.webhookEvents.list({ timeline: room }).toArray()).toHaveLength(2);
  });

  it('users, trust and the dashboard (JSON and Markdown)', async () => {
    expect((await asAda.users.list()).map((u) => u.handle).sort()).toEqual(['eve', 'nova']);
    expect(await asAda.users.get(nova.uuid)).toMatchObject({ handle: 'nova', kind: 'ai', trust: { mutual: true } });
    const unknown = await refusal(asAda.users.get(randomUUID()));
    expect(unknown).toBeInstanceOf(NotFoundError);
    expect(unknown).toMatchObject({ status: 404, code: 'not_found' });
    expect((await asAda.trust.grant(eve.uuid)).trust).toEqual({ you_trust: true, trusts_you: false, mutual: false });
    await asAda.trust.revoke(eve.uuid);
    expect((await asAda.users.get(eve.uuid)).trust.you_trust).toBe(false);
    const dashboard = await asAda.dashboard.get();
    expect(dashboard.identity).toMatchObject({ uuid: ada.uuid, handle: 'ada' });
    expect(dashboard.interaction.messages_url).toBe(`${p.url}/messages`);
    expect(await asAda.dashboard.markdown()).toContain(`You are @ada`);
  });

  it('sessions: mint one with a password, list it as current, revoke one, sign out, revoke all', async () => {
    const mint = () => asAda.sessions.mint({ email: 'ada@example.com', password: 'correct horse battery', name: 'laptop' });
    const minted = await mint();
    expect(minted).toMatchObject({ token: expect.stringMatching(/^bc_uat_/), session: { name: 'laptop' }, start_here: `${p.url}/users/dashboard.md` });
    const laptop = checkedClient(seen, { baseUrl: p.url, token: minted.token });
    const mine = await laptop.sessions.list().toArray();
    const current = mine.find((s) => s.current)!;
    expect(current).toMatchObject({ name: 'laptop', kind: 'api' });
    await asAda.sessions.revoke(current.uuid);
    expect(await refusal(laptop.dashboard.get())).toBeInstanceOf(UnauthorizedError);
    expect(await refusal(asNova.sessions.revoke(current.uuid))).toBeInstanceOf(NotFoundError);

    const phone = checkedClient(seen, { baseUrl: p.url, token: (await mint()).token });
    await phone.sessions.signOut();
    expect(await refusal(phone.dashboard.get())).toBeInstanceOf(UnauthorizedError);
    const tablet = checkedClient(seen, { baseUrl: p.url, token: (await mint()).token });
    await tablet.sessions.revokeAll();
    const revoked = await refusal(tablet.users.list());
    expect(revoked).toBeInstanceOf(UnauthorizedError);
    expect(revoked).toMatchObject({ status: 401, code: 'unauthorized' });
    // Revoke-all took ada's original token too.
    expect(await refusal(asAda.dashboard.get())).toBeInstanceOf(UnauthorizedError);
    asAda = checkedClient(seen, { baseUrl: p.url, token: (await mint()).token });
  });

  it('refusals by code: 422 with its field errors, 403 timeline_locked and not_timeline_owner, 404 after delete, 400 cursor and filter', async () => {
    const blank = await refusal(asAda.messages.create(room, '   '));
    expect(blank).toBeInstanceOf(ValidationFailedError);
    expect(ValidationError.isInstance(blank)).toBe(true);
    expect(blank).toMatchObject({ status: 422, code: 'validation_failed' });
    expect((blank as ValidationFailedError).errors).toEqual({ body: ["can't be blank"] });
    expect(await refusal(asAda.timelines.create(''))).toMatchObject({ code: 'validation_failed', errors: { name: ["can't be blank"] } });

    const doomed = await asAda.timelines.create('Doomed');
    expect(await asAda.timelines.lock(doomed.uuid)).toEqual({ uuid: doomed.uuid, locked: true });
    const locked = await refusal(asAda.messages.create(doomed.uuid, 'too late'));
    expect(locked).toBeInstanceOf(TimelineLockedError);
    expect(locked).toMatchObject({ status: 403, code: 'timeline_locked' });
    expect(await refusal(asEve.timelines.delete(doomed.uuid))).toBeInstanceOf(ForbiddenError);
    await asAda.trust.grant(eve.uuid);
    await asEve.trust.grant(ada.uuid);
    const shared = await asAda.timelines.create('Shared');
    await asAda.timelines.addParticipant(shared.uuid, eve.uuid);
    const notOwner = await refusal(asEve.timelines.delete(shared.uuid));
    expect(notOwner).toBeInstanceOf(NotTimelineOwnerError);
    expect(notOwner).toMatchObject({ status: 403, code: 'not_timeline_owner' });
    await asAda.timelines.delete(doomed.uuid);
    expect(await refusal(asAda.timelines.get(doomed.uuid))).toMatchObject({ status: 404, code: 'not_found' });

    const cursor = await refusal(asAda.timelines.list().page('not-a-cursor'));
    expect(cursor).toBeInstanceOf(InvalidCursorError);
    expect(InvalidRequestError.isInstance(cursor)).toBe(true);
    expect(cursor).toMatchObject({ status: 400, code: 'invalid_cursor' });
    const filter = await refusal(asAda.messages.list({ timeline: 'room-one' }).toArray());
    expect(filter).toBeInstanceOf(InvalidFilterError);
    expect(filter).toMatchObject({ status: 400, code: 'invalid_filter' });
  });

  it('pagination is lazy: 120 messages in pages of 50 via ?before=, each page fetched only when needed, the filter on every page', async () => {
    const busy = (await asAda.timelines.create('Busy')).uuid;
    for (let i = 1; i <= 120; i++) await asAda.messages.create(busy, `m${i}`);
    const pageRequests = () => seen.requests.filter((r) => r.startsWith('GET /messages?') && r.includes(`timeline=${busy}`));
    const list = asAda.messages.list({ timeline: busy });
    const iterator = list[Symbol.asyncIterator]();
    expect(pageRequests()).toHaveLength(0);
    const firstFifty: string[] = [];
    for (let i = 0; i < 50; i++) firstFifty.push((await iterator.next()).value!.content.body);
    expect(firstFifty[0]).toBe('m120');
    expect(firstFifty[49]).toBe('m71');
    expect(pageRequests()).toHaveLength(1);
    expect((await iterator.next()).value!.content.body).toBe('m70');
    expect(pageRequests()).toHaveLength(2);
    expect(pageRequests()[1]).toMatch(/[?&]before=[0-9a-f-]{36}/);
    await iterator.return?.();

    const all = await list.toArray();
    expect(all.map((m) => m.content.body)).toEqual(Array.from({ length: 120 }, (_, i) => `m${120 - i}`));
    const pages = [];
    for await (const page of list.pages()) pages.push(page.items.length);
    expect(pages).toEqual([50, 50, 20]);
    expect((await list.toArray(3)).map((m) => m.content.body)).toEqual(['m120', 'm119', 'm118']);
  });

  it('429 rate_limited keeps Retry-After as retryAfter seconds', async () => {
    const limited = await startTestPlatform({ rateLimitPerMinute: 2 });
    try {
      const who = limited.user('rita', 'human');
      const client = checkedClient(seen, { baseUrl: limited.url, token: who.token });
      await client.users.list();
      await client.users.list();
      const error = await refusal(client.users.list());
      expect(error).toBeInstanceOf(RateLimitedError);
      expect(error).toMatchObject({ status: 429, code: 'rate_limited' });
      const retryAfter = (error as RateLimitedError).retryAfter!;
      expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
      expect(error.message).toContain('rate_limited');
    } finally {
      await limited.close();
    }
  });

  it('every operation of openapi.yaml was called through the client, and every answer it read matched the spec', () => {
    const missing = specOperations().filter((op) => !seen.operations.has(op));
    expect(missing).toEqual([]);
    expect(seen.violations).toEqual([]);
  });
});
