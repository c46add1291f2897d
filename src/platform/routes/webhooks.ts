import type { Hono, MiddlewareHandler } from 'hono';
import { transaction } from '../../store/database.ts';
import { viewableRecord } from '../data/items.ts';
import { findTimeline } from '../data/timelines.ts';
import { isAdmin } from '../data/users.ts';
import {
  canonicalHeaderName,
  type EndpointRow,
  findEndpoint,
  findEndpointByToken,
  insertEndpoint,
  insertWebhookEvent,
  rotateEndpoint,
  setEndpointEnabled,
  type WebhookEventRow,
} from '../data/webhooks.ts';
import { recordEvent } from '../events.ts';
import { jsonBody, member, requiredText } from '../http/body.ts';
import { listPage, uuidFilter } from '../pagination.ts';
import { PlatformError } from '../problem.ts';
import { type PlatformContext, type PlatformEnv, type PlatformRuntime, wireFor } from '../runtime.ts';
import { itemList } from './content.ts';
import { keyedCreate } from './keyed-create.ts';

/** Webhook endpoints (managed), webhook events (read-only), and the unauthenticated ingest. */
export function registerWebhookRoutes(app: Hono<PlatformEnv>, rt: PlatformRuntime, auth: MiddlewareHandler<PlatformEnv>): void {
  app.post('/timelines/:timeline_id/webhook_endpoints', auth, async (c) => {
    const body = await jsonBody(c);
    const { row } = keyedCreate<EndpointRow>(rt, c, {
      timelineId: c.req.param('timeline_id'),
      kind: 'webhook_endpoint',
      create: (timeline) => insertEndpoint(rt.db, timeline, c.get('user'), requiredText(member(body, 'webhook_endpoint'), 'description').trim()),
    });
    return c.json({ webhook_endpoint: wireFor(rt, c).endpoint(row) }, 201);
  });
  app.get('/webhook_endpoints', auth, (c) => {
    const page = listPage<EndpointRow>(rt.db, itemList(c, 'webhook_endpoints'));
    const wire = wireFor(rt, c);
    return c.json({ webhook_endpoints: page.rows.map((e) => wire.endpoint(e)), next_cursor: page.nextCursor });
  });
  app.get('/webhook_endpoints/:id', auth, (c) => c.json({ webhook_endpoint: wireFor(rt, c).endpoint(viewableRecord<EndpointRow>(rt.db, 'webhook_endpoint', c.req.param('id'), c.get('user')).record) }));

  // Disable is a reversible soft stop: deliveries get 410 and the history stays.
  app.delete('/webhook_endpoints/:webhook_endpoint_id/enablement', auth, (c) => manage(rt, c, (e) => setEndpointEnabled(rt.db, e, false)));
  app.post('/webhook_endpoints/:webhook_endpoint_id/enablement', auth, (c) => manage(rt, c, (e) => setEndpointEnabled(rt.db, e, true)));
  // The answer to a leaked ingest URL: a new one, the old one dead at once, uuid and events kept.
  app.post('/webhook_endpoints/:webhook_endpoint_id/rotation', auth, (c) => manage(rt, c, (e) => rotateEndpoint(rt.db, e)));

  app.get('/webhook_events', auth, (c) => {
    const query = itemList(c, 'webhook_events');
    const endpoint = uuidFilter('endpoint', c.req.query('endpoint'));
    if (endpoint) {
      query.where.push('endpoint_uuid = :endpoint');
      query.params.endpoint = endpoint;
    }
    const page = listPage<WebhookEventRow>(rt.db, query);
    const wire = wireFor(rt, c);
    return c.json({ webhook_events: page.rows.map((e) => wire.webhookEvent(e, findEndpoint(rt.db, e.endpoint_uuid)!)), next_cursor: page.nextCursor });
  });
  app.get('/webhook_events/:id', auth, (c) => {
    const { record } = viewableRecord<WebhookEventRow>(rt.db, 'webhook_event', c.req.param('id'), c.get('user'));
    return c.json({ webhook_event: wireFor(rt, c).webhookEvent(record, findEndpoint(rt.db, record.endpoint_uuid)!) });
  });

  /**
   * The ingest: no account, the URL is the credential. Unknown token 404, disabled endpoint 410,
   * locked timeline 403; otherwise the delivery is recorded as it came (headers with canonical
   * names, the raw body as text) and the timeline's agents hear of it.
   */
  app.post('/webhooks/:ingest_token', async (c) => {
    const token = c.req.param('ingest_token');
    const check = () => {
      const endpoint = findEndpointByToken(rt.db, token);
      if (!endpoint) throw new PlatformError('not_found', 'No webhook endpoint has this ingest URL (it may have been rotated).');
      if (!endpoint.enabled) throw new PlatformError('endpoint_disabled', 'This webhook endpoint is disabled; it accepts no deliveries until it is enabled again.');
      const timeline = findTimeline(rt.db, endpoint.timeline_uuid)!;
      if (timeline.locked) throw new PlatformError('timeline_locked', 'The timeline of this webhook endpoint is locked: it takes no new deliveries.');
      return { endpoint, timeline };
    };
    check();
    const payload = await c.req.text();
    const headers: Record<string, string> = {};
    c.req.raw.headers.forEach((value, name) => {
      headers[canonicalHeaderName(name)] = value;
    });
    let queued = 0;
    transaction(rt.db, () => {
      const { endpoint, timeline } = check();
      const event = insertWebhookEvent(rt.db, endpoint, { contentType: c.req.header('content-type') ?? 'application/octet-stream', headers, payload });
      queued = recordEvent(rt.db, rt.outbox, { name: 'webhook_event.received', timeline, actorUuid: null, resource: { type: 'webhook_event', uuid: event.uuid } });
    });
    if (queued > 0) rt.kickDeliveries();
    return c.html('', 201);
  });
}

/** Managing an endpoint: its author, its timeline's owner, or an admin (locked or not). */
function manage(rt: PlatformRuntime, c: PlatformContext, change: (endpoint: EndpointRow) => EndpointRow): Response {
  const me = c.get('user');
  const updated = transaction(rt.db, () => {
    const { record, timeline } = viewableRecord<EndpointRow>(rt.db, 'webhook_endpoint', c.req.param('webhook_endpoint_id')!, me);
    if (record.user_uuid !== me.uuid && timeline.owner_uuid !== me.uuid && !isAdmin(me)) {
      throw new PlatformError('not_timeline_owner', "Only the endpoint's author or the timeline's owner may change it.");
    }
    return change(record);
  });
  return c.json({ webhook_endpoint: wireFor(rt, c).endpoint(updated) });
}
