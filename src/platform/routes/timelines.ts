import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Hono, MiddlewareHandler } from 'hono';
import { transaction } from '../../store/database.ts';
import type { AssetRow, MessageRow, TaskRow } from '../data/items.ts';
import {
  addParticipant,
  deleteTimeline,
  insertTimeline,
  lockTimeline,
  ownedTimeline,
  ownedTimelineCount,
  participantUuids,
  removeParticipant,
  type TimelineRow,
  viewableTimeline,
  viewerUuids,
  VISIBLE_TIMELINES,
} from '../data/timelines.ts';
import { findUser, trustBetween } from '../data/users.ts';
import type { EndpointRow, WebhookEventRow } from '../data/webhooks.ts';
import { blank, jsonBody, member, requiredText, stringField } from '../http/body.ts';
import { isUuid } from '../ids.ts';
import { listPage, PAGE_SIZE } from '../pagination.ts';
import { invalid } from '../problem.ts';
import { type PlatformEnv, type PlatformRuntime, wireFor } from '../runtime.ts';
import { visibleName } from '../visible-names.ts';
import type { Wire } from '../wire.ts';

/** Timelines: the rooms everything else lives on; their participants, lock and deletion. */
export function registerTimelineRoutes(app: Hono<PlatformEnv>, rt: PlatformRuntime, auth: MiddlewareHandler<PlatformEnv>): void {
  app.get('/timelines', auth, (c) => {
    const page = listPage<TimelineRow>(rt.db, { table: 'timelines', where: [`uuid IN ${VISIBLE_TIMELINES}`], params: { viewer: c.get('user').uuid }, before: c.req.query('before') });
    const wire = wireFor(rt, c);
    return c.json({ timelines: page.rows.map((t) => wire.timeline(t)), next_cursor: page.nextCursor });
  });

  app.post('/timelines', auth, async (c) => {
    const me = c.get('user');
    const name = visibleName('name', requiredText(member(await jsonBody(c), 'timeline'), 'name').trim());
    const timeline = transaction(rt.db, () => {
      if (ownedTimelineCount(rt.db, me.uuid) >= me.max_timelines) throw invalid({ base: [`you already own ${me.max_timelines} timelines, the most your account may`] });
      return insertTimeline(rt.db, me, name);
    });
    return c.json({ timeline: wireFor(rt, c).timeline(timeline), items: [] }, 201);
  });

  app.get('/timelines/:id', auth, (c) => {
    const timeline = viewableTimeline(rt.db, c.req.param('id'), c.get('user'));
    const wire = wireFor(rt, c);
    return c.json({ timeline: wire.timeline(timeline), items: recentItems(rt, timeline, wire) });
  });

  // Owner or admin; cascades to every message, asset (and its file), task, endpoint and event.
  app.delete('/timelines/:id', auth, (c) => {
    const timeline = transaction(rt.db, () => {
      const owned = ownedTimeline(rt.db, c.req.param('id'), c.get('user'));
      deleteTimeline(rt.db, owned);
      return owned;
    });
    rmSync(join(rt.home.assetsDir, timeline.uuid), { recursive: true, force: true });
    rt.logger.info('timeline deleted', { timeline: timeline.uuid, by: c.get('user').uuid });
    return c.body(null, 204);
  });

  // Any viewer may lock, and locking is idempotent and one-way: there is no unlock.
  app.post('/timelines/:timeline_id/lock', auth, (c) => {
    const timeline = viewableTimeline(rt.db, c.req.param('timeline_id'), c.get('user'));
    lockTimeline(rt.db, timeline);
    return c.json({ uuid: timeline.uuid, locked: true });
  });

  /**
   * Adding a participant needs ownership, mutual trust between the newcomer and every viewer
   * already there, and headroom under the owner's max_participants. Idempotent. A locked
   * timeline still manages its participants (lock first, then remove whoever caused it).
   */
  app.post('/timelines/:timeline_id/participations', auth, async (c) => {
    const body = await jsonBody(c);
    const userId = stringField(body, 'user_id');
    const added = transaction(rt.db, () => {
      const timeline = ownedTimeline(rt.db, c.req.param('timeline_id'), c.get('user'));
      const user = userId !== undefined && isUuid(userId) ? findUser(rt.db, userId) : undefined;
      if (!user) throw invalid({ user_id: [userId ? `"${userId}" does not name a user` : blank(body)] });
      const viewers = viewerUuids(rt.db, timeline);
      if (user.uuid === timeline.owner_uuid) throw invalid({ user_id: ['is the owner of this timeline'] });
      if (viewers.includes(user.uuid)) return user;
      const owner = findUser(rt.db, timeline.owner_uuid)!;
      if (viewers.length - 1 >= owner.max_participants) throw invalid({ base: [`this timeline has ${owner.max_participants} participants, the most its owner may add`] });
      const strangers = viewers.filter((v) => !trustBetween(rt.db, v, user.uuid).mutual).map((v) => `@${findUser(rt.db, v)?.handle ?? v}`);
      if (strangers.length > 0) {
        throw invalid({ user_id: [`@${user.handle} and ${strangers.join(', ')} do not trust each other: both must grant trust before @${user.handle} can be added`] });
      }
      addParticipant(rt.db, timeline, user);
      return user;
    });
    return c.json(wireFor(rt, c).profile(added), 201);
  });

  app.delete('/timelines/:timeline_id/participations/:id', auth, (c) => {
    transaction(rt.db, () => {
      const timeline = ownedTimeline(rt.db, c.req.param('timeline_id'), c.get('user'));
      const id = c.req.param('id');
      if (id === timeline.owner_uuid) throw invalid({ id: ['is the owner of this timeline, who cannot be removed'] });
      if (participantUuids(rt.db, timeline).includes(id)) removeParticipant(rt.db, timeline, id);
    });
    return c.body(null, 204);
  });
}

/** The timeline's newest items of every kind, newest first (uuid order is creation order). */
function recentItems(rt: PlatformRuntime, timeline: TimelineRow, wire: Wire): object[] {
  const recent = <T>(table: string) => rt.db.prepare(`SELECT * FROM ${table} WHERE timeline_uuid = ? ORDER BY uuid DESC LIMIT ${PAGE_SIZE}`).all(timeline.uuid) as T[];
  const endpoints = new Map((rt.db.prepare('SELECT * FROM webhook_endpoints WHERE timeline_uuid = ?').all(timeline.uuid) as unknown as EndpointRow[]).map((e) => [e.uuid, e]));
  const items: Array<{ uuid: string; render: () => object }> = [
    ...recent<MessageRow>('messages').map((m) => ({ uuid: m.uuid, render: () => wire.message(m) })),
    ...recent<AssetRow>('assets').map((a) => ({ uuid: a.uuid, render: () => wire.asset(a) })),
    ...recent<TaskRow>('tasks').map((t) => ({ uuid: t.uuid, render: () => wire.task(t) })),
    ...recent<WebhookEventRow>('webhook_events').map((e) => ({ uuid: e.uuid, render: () => wire.webhookEvent(e, endpoints.get(e.endpoint_uuid)!) })),
  ];
  return items
    .sort((a, b) => (a.uuid < b.uuid ? 1 : -1))
    .slice(0, PAGE_SIZE)
    .map((item) => item.render());
}
