// Conformance of the embedded platform to the BaseCradle API (openapi.yaml): every documented
// response of every path and method is produced here against a real server, every response is
// validated against the spec's schema for it (test/support/platform.ts does that for every call),
// and the last test fails if any documented path + method + status was never reached.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AddedUser, hashPassword, suspendUser } from '../../src/platform/index.ts';
import { OPENAPI_MISSING, openApiSpec } from '../support/openapi.ts';
import { reached, sharedTimeline, startTestPlatform, type TestPlatform, violations } from '../support/platform.ts';

describe.skipIf(OPENAPI_MISSING)(`the local platform against openapi.yaml${OPENAPI_MISSING ? ` (skipped: ${OPENAPI_MISSING})` : ''}`, () => {
  let p: TestPlatform;
  let ada: AddedUser;
  let nova: AddedUser;
  let eve: AddedUser;
  let timeline: string;

  beforeAll(async () => {
    p = await startTestPlatform();
    ada = p.user('ada', 'human', { email: 'ada@example.com', passwordHash: await hashPassword('correct horse battery') });
    nova = p.user('nova', 'ai', { trust: ['ada'] });
    eve = p.user('eve', 'human', { email: 'eve@example.com', passwordHash: await hashPassword('correct horse battery') });
    timeline = await sharedTimeline(p, ada, nova);
  });
  afterAll(() => p?.close());

  it('sessions: mint with a password, refuse a wrong one and a suspended account, list, revoke one, revoke all', async () => {
    const minted = await p.api('POST', '/session', { json: { email_address: 'ada@example.com', password: 'correct horse battery', name: 'laptop' } });
    expect(minted.status).toBe(201);
    expect(minted.body.token).toMatch(/^bc_uat_[A-Za-z0-9]{32}$/);
    expect(minted.body.session).toMatchObject({ name: 'laptop', kind: 'api', current: true });
    expect(minted.body.start_here).toBe(`${p.url}/users/dashboard.md`);
    expect((await p.api('POST', '/session', { json: { email_address: 'ada@example.com', password: 'wrong password', name: 'x' } })).body.code).toBe('invalid_credentials');
    suspendUser(p.home, 'eve');
    expect((await p.api('POST', '/session', { json: { email_address: 'eve@example.com', password: 'correct horse battery', name: 'x' } })).body.code).toBe('account_suspended');
    suspendUser(p.home, 'eve', false);

    const listed = await p.api('GET', '/users/sessions', { token: minted.body.token });
    expect(listed.status).toBe(200);
    expect(listed.body.sessions.filter((s: { current: boolean }) => s.current)).toHaveLength(1);
    expect((await p.api('GET', '/users/sessions')).body.code).toBe('unauthorized');
    // Another user's session is invisible: 404, as if it did not exist.
    expect((await p.api('DELETE', `/users/sessions/${minted.body.session.uuid}`, { token: nova.token })).body.code).toBe('not_found');
    expect((await p.api('DELETE', `/users/sessions/${minted.body.session.uuid}`, { token: ada.token })).status).toBe(204);
    expect((await p.api('GET', '/users/sessions', { token: minted.body.token })).status).toBe(401);

    const second = await p.api('POST', '/session', { json: { email_address: 'eve@example.com', password: 'correct horse battery', name: 'one' } });
    expect((await p.api('DELETE', '/session', { token: second.body.token })).status).toBe(204);
    expect((await p.api('GET', '/users/dashboard', { token: second.body.token })).status).toBe(401);
    const third = await p.api('POST', '/session', { json: { email_address: 'eve@example.com', password: 'correct horse battery', name: 'two' } });
    expect((await p.api('DELETE', '/users/sessions', { token: third.body.token })).status).toBe(204);
    expect((await p.api('GET', '/users/dashboard', { token: third.body.token })).status).toBe(401);
  });

  it('users, trust and the dashboard', async () => {
    const users = await p.api('GET', '/users', { token: ada.token });
    expect(users.body.users.map((u: { handle: string }) => u.handle).sort()).toEqual(['eve', 'nova']);
    expect((await p.api('GET', `/users/${nova.uuid}`, { token: ada.token })).body.user).toMatchObject({ handle: 'nova', trust: { mutual: true } });
    expect((await p.api('GET', '/users/019e7750-66ee-7e50-9e54-3bf8c3d6a8f1', { token: ada.token })).body.code).toBe('not_found');
    expect((await p.api('POST', `/users/${eve.uuid}/trust`, { token: ada.token, json: {} })).body.user.trust).toEqual({ you_trust: true, trusts_you: false, mutual: false });
    expect((await p.api('DELETE', `/users/${eve.uuid}/trust`, { token: ada.token })).status).toBe(204);
    const dashboard = await p.api('GET', '/users/dashboard', { token: nova.token });
    expect(dashboard.body.identity).toMatchObject({ handle: 'nova', kind: 'ai' });
    expect(dashboard.body.interaction.timelines.count).toBe(1);
  });

  it('timelines: list (and a bad cursor), create (and no name), show (and not a viewer, unknown), lock, delete (and not the owner)', async () => {
    expect((await p.api('GET', '/timelines', { token: ada.token })).body.timelines.map((t: { uuid: string }) => t.uuid)).toContain(timeline);
    expect((await p.api('GET', '/timelines?before=not-a-cursor', { token: ada.token })).body.code).toBe('invalid_cursor');
    expect((await p.api('POST', '/timelines', { token: ada.token, json: { timeline: { name: '' } } })).body.errors).toEqual({ name: ["can't be blank"] });
    const spare = (await p.api('POST', '/timelines', { token: ada.token, json: { timeline: { name: 'Spare' } } })).body.timeline.uuid;
    expect((await p.api('GET', `/timelines/${spare}`, { token: nova.token })).body.code).toBe('not_a_viewer');
    expect((await p.api('GET', '/timelines/019e7750-66ee-7f53-829f-13a8a710b6da', { token: ada.token })).body.code).toBe('not_found');
    const added = await p.api('POST', `/timelines/${spare}/participations`, { token: ada.token, json: { user_id: nova.uuid } });
    expect(added.body).toMatchObject({ uuid: nova.uuid, handle: 'nova' });
    expect((await p.api('POST', `/timelines/${spare}/participations`, { token: nova.token, json: { user_id: ada.uuid } })).body.code).toBe('not_timeline_owner');
    expect((await p.api('DELETE', `/timelines/${spare}`, { token: nova.token })).body.code).toBe('not_timeline_owner');
    expect((await p.api('DELETE', `/timelines/${spare}/participations/${nova.uuid}`, { token: ada.token })).status).toBe(204);
    expect((await p.api('POST', `/timelines/${spare}/lock`, { token: ada.token, json: {} })).body).toEqual({ uuid: spare, locked: true });
    expect((await p.api('POST', `/timelines/${spare}/messages`, { token: ada.token, json: { message: { body: 'late' } } })).body.code).toBe('timeline_locked');
    expect((await p.api('DELETE', `/timelines/${spare}`, { token: ada.token })).status).toBe(204);
  });

  it('messages, assets and tasks: create, list, show; a message with no body; a task cancelled twice', async () => {
    expect((await p.api('POST', `/timelines/${timeline}/messages`, { token: ada.token, json: { message: { body: '' } } })).body.errors).toEqual({ body: ["can't be blank"] });
    const message = (await p.api('POST', `/timelines/${timeline}/messages`, { token: ada.token, json: { message: { body: 'hello @nova' } } })).body.message;
    expect((await p.api('GET', `/messages?timeline=${timeline}`, { token: nova.token })).body.messages[0].content.uuid).toBe(message.content.uuid);
    expect((await p.api('GET', `/messages/${message.content.uuid}`, { token: nova.token })).body.message.content.body).toBe('hello @nova');

    const form = new FormData();
    form.append('asset[file]', new Blob(['a,b\n1,2\n'], { type: 'text/csv' }), 'table.csv');
    form.append('asset[description]', 'a table');
    const asset = (await p.api('POST', `/timelines/${timeline}/assets`, { token: nova.token, form })).body.asset;
    expect(asset.content.file).toMatchObject({ filename: 'table.csv', byte_size: 8, content_type: 'text/csv' });
    expect((await p.api('GET', '/assets', { token: ada.token })).body.assets[0].content.uuid).toBe(asset.content.uuid);
    expect((await p.api('GET', `/assets/${asset.content.uuid}`, { token: ada.token })).body.asset.content.description).toBe('a table');

    const task = (await p.api('POST', `/timelines/${timeline}/tasks`, { token: nova.token, json: { task: { instructions: 'check in', activate_at: '2099-01-01T00:00:00Z' } } })).body.task;
    expect(task.content.status).toBe('pending');
    expect((await p.api('GET', '/tasks?status=pending', { token: ada.token })).body.tasks[0].content.uuid).toBe(task.content.uuid);
    expect((await p.api('GET', `/tasks/${task.content.uuid}`, { token: ada.token })).body.task.content.activate_at).toBe('2099-01-01T00:00:00.000Z');
    expect((await p.api('POST', `/tasks/${task.content.uuid}/cancellation`, { token: nova.token })).body.task.content.status).toBe('cancelled');
    expect((await p.api('POST', `/tasks/${task.content.uuid}/cancellation`, { token: nova.token })).body.code).toBe('task_not_pending');
  });

  it('webhook endpoints and events: create, list, show, disable (410), enable, rotate; the ingest records events', async () => {
    const endpoint = (await p.api('POST', `/timelines/${timeline}/webhook_endpoints`, { token: ada.token, json: { webhook_endpoint: { description: 'CI' } } })).body.webhook_endpoint;
    const ingest = new URL(endpoint.content.ingest_url).pathname;
    expect((await p.api('GET', '/webhook_endpoints', { token: nova.token })).body.webhook_endpoints[0].content.uuid).toBe(endpoint.content.uuid);
    expect((await p.api('GET', `/webhook_endpoints/${endpoint.content.uuid}`, { token: nova.token })).body.webhook_endpoint.content.enabled).toBe(true);

    const delivered = await p.api('POST', ingest, { json: { event: 'deploy', status: 'ok' }, headers: { 'x-github-delivery': 'abc' } });
    expect(delivered.status).toBe(201);
    const events = (await p.api('GET', `/webhook_events?timeline=${timeline}`, { token: nova.token })).body.webhook_events;
    expect(events[0].content).toMatchObject({ payload: '{"event":"deploy","status":"ok"}', content_type: 'application/json' });
    expect(events[0].content.headers['X-Github-Delivery']).toBe('abc');
    expect((await p.api('GET', `/webhook_events/${events[0].content.uuid}`, { token: ada.token })).body.webhook_event.webhook_endpoint.uuid).toBe(endpoint.content.uuid);

    expect((await p.api('DELETE', `/webhook_endpoints/${endpoint.content.uuid}/enablement`, { token: ada.token })).body.webhook_endpoint.content.enabled).toBe(false);
    expect((await p.api('POST', ingest, { json: { event: 'x', status: 'y' } })).body.code).toBe('endpoint_disabled');
    expect((await p.api('POST', `/webhook_endpoints/${endpoint.content.uuid}/enablement`, { token: ada.token, json: {} })).body.webhook_endpoint.content.enabled).toBe(true);
    const rotated = (await p.api('POST', `/webhook_endpoints/${endpoint.content.uuid}/rotation`, { token: ada.token, json: {} })).body.webhook_endpoint;
    expect(rotated.content.uuid).toBe(endpoint.content.uuid);
    expect(rotated.content.ingest_url).not.toBe(endpoint.content.ingest_url);
    expect((await p.api('POST', ingest, { json: { event: 'x', status: 'y' } })).body.code).toBe('not_found');

    const locked = (await p.api('POST', '/timelines', { token: ada.token, json: { timeline: { name: 'Frozen' } } })).body.timeline.uuid;
    const frozen = (await p.api('POST', `/timelines/${locked}/webhook_endpoints`, { token: ada.token, json: { webhook_endpoint: { description: 'x' } } })).body.webhook_endpoint;
    await p.api('POST', `/timelines/${locked}/lock`, { token: ada.token, json: {} });
    expect((await p.api('POST', new URL(frozen.content.ingest_url).pathname, { json: { event: 'x', status: 'y' } })).body.code).toBe('timeline_locked');
  });

  it("a full page has a next_cursor that pages back, and a timeline's items hold every kind", async () => {
    const room = (await p.api('POST', '/timelines', { token: ada.token, json: { timeline: { name: 'Busy' } } })).body.timeline.uuid;
    for (let i = 1; i <= 52; i++) await p.api('POST', `/timelines/${room}/messages`, { token: ada.token, json: { message: { body: `m${i}` } } });
    const first = await p.api('GET', `/messages?timeline=${room}`, { token: ada.token });
    expect(first.body.messages).toHaveLength(50);
    expect(first.body.messages[0].content.body).toBe('m52');
    const second = await p.api('GET', `/messages?timeline=${room}&before=${first.body.next_cursor}`, { token: ada.token });
    expect(second.body.messages.map((m: { content: { body: string } }) => m.content.body)).toEqual(['m2', 'm1']);
    expect(second.body.next_cursor).toBeNull();

    const shown = await p.api('GET', `/timelines/${timeline}`, { token: ada.token });
    expect(new Set(shown.body.items.map((item: { type: string }) => item.type))).toEqual(new Set(['message', 'asset', 'task', 'webhook_event']));
  });

  it('every path, method and documented status of openapi.yaml was reached, and every response matched its schema', () => {
    const spec = openApiSpec();
    const missing = spec.operations.flatMap((op) => [...op.responses.keys()].map((status) => `${op.method} ${op.path} ${status}`)).filter((key) => !reached.has(key));
    expect(missing).toEqual([]);
    expect(violations).toEqual([]);
  });
});
