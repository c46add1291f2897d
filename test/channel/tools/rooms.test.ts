// The tools an agent governs rooms and relationships with — timelines_*, users_*, trust_*, and
// the irreversible lock and delete behind their confirm gate — run as the engine runs them,
// against the embedded platform, checked by what the platform then holds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BaseCradleClient } from '../../../src/channel/index.ts';
import { createGovernanceTools } from '../../../src/channel/tools/governance.ts';
import { createPeopleTools } from '../../../src/channel/tools/people.ts';
import { createTimelineTools } from '../../../src/channel/tools/timelines.ts';
import type { AddedUser } from '../../../src/platform/index.ts';
import type { Tool } from '../../../src/tools/tool.ts';
import { callTool, checkedClient, newObservations, resultText } from '../../support/channel.ts';
import { sharedTimeline, startTestPlatform, type TestPlatform } from '../../support/platform.ts';

/** Every answer the client read in this file, checked against openapi.yaml. */
const seen = newObservations();

describe('timelines_*, users_*, trust_*, lock and delete', () => {
  let p: TestPlatform;
  let ada: AddedUser;
  let nova: AddedUser;
  let rex: AddedUser;
  let asAda: BaseCradleClient;
  let asNova: BaseCradleClient;
  let room: string;
  let tools: Tool[];
  const forNova = (timeline?: string) => [
    ...createTimelineTools({ client: asNova, ...(timeline ? { timeline } : {}) }),
    ...createPeopleTools({ client: asNova }),
    ...createGovernanceTools({ client: asNova, ...(timeline ? { timeline } : {}) }),
  ];

  beforeAll(async () => {
    p = await startTestPlatform();
    ada = p.user('ada', 'human');
    nova = p.user('nova', 'ai', { trust: ['ada'] });
    rex = p.user('rex', 'ai');
    asAda = checkedClient(seen, { baseUrl: p.url, token: ada.token });
    asNova = checkedClient(seen, { baseUrl: p.url, token: nova.token });
    room = await sharedTimeline(p, ada, nova, 'Room');
    tools = forNova(room);
  });
  afterAll(() => p?.close());

  it('each tool says what it does, for the permission modes and crash recovery', () => {
    expect(tools.map((t) => [t.name, t.kind, t.effect])).toEqual([
      ['timelines_create', 'edit', 'unsafe'],
      ['timelines_read', 'read', 'read-only'],
      ['timelines_list', 'read', 'read-only'],
      ['timelines_add_participant', 'edit', 'idempotent'],
      ['timelines_remove_participant', 'edit', 'idempotent'],
      ['users_list', 'read', 'read-only'],
      ['users_read', 'read', 'read-only'],
      ['users_me', 'read', 'read-only'],
      ['trust_grant', 'edit', 'idempotent'],
      ['trust_revoke', 'edit', 'idempotent'],
      ['lock', 'edit', 'idempotent'],
      ['delete', 'edit', 'idempotent'],
    ]);
  });

  it('users_me, users_list and users_read show who is who and the trust between you', async () => {
    expect(resultText(await callTool(tools, 'users_me', {}))).toBe(`You are @nova (ai) ${nova.uuid}, "nova"; you can view 1 timelines.`);
    const listed = resultText(await callTool(tools, 'users_list', {})).split('\n');
    expect(listed).toEqual(['2 users:', `@ada (human) ${ada.uuid}: "ada"; mutual trust`, `@rex (ai) ${rex.uuid}: "rex"; no trust either way`]);
    expect(resultText(await callTool(tools, 'users_read', { user: '@ADA' }))).toBe(`@ada (human) ${ada.uuid}: "ada"; mutual trust; time zone UTC`);
    expect(resultText(await callTool(tools, 'users_read', { user: rex.uuid }))).toContain('@rex (ai)');
    expect(await callTool(tools, 'users_read', { user: '@nobody' })).toEqual({ ok: false, error: 'users_read failed: No user "@nobody" here (you cannot name yourself). Known: @ada, @rex.' });
  });

  it('timelines_create, then a participant added by handle once trust is mutual, and removed again', async () => {
    const made = resultText(await callTool(tools, 'timelines_create', { name: 'Lab' }));
    const lab = /^Created timeline ([0-9a-f-]{36}) "Lab"\.$/.exec(made)![1]!;
    const refused = await callTool(tools, 'timelines_add_participant', { user: 'rex', timeline: lab });
    expect(refused).toEqual({ ok: false, error: expect.stringMatching(/^timelines_add_participant failed: The platform refused \(validation_failed\): /) });
    expect(resultText(await callTool(tools, 'trust_grant', { user: 'rex' }))).toBe('You now trust @rex: you trust them (not yet back).');
    await checkedClient(seen, { baseUrl: p.url, token: rex.token }).trust.grant(nova.uuid);
    expect(resultText(await callTool(tools, 'timelines_add_participant', { user: '@rex', timeline: lab }))).toBe(`Added @rex to timeline ${lab}.`);
    expect((await asNova.timelines.get(lab)).timeline.participants.map((u) => u.handle)).toEqual(['rex']);
    expect(resultText(await callTool(tools, 'timelines_list', {}))).toContain(`"Lab" ${lab}: owner @nova; viewers @nova, @rex`);
    expect(resultText(await callTool(tools, 'timelines_remove_participant', { user: rex.uuid, timeline: lab }))).toBe(`Removed @rex from timeline ${lab}.`);
    expect((await asNova.timelines.get(lab)).timeline.participants).toEqual([]);
    expect(resultText(await callTool(tools, 'trust_revoke', { user: 'rex' }))).toBe('You no longer trust @rex.');
    expect((await asNova.users.get(rex.uuid)).trust).toEqual({ you_trust: false, trusts_you: true, mutual: false });
  });

  it('timelines_read shows the room and its recent items, oldest first, each with its time', async () => {
    await asAda.messages.create(room, 'first');
    await asAda.messages.create(room, 'second');
    const lines = resultText(await callTool(tools, 'timelines_read', {})).split('\n');
    expect(lines[0]).toBe(`"Room" ${room}: owner @ada; viewers @ada, @nova`);
    expect(lines[1]).toBe('2 recent items, oldest first:');
    expect(lines.slice(2)).toEqual([expect.stringMatching(/^\[\d{4}-[^\]]+\] @ada \(human\) message [0-9a-f-]{36}: "first"$/), expect.stringMatching(/: "second"$/)]);
  });

  it('lock without confirm changes nothing and previews what it would do; with it, the room is locked for good', async () => {
    const doomed = await sharedTimeline(p, ada, nova, 'To lock');
    await asAda.messages.create(doomed, 'last words');
    const here = forNova(doomed);
    const bare = await callTool(here, 'lock', {});
    expect(bare).toEqual({
      ok: false,
      error:
        `lock failed: Not done: lock needs confirm=<the timeline’s uuid>. Locking timeline "To lock" (${doomed}), owned by @ada, seen by @ada, @nova, holding 1 messages, 0 assets, 0 tasks and 0 webhook endpoints is one-way: ` +
        `no one, you included, could post messages, assets or tasks there again, and its webhook endpoints would take no deliveries; everything stays readable. To go ahead, call lock again with confirm=${doomed}.`,
    });
    const wrong = await callTool(here, 'lock', { confirm: room });
    expect(wrong.ok === false && wrong.error).toContain(`confirm="${room}" is not this timeline’s uuid`);
    expect((await asAda.timelines.get(doomed)).timeline.locked).toBe(false);
    expect(resultText(await callTool(here, 'lock', { confirm: doomed.toUpperCase() }))).toBe(`Locked timeline ${doomed}: it takes no new content from now on.`);
    expect((await asAda.timelines.get(doomed)).timeline.locked).toBe(true);
  });

  it('delete without confirm previews what would be lost; with it, the room and its items are gone, and a re-run says so', async () => {
    const mine = resultText(await callTool(tools, 'timelines_create', { name: 'Scratch' }));
    const scratch = /timeline ([0-9a-f-]{36})/.exec(mine)![1]!;
    await asNova.messages.create(scratch, 'one');
    await asNova.tasks.create(scratch, { instructions: 'later', activateAt: new Date(Date.now() + 3_600_000) });
    const bare = await callTool(tools, 'delete', { timeline: scratch });
    expect(bare.ok === false && bare.error).toContain(`Deleting timeline "Scratch" (${scratch}), owned by @nova, seen by @nova, holding 1 messages, 0 assets, 1 tasks and 0 webhook endpoints removes it and all of that for every viewer, for good. To go ahead, call delete again with confirm=${scratch}.`);
    expect((await asNova.timelines.get(scratch)).timeline.name).toBe('Scratch');
    expect(resultText(await callTool(tools, 'delete', { timeline: scratch, confirm: scratch }))).toBe(`Deleted timeline ${scratch} and everything on it.`);
    expect(await asNova.timelines.get(scratch).catch((e: { code?: string }) => e.code)).toBe('not_found');
    expect(resultText(await callTool(tools, 'delete', { timeline: scratch, confirm: scratch }))).toBe(`Timeline ${scratch} is gone (it was already deleted).`);
  });

  it('delete of a room you do not own says so in the preview, and the platform refuses it plainly', async () => {
    const preview = await callTool(tools, 'delete', { timeline: room });
    expect(preview.ok === false && preview.error).toContain('You are not its owner, so the platform would refuse.');
    expect(await callTool(tools, 'delete', { timeline: room, confirm: room })).toEqual({ ok: false, error: expect.stringMatching(/^delete failed: The platform refused \(not_timeline_owner\): /) });
    expect((await asAda.timelines.get(room)).timeline.name).toBe('Room');
  });
});

describe('the answers read in this file', () => {
  it('all matched openapi.yaml', () => {
    expect(seen.requests.length).toBeGreaterThan(0);
    expect(seen.violations).toEqual([]);
  });
});
