// Timelines as their owners and peers use them: who may join (mutual trust with every viewer), the
// one-way lock, deletion that takes everything with it (files on disk too), and tasks on time.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AddedUser } from '../../src/platform/index.ts';
import { sharedTimeline, startTestPlatform, type TestPlatform, violations } from '../support/platform.ts';
import { scaled } from '../support/time-scale.ts';

/** How far ahead a task that must still be pending at the next step comes due: past a few requests on a loaded machine. */
const SOON_MS = scaled(1500);

let p: TestPlatform;
let ada: AddedUser;
let nova: AddedUser;
beforeEach(async () => {
  p = await startTestPlatform();
  ada = p.user('ada', 'human');
  nova = p.user('nova', 'ai', { trust: ['ada'] });
});
afterEach(async () => {
  await p.close();
  expect(violations).toEqual([]);
});

const post = (token: string, timeline: string, body: string) => p.api('POST', `/timelines/${timeline}/messages`, { token, json: { message: { body } } });

describe('participations', () => {
  it('adding needs mutual trust between the newcomer and every viewer, and says who is missing', async () => {
    const timeline = await sharedTimeline(p, ada, nova);
    const orion = p.user('orion', 'ai');
    const add = () => p.api('POST', `/timelines/${timeline}/participations`, { token: ada.token, json: { user_id: orion.uuid } });
    let refused = await add();
    expect(refused.status).toBe(422);
    expect(refused.body.errors.user_id[0]).toBe('@orion and @ada, @nova do not trust each other: both must grant trust before @orion can be added');
    await p.api('POST', `/users/${orion.uuid}/trust`, { token: ada.token, json: {} });
    await p.api('POST', `/users/${ada.uuid}/trust`, { token: orion.token, json: {} });
    // One-sided trust is not enough.
    await p.api('POST', `/users/${orion.uuid}/trust`, { token: nova.token, json: {} });
    refused = await add();
    expect(refused.body.errors.user_id[0]).toBe('@orion and @nova do not trust each other: both must grant trust before @orion can be added');
    await p.api('POST', `/users/${nova.uuid}/trust`, { token: orion.token, json: {} });
    expect((await add()).status).toBe(201);
    // Adding again is idempotent, even once trust has been revoked (the gate is for joining).
    await p.api('DELETE', `/users/${orion.uuid}/trust`, { token: nova.token });
    expect((await add()).status).toBe(201);
    const shown = await p.api('GET', `/timelines/${timeline}`, { token: orion.token });
    expect(shown.body.timeline.participants.map((u: { handle: string }) => u.handle)).toEqual(['nova', 'orion']);
  });

  it('revoking trust evicts no one; removing a participant ends their view', async () => {
    const timeline = await sharedTimeline(p, ada, nova);
    await p.api('DELETE', `/users/${nova.uuid}/trust`, { token: ada.token });
    expect((await p.api('GET', `/timelines/${timeline}`, { token: nova.token })).status).toBe(200);
    expect((await p.api('DELETE', `/timelines/${timeline}/participations/${nova.uuid}`, { token: ada.token })).status).toBe(204);
    expect((await p.api('GET', `/timelines/${timeline}`, { token: nova.token })).body.code).toBe('not_a_viewer');
    expect((await post(nova.token, timeline, 'still here?')).body.code).toBe('not_a_viewer');
  });
});

describe('lock', () => {
  it('is one-way: a locked timeline takes no message, asset, task or endpoint, and there is no unlock', async () => {
    const timeline = await sharedTimeline(p, ada, nova);
    const task = (await p.api('POST', `/timelines/${timeline}/tasks`, { token: nova.token, json: { task: { instructions: 'later', activate_at: '2099-01-01T00:00:00Z' } } })).body.task;
    expect((await p.api('POST', `/timelines/${timeline}/lock`, { token: nova.token, json: {} })).body.locked).toBe(true); // any viewer may lock
    expect((await p.api('POST', `/timelines/${timeline}/lock`, { token: ada.token, json: {} })).body.locked).toBe(true); // and again: idempotent
    expect((await post(ada.token, timeline, 'no')).body.code).toBe('timeline_locked');
    const form = new FormData();
    form.append('asset[file]', new Blob(['x']), 'x.txt');
    expect((await p.api('POST', `/timelines/${timeline}/assets`, { token: ada.token, form })).body.code).toBe('timeline_locked');
    expect((await p.api('POST', `/timelines/${timeline}/tasks`, { token: ada.token, json: { task: { instructions: 'x', activate_at: '2099-01-01T00:00:00Z' } } })).body.code).toBe('timeline_locked');
    expect((await p.api('POST', `/timelines/${timeline}/webhook_endpoints`, { token: ada.token, json: { webhook_endpoint: { description: 'x' } } })).body.code).toBe('timeline_locked');
    for (const method of ['DELETE', 'PATCH', 'PUT']) expect((await p.api(method, `/timelines/${timeline}/lock`, { token: ada.token })).body.code).toBe('not_found');
    expect((await p.api('GET', `/timelines/${timeline}`, { token: ada.token })).body.timeline.locked).toBe(true);
    // Withdrawing a task is cleanup, not content: still allowed.
    expect((await p.api('POST', `/tasks/${task.content.uuid}/cancellation`, { token: nova.token })).body.task.content.status).toBe('cancelled');
  });

  it('a task that comes due on a locked timeline is blocked, not activated', async () => {
    const timeline = await sharedTimeline(p, ada, nova);
    const task = (await p.api('POST', `/timelines/${timeline}/tasks`, { token: nova.token, json: { task: { instructions: 'soon', activate_at: new Date(Date.now() + SOON_MS).toISOString() } } })).body.task;
    await p.api('POST', `/timelines/${timeline}/lock`, { token: ada.token, json: {} });
    await expect.poll(async () => (await p.api('GET', `/tasks/${task.content.uuid}`, { token: nova.token })).body.task.content.status, { timeout: SOON_MS + scaled(5000) }).toBe('blocked_timeline_locked');
  });
});

describe('delete', () => {
  it('removes the timeline and everything on it, files on disk included; only its owner may', async () => {
    const timeline = await sharedTimeline(p, ada, nova);
    const message = (await post(ada.token, timeline, 'bye')).body.message;
    const form = new FormData();
    form.append('asset[file]', new Blob([new Uint8Array([1, 2, 3])], { type: 'image/png' }), 'dot.png');
    form.append('asset[description]', 'a dot');
    const asset = (await p.api('POST', `/timelines/${timeline}/assets`, { token: nova.token, form })).body.asset;
    const fileUrl = new URL(asset.content.file.url).pathname;
    expect((await fetch(`${p.url}${fileUrl}`)).status).toBe(200);
    expect(readdirSync(join(p.home, 'assets', timeline))).toEqual([asset.content.uuid]);

    expect((await p.api('DELETE', `/timelines/${timeline}`, { token: nova.token })).body.code).toBe('not_timeline_owner');
    expect((await p.api('DELETE', `/timelines/${timeline}`, { token: ada.token })).status).toBe(204);
    expect((await p.api('GET', `/timelines/${timeline}`, { token: ada.token })).body.code).toBe('not_found');
    expect((await p.api('GET', `/messages/${message.content.uuid}`, { token: ada.token })).body.code).toBe('not_found');
    expect((await p.api('GET', `/assets/${asset.content.uuid}`, { token: ada.token })).body.code).toBe('not_found');
    expect((await fetch(`${p.url}${fileUrl}`)).status).toBe(404);
    expect(existsSync(join(p.home, 'assets', timeline))).toBe(false);
    expect((await p.api('GET', '/messages', { token: nova.token })).body.messages).toEqual([]);
  });
});

describe('tasks', () => {
  it('activate at their time (and overdue ones when the platform starts), cancelled ones never', async () => {
    const timeline = await sharedTimeline(p, ada, nova);
    const create = (instructions: string, at: Date) => p.api('POST', `/timelines/${timeline}/tasks`, { token: nova.token, json: { task: { instructions, activate_at: at.toISOString() } } });
    const soon = (await create('soon', new Date(Date.now() + SOON_MS))).body.task;
    const cancelled = (await create('never', new Date(Date.now() + SOON_MS))).body.task;
    await p.api('POST', `/tasks/${cancelled.content.uuid}/cancellation`, { token: nova.token });
    const status = async (uuid: string) => (await p.api('GET', `/tasks/${uuid}`, { token: nova.token })).body.task.content.status;
    expect(await status(soon.content.uuid)).toBe('pending');
    await expect.poll(() => status(soon.content.uuid), { timeout: SOON_MS + scaled(5000) }).toBe('activated');
    expect(await status(cancelled.content.uuid)).toBe('cancelled');

    const overdue = (await create('while down', new Date(Date.now() + SOON_MS))).body.task;
    await p.close();
    await new Promise((resolve) => setTimeout(resolve, SOON_MS + 100));
    await p.restart();
    await expect.poll(() => status(overdue.content.uuid), { timeout: scaled(5000) }).toBe('activated');
    expect((await p.api('GET', `/tasks?timeline=${timeline}&status=activated`, { token: ada.token })).body.tasks).toHaveLength(2);
  });

  it('take ISO times with a zone, or none (read as UTC), and refuse anything else with a reason', async () => {
    const timeline = await sharedTimeline(p, ada, nova);
    const create = (activate_at: string) => p.api('POST', `/timelines/${timeline}/tasks`, { token: nova.token, json: { task: { instructions: 'x', activate_at } } });
    expect((await create('2099-06-10T15:00:00+02:00')).body.task.content.activate_at).toBe('2099-06-10T13:00:00.000Z');
    // Read as UTC whatever the server's own zone is.
    const zone = process.env.TZ;
    process.env.TZ = 'America/New_York';
    try {
      expect((await create('2099-06-10T15:00:00')).body.task.content.activate_at).toBe('2099-06-10T15:00:00.000Z');
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
    const refused = await create('+90m');
    expect(refused.status).toBe(422);
    expect(refused.body.errors.activate_at[0]).toContain('is not an ISO 8601 time');
    expect((await p.api('GET', '/tasks?status=done', { token: nova.token })).body.code).toBe('invalid_filter');
  });
});
