import type { WebhookEndpoint, WebhookEvent } from '../types.ts';
import type { ItemFilters } from './messages.ts';
import { type CallOptions, type CreateOptions, ItemResource, segment } from './shared.ts';

export interface WebhookEventFilters extends ItemFilters {
  /** Only this endpoint's events (a uuid). */
  endpoint?: string;
}

export interface InboundDelivery {
  /** The raw body, sent as given. */
  payload: string;
  /** Default application/json. */
  contentType?: string;
  /** Extra headers the sender adds (a signature, say); they are recorded with the event. */
  headers?: Record<string, string>;
}

/** Webhook endpoints: inbound URLs on a timeline whose deliveries become webhook events. */
export class WebhookEndpoints extends ItemResource<WebhookEndpoint, ItemFilters> {
  protected readonly plural = 'webhook_endpoints';
  protected readonly singular = 'webhook_endpoint';

  /** POST /timelines/{id}/webhook_endpoints; with an idempotencyKey a repeat returns the first endpoint. */
  async create(timelineId: string, description: string, options: CreateOptions = {}): Promise<WebhookEndpoint> {
    return this.createOn(timelineId, { json: { webhook_endpoint: { description } } }, options);
  }

  /** POST /webhook_endpoints/{id}/enablement: deliveries are accepted again. */
  async enable(id: string, options: CallOptions = {}): Promise<WebhookEndpoint> {
    return this.endpoint('POST', `/webhook_endpoints/${segment(id, 'webhook endpoint uuid')}/enablement`, options);
  }

  /** DELETE /webhook_endpoints/{id}/enablement: a reversible stop; deliveries get 410, the history stays. */
  async disable(id: string, options: CallOptions = {}): Promise<WebhookEndpoint> {
    return this.endpoint('DELETE', `/webhook_endpoints/${segment(id, 'webhook endpoint uuid')}/enablement`, options);
  }

  /** POST /webhook_endpoints/{id}/rotation: a new ingest URL, the old one dead at once; uuid and events kept. */
  async rotate(id: string, options: CallOptions = {}): Promise<WebhookEndpoint> {
    return this.endpoint('POST', `/webhook_endpoints/${segment(id, 'webhook endpoint uuid')}/rotation`, options);
  }

  /**
   * POST /webhooks/{ingest_token}: delivers an inbound webhook to an endpoint's ingest URL, as
   * an outside sender would (no account: the URL is the credential). Never re-sent.
   */
  async deliver(ingestUrl: string, delivery: InboundDelivery, options: CallOptions = {}): Promise<void> {
    await this.transport.request({
      method: 'POST',
      path: ingestUrl,
      raw: { body: delivery.payload, contentType: delivery.contentType ?? 'application/json', ...(delivery.headers ? { headers: delivery.headers } : {}) },
      authenticated: false,
      signal: options.signal,
    });
  }

  private async endpoint(method: 'POST' | 'DELETE', path: string, options: CallOptions): Promise<WebhookEndpoint> {
    return this.record<WebhookEndpoint>({ method, path, ...(method === 'POST' ? { json: {} } : {}), signal: options.signal }, 'webhook_endpoint');
  }
}

/** Webhook events: what arrived at your endpoints (read-only; `payload` is the raw body). */
export class WebhookEvents extends ItemResource<WebhookEvent, WebhookEventFilters> {
  protected readonly plural = 'webhook_events';
  protected readonly singular = 'webhook_event';
}
