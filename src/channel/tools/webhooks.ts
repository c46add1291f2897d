import { z } from 'zod';
import type { Tool } from '../../tools/tool.ts';
import { scrubSecrets } from '../../util/scrub.ts';
import type { WebhookEndpoint } from '../types.ts';
import { beforeField, createKey, editTool, limitField, platformTool, type PlatformToolsOptions, readTool, targetTimeline, timelineField, timelinePage, uuid } from './kit.ts';
import { pageText, webhookEventLine } from './render.ts';

/**
 * Wiring inbound activity: webhook endpoints (an ingest URL on a timeline; what arrives there
 * becomes a webhook event that wakes its viewers) and the events themselves. An ingest URL is
 * its own credential, so it is shown whole only when it is made (create, rotate), like a token;
 * lists show it shortened.
 */
const endpointField = uuid.describe('The webhook endpoint uuid.');
const MAX_PAYLOAD_CHARS = 20_000;

const maskedUrl = (url: string): string => url.replace(/(\/webhooks\/)([^/?#]{4})[^/?#]*/, '$1$2…');

function endpointLine(endpoint: WebhookEndpoint, showUrl = false): string {
  const { content } = endpoint;
  const url = showUrl ? content.ingest_url : maskedUrl(content.ingest_url);
  return `[${endpoint.created_at}] webhook endpoint ${content.uuid} on timeline ${endpoint.timeline.uuid}: ${JSON.stringify(content.description)}, ${content.enabled ? 'enabled' : 'DISABLED (deliveries get 410)'}, ingest URL ${url}`;
}

export function createWebhookTools(options: PlatformToolsOptions): Tool[] {
  const { client } = options;
  const change = (name: 'enable' | 'disable', description: string) =>
    editTool({
      name: `webhook_endpoints_${name}`,
      description,
      input: z.object({ endpoint: endpointField }),
      async run({ endpoint }) {
        return endpointLine(await client.webhookEndpoints[name](endpoint));
      },
    });
  return [
    editTool({
      name: 'webhook_endpoints_create',
      description: 'Create a webhook endpoint on a timeline (default: the current one). Its ingest URL is shown once: give it to the sender; anything POSTed there becomes a webhook event.',
      input: z.object({ description: z.string().trim().min(1).max(500).describe('What will deliver to it, e.g. "CI builds".'), timeline: timelineField }),
      async run({ description, timeline }, context) {
        const key = await createKey(options, 'webhook_endpoint', context);
        const made = await client.webhookEndpoints.create(targetTimeline(options, timeline), description, { ...(key ? { idempotencyKey: key } : {}), signal: context.abortSignal });
        return `Created ${endpointLine(made, true)}\nThe ingest URL is a secret: whoever has it can post to this timeline.`;
      },
    }),
    readTool({
      name: 'webhook_endpoints_list',
      description: 'List the webhook endpoints of a timeline (default: the current one).',
      input: z.object({ timeline: timelineField, limit: limitField, before: beforeField }),
      async run({ timeline, limit = 20, before }) {
        return pageText(await timelinePage(options, timeline, (t) => client.webhookEndpoints.list({ timeline: t }), before), (e) => endpointLine(e), 'webhook endpoints', limit);
      },
    }),
    change('enable', 'Enable a webhook endpoint again: its ingest URL accepts deliveries.'),
    change('disable', 'Disable a webhook endpoint: deliveries get 410 until it is enabled again; its events stay.'),
    platformTool({
      name: 'webhook_endpoints_rotate',
      description: 'Give a webhook endpoint a new ingest URL (the old one stops working at once; the endpoint and its events stay). Use it when the URL has leaked.',
      input: z.object({ endpoint: endpointField }),
      kind: 'edit',
      // Each rotation mints another URL: a re-run would invalidate the one just handed out.
      effect: 'unsafe',
      async run({ endpoint }) {
        return `Rotated: ${endpointLine(await client.webhookEndpoints.rotate(endpoint), true)}`;
      },
    }),
    readTool({
      name: 'webhook_events_list',
      description: 'List the webhook events that arrived on a timeline (default: the current one), optionally from one endpoint.',
      input: z.object({ timeline: timelineField, endpoint: endpointField.optional(), limit: limitField, before: beforeField }),
      async run({ timeline, endpoint, limit = 20, before }) {
        const page = await timelinePage(options, timeline, (t) => client.webhookEvents.list({ timeline: t, ...(endpoint ? { endpoint } : {}) }), before);
        return pageText(page, webhookEventLine, 'webhook events', limit);
      },
    }),
    readTool({
      name: 'webhook_events_read',
      description: 'Read one webhook event by its uuid: its headers and its raw payload.',
      input: z.object({ event: uuid.describe('The webhook event uuid.') }),
      async run({ event }) {
        const found = await client.webhookEvents.get(event);
        const payload = found.content.payload;
        const cut = payload.length > MAX_PAYLOAD_CHARS ? `${payload.slice(0, MAX_PAYLOAD_CHARS)}… (${payload.length - MAX_PAYLOAD_CHARS} more characters)` : payload;
        // A sender's own credentials (an Authorization header, a signature) are not the model's to read.
        const headers = Object.entries(found.content.headers).map(([name, value]) => scrubSecrets(`${name}: ${JSON.stringify(value)}`));
        return [`[${found.created_at}] webhook event ${found.content.uuid} from endpoint ${found.webhook_endpoint.uuid} on timeline ${found.timeline.uuid}`, 'Headers:', ...headers, `Payload (${found.content.content_type}):`, cut].join('\n');
      },
    }),
  ];
}
