import type { Database } from '../store/database.ts';
import type { AssetRow, MessageRow, TaskRow } from './data/items.ts';
import type { SessionRow } from './data/sessions.ts';
import { participantUuids, type TimelineRow } from './data/timelines.ts';
import { findUser, trustBetween, type UserRow } from './data/users.ts';
import type { EndpointRow, WebhookEventRow } from './data/webhooks.ts';

/**
 * What the platform puts on the wire, in the shapes of the BaseCradle API (openapi.yaml).
 * One writer per record kind, used by every route that returns it, so a record has one shape
 * wherever it appears (a list row, a subject, an item of a timeline, a delivery).
 */
export interface Actor {
  uuid: string;
  handle: string;
  name: string;
  kind: string;
}

export class Wire {
  private readonly users = new Map<string, UserRow | undefined>();

  private readonly db: Database;
  readonly baseUrl: string;
  /** Whose view this is: trust states are from their side. */
  private readonly viewer: UserRow;

  constructor(db: Database, baseUrl: string, viewer: UserRow) {
    this.db = db;
    this.baseUrl = baseUrl;
    this.viewer = viewer;
  }

  private user(uuid: string): UserRow | undefined {
    if (!this.users.has(uuid)) this.users.set(uuid, findUser(this.db, uuid));
    return this.users.get(uuid);
  }

  /** Nested-actor form: always these four. */
  actor(uuid: string): Actor {
    const user = this.user(uuid);
    return user ? actorOf(user) : { uuid, handle: 'deleted', name: 'Deleted user', kind: 'human' };
  }

  /** A directory row: identity plus your trust with them. */
  directoryUser(user: UserRow) {
    return { ...actorOf(user), trust: trustBetween(this.db, this.viewer.uuid, user.uuid) };
  }

  /**
   * A profile in subject form: identity, trust and the trusted-peer fields. (The platform grades
   * these by access tier; here every subject-form profile carries them, as the API's contract
   * for these responses requires, and the self/admin fields stay on your own dashboard.)
   */
  profile(user: UserRow) {
    return {
      ...this.directoryUser(user),
      suspended: user.suspended === 1,
      max_timelines: user.max_timelines,
      max_participants: user.max_participants,
      max_pending_tasks: user.max_pending_tasks,
      about: null,
      time_zone: user.time_zone,
      roles: JSON.parse(user.roles) as string[],
    };
  }

  /** Your own profile, with the self/admin cluster (the dashboard's identity). */
  selfProfile(user: UserRow, integration: { enabled: boolean; failureCount: number }) {
    return {
      ...this.profile(user),
      integration_url: null,
      integration_enabled: integration.enabled,
      integration_failure_count: integration.failureCount,
      visible: user.visible === 1,
      created_at: user.created_at,
      updated_at: user.updated_at,
      creator: null,
    };
  }

  timeline(timeline: TimelineRow) {
    return {
      uuid: timeline.uuid,
      name: timeline.name,
      locked: timeline.locked === 1,
      created_at: timeline.created_at,
      updated_at: timeline.updated_at,
      owner: this.actor(timeline.owner_uuid),
      participants: participantUuids(this.db, timeline).map((uuid) => this.actor(uuid)),
    };
  }

  private item(type: string, row: { timeline_uuid: string; user_uuid: string; created_at: string; updated_at: string }, content: object) {
    return { type, created_at: row.created_at, updated_at: row.updated_at, user: this.actor(row.user_uuid), timeline: { uuid: row.timeline_uuid }, content };
  }

  message(row: MessageRow) {
    return this.item('message', row, { uuid: row.uuid, body: row.body });
  }

  asset(row: AssetRow) {
    return this.item('asset', row, {
      uuid: row.uuid,
      description: row.description,
      file: {
        filename: row.filename,
        byte_size: row.byte_size,
        content_type: row.content_type,
        checksum: row.checksum,
        url: fileUrl(this.baseUrl, row),
      },
    });
  }

  task(row: TaskRow) {
    return this.item('task', row, { uuid: row.uuid, instructions: row.instructions, activate_at: row.activate_at, status: row.status });
  }

  endpoint(row: EndpointRow) {
    return {
      ...this.item('webhook_endpoint', row, {
        uuid: row.uuid,
        description: row.description,
        enabled: row.enabled === 1,
        ingest_url: `${this.baseUrl}/webhooks/${row.ingest_token}`,
        verification: { enabled: false, signature_header: 'X-Signature', verifier: 'hmac_sha256_hex' },
      }),
    };
  }

  /** An event has no author; its endpoint (the event's container) is embedded in full. */
  webhookEvent(row: WebhookEventRow, endpoint: EndpointRow) {
    return {
      type: 'webhook_event',
      created_at: row.created_at,
      updated_at: row.updated_at,
      timeline: { uuid: row.timeline_uuid },
      webhook_endpoint: { uuid: endpoint.uuid, ...this.endpoint(endpoint) },
      content: {
        uuid: row.uuid,
        content_type: row.content_type,
        headers: JSON.parse(row.headers) as Record<string, string>,
        payload: row.payload,
        ingest_token_at_receipt: row.ingest_token_at_receipt,
        verified_at_receipt: row.verified_at_receipt === 1,
      },
    };
  }

  session(row: SessionRow, currentUuid: string | undefined) {
    return {
      uuid: row.uuid,
      name: row.name,
      ip_address: row.ip_address,
      user_agent: row.user_agent,
      created_at: row.created_at,
      last_used_at: row.last_used_at,
      kind: row.kind,
      current: row.uuid === currentUuid,
    };
  }
}

export function actorOf(user: UserRow): Actor {
  return { uuid: user.uuid, handle: user.handle, name: user.name, kind: user.kind };
}

/** The file's download URL: unguessable, so it can be shown inline (an <img>) without a header. */
export function fileUrl(baseUrl: string, row: AssetRow): string {
  return `${baseUrl}/files/${row.file_token}/${encodeURIComponent(row.filename)}`;
}
