import type { Database } from '../../store/database.ts';
import { newUuid, nowIso, randomToken } from '../ids.ts';
import type { TimelineRow } from './timelines.ts';
import type { UserRow } from './users.ts';

/**
 * Inbound webhooks: an endpoint is a secret ingest URL on a timeline; each POST to it is
 * recorded as a webhook event. The ingest token is the only credential a sender needs, so
 * rotating it kills the old URL at once, while the endpoint's uuid and its events stay.
 */
export interface EndpointRow {
  uuid: string;
  timeline_uuid: string;
  user_uuid: string;
  description: string;
  enabled: number;
  ingest_token: string;
  created_at: string;
  updated_at: string;
}

export interface WebhookEventRow {
  uuid: string;
  timeline_uuid: string;
  endpoint_uuid: string;
  content_type: string;
  headers: string;
  payload: string;
  ingest_token_at_receipt: string;
  verified_at_receipt: number;
  created_at: string;
  updated_at: string;
}

const newIngestToken = (): string => randomToken('', 40);

export function insertEndpoint(db: Database, timeline: TimelineRow, author: UserRow, description: string): EndpointRow {
  const at = nowIso();
  const row: EndpointRow = { uuid: newUuid(), timeline_uuid: timeline.uuid, user_uuid: author.uuid, description, enabled: 1, ingest_token: newIngestToken(), created_at: at, updated_at: at };
  db.prepare(
    `INSERT INTO webhook_endpoints (uuid, timeline_uuid, user_uuid, description, enabled, ingest_token, created_at, updated_at)
     VALUES (:uuid, :timeline_uuid, :user_uuid, :description, :enabled, :ingest_token, :created_at, :updated_at)`,
  ).run({ ...row });
  return row;
}

export function setEndpointEnabled(db: Database, endpoint: EndpointRow, enabled: boolean): EndpointRow {
  const updated_at = nowIso();
  db.prepare('UPDATE webhook_endpoints SET enabled = ?, updated_at = ? WHERE uuid = ?').run(enabled ? 1 : 0, updated_at, endpoint.uuid);
  return { ...endpoint, enabled: enabled ? 1 : 0, updated_at };
}

export function rotateEndpoint(db: Database, endpoint: EndpointRow): EndpointRow {
  const updated_at = nowIso();
  const ingest_token = newIngestToken();
  db.prepare('UPDATE webhook_endpoints SET ingest_token = ?, updated_at = ? WHERE uuid = ?').run(ingest_token, updated_at, endpoint.uuid);
  return { ...endpoint, ingest_token, updated_at };
}

export function findEndpointByToken(db: Database, token: string): EndpointRow | undefined {
  return db.prepare('SELECT * FROM webhook_endpoints WHERE ingest_token = ?').get(token) as EndpointRow | undefined;
}

export function findEndpoint(db: Database, uuid: string): EndpointRow | undefined {
  return db.prepare('SELECT * FROM webhook_endpoints WHERE uuid = ?').get(uuid) as EndpointRow | undefined;
}

export interface Receipt {
  contentType: string;
  headers: Record<string, string>;
  payload: string;
}

export function insertWebhookEvent(db: Database, endpoint: EndpointRow, receipt: Receipt): WebhookEventRow {
  const at = nowIso();
  const row: WebhookEventRow = {
    uuid: newUuid(),
    timeline_uuid: endpoint.timeline_uuid,
    endpoint_uuid: endpoint.uuid,
    content_type: receipt.contentType,
    headers: JSON.stringify(receipt.headers),
    payload: receipt.payload,
    ingest_token_at_receipt: endpoint.ingest_token,
    // Signature verification of inbound deliveries is not offered here (setting an endpoint's
    // secret is an owner action outside the API), so no event was verified on arrival.
    verified_at_receipt: 0,
    created_at: at,
    updated_at: at,
  };
  db.prepare(
    `INSERT INTO webhook_events (uuid, timeline_uuid, endpoint_uuid, content_type, headers, payload, ingest_token_at_receipt, verified_at_receipt, created_at, updated_at)
     VALUES (:uuid, :timeline_uuid, :endpoint_uuid, :content_type, :headers, :payload, :ingest_token_at_receipt, :verified_at_receipt, :created_at, :updated_at)`,
  ).run({ ...row });
  return row;
}

/** Header names as the platform stores them: canonical Title-Case per segment (`X-Github-Delivery`). */
export function canonicalHeaderName(name: string): string {
  return name
    .toLowerCase()
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('-');
}
