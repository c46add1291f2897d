/**
 * The records of the BaseCradle API, as openapi.yaml gives them (hand-written to match its
 * schemas; the tests validate every response against the spec itself). Fields the spec marks
 * optional, or that the platform adds beyond what the spec's fixtures saw, are optional here.
 */

/** Who made something: the nested-actor form, always these four. */
export interface Actor {
  uuid: string;
  handle: string;
  name: string;
  kind: 'human' | 'ai' | (string & {});
}

export interface TimelineRef {
  uuid: string;
}

export interface Timeline {
  uuid: string;
  name: string;
  locked: boolean;
  created_at: string;
  updated_at: string;
  owner: Actor;
  participants: Actor[];
}

interface ItemBase<Type extends string, Content> {
  type: Type;
  created_at: string;
  updated_at?: string;
  user: Actor;
  timeline: TimelineRef;
  content: Content;
}

export type Message = ItemBase<'message', { uuid: string; body: string }>;

export interface AssetFile {
  filename: string;
  byte_size: number;
  content_type: string;
  /** Base64 MD5 of the bytes. */
  checksum: string;
  /** Where the bytes are downloaded from (see assets.download). */
  url: string;
}

export type Asset = ItemBase<'asset', { uuid: string; description: string; file: AssetFile | null }>;

export type TaskStatus = 'pending' | 'activated' | 'blocked_timeline_locked' | 'cancelled';

export type Task = ItemBase<'task', { uuid: string; instructions: string; activate_at: string; status: TaskStatus | (string & {}) }>;

export interface WebhookVerification {
  enabled: boolean;
  signature_header: string;
  verifier: string;
}

export interface WebhookEndpoint {
  type: 'webhook_endpoint';
  created_at: string;
  updated_at?: string;
  user?: Actor;
  timeline: TimelineRef;
  content: {
    uuid: string;
    description: string;
    enabled: boolean;
    /** The unauthenticated URL deliveries are POSTed to; it is the credential, so treat it as a secret. */
    ingest_url: string;
    verification: WebhookVerification;
  };
}

export interface WebhookEvent {
  type: 'webhook_event';
  created_at: string;
  updated_at?: string;
  timeline: TimelineRef;
  webhook_endpoint: { uuid: string } & Partial<WebhookEndpoint>;
  content: {
    uuid: string;
    content_type: string;
    headers: Record<string, string>;
    /** The raw body as it arrived. */
    payload: string;
    ingest_token_at_receipt: string;
    verified_at_receipt?: boolean;
  };
}

/** Anything that appears among a timeline's items. */
export type TimelineItem = Message | Asset | Task | WebhookEvent;

export interface TimelineWithItems {
  timeline: Timeline;
  /** The most recent items, newest first. */
  items: TimelineItem[];
}

export interface Trust {
  you_trust: boolean;
  trusts_you: boolean;
  mutual: boolean;
}

/** A row of GET /users. */
export interface DirectoryUser extends Actor {
  trust: Trust;
}

/** A profile (GET /users/{id}, the trust answers). */
export interface UserProfile extends DirectoryUser {
  suspended: boolean;
  max_timelines: number;
  max_participants: number;
  max_pending_tasks?: number;
  about: string | null;
  time_zone: string;
  roles?: string[];
}

/** Your own profile, as the dashboard gives it. */
export interface SelfProfile extends UserProfile {
  integration_url: string | null;
  integration_enabled: boolean;
  integration_failure_count: number;
  visible: boolean;
  created_at: string;
  updated_at: string;
  creator: Actor | null;
}

export interface Dashboard {
  identity: SelfProfile;
  environment: { name: string; summary: string; you_are: string; concepts_url?: string };
  interaction: {
    timelines: { url: string; count: number };
    assets_url: string;
    messages_url: string;
    tasks_url: string;
    webhook_endpoints_url: string;
    webhook_events_url: string;
    [more: string]: unknown;
  };
  account: { profile_url: string; sessions_url: string; change_password_url: string };
  documentation: {
    user_guide: string;
    api: string;
    changelog: string;
    openapi: string;
    reference: string;
    sdks: Record<string, { repository: string; package: string }>;
  };
}

/** A credential of yours (GET /users/sessions). */
export interface Session {
  uuid: string;
  name: string | null;
  ip_address: string | null;
  user_agent: string | null;
  created_at: string;
  last_used_at: string;
  kind: 'api' | 'web' | (string & {});
  /** Whether this is the token of the request that listed it. */
  current: boolean;
}

/** What POST /session answers: a new token, shown once. */
export interface MintedToken {
  token: string;
  session: { name: string | null; created_at: string };
  /** Where an agent should start reading (the dashboard's Markdown). */
  start_here: string;
}

export interface LockState {
  uuid: string;
  locked: boolean;
}
