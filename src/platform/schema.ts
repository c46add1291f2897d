import type { Migration } from '../store/database.ts';

/**
 * The local platform's database (`<home>/platform.db`). Forward-only migrations; every
 * record's primary key is a UUIDv7 (src/platform/ids.ts), so ORDER BY uuid is creation order.
 * Deleting a timeline cascades to everything on it (foreign keys are on in every store).
 * Secrets are never stored: tokens as their SHA-256, passwords as scrypt hashes; webhook
 * signing keys live only in the serving process's configuration.
 */
export const PLATFORM_MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE users (
     uuid TEXT PRIMARY KEY,
     handle TEXT NOT NULL UNIQUE COLLATE NOCASE,
     name TEXT NOT NULL,
     kind TEXT NOT NULL CHECK (kind IN ('human', 'ai')),
     email TEXT UNIQUE COLLATE NOCASE,
     password_hash TEXT,
     roles TEXT NOT NULL DEFAULT '[]',
     suspended INTEGER NOT NULL DEFAULT 0,
     visible INTEGER NOT NULL DEFAULT 1,
     time_zone TEXT NOT NULL DEFAULT 'UTC',
     max_timelines INTEGER NOT NULL,
     max_participants INTEGER NOT NULL,
     max_pending_tasks INTEGER NOT NULL,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL
   );
   CREATE TABLE sessions (
     uuid TEXT PRIMARY KEY,
     user_uuid TEXT NOT NULL REFERENCES users(uuid) ON DELETE CASCADE,
     token_sha256 TEXT NOT NULL UNIQUE,
     name TEXT,
     kind TEXT NOT NULL DEFAULT 'api',
     ip_address TEXT,
     user_agent TEXT,
     created_at TEXT NOT NULL,
     last_used_at TEXT NOT NULL
   );
   CREATE INDEX sessions_by_user ON sessions(user_uuid, uuid);
   CREATE TABLE trust (
     truster_uuid TEXT NOT NULL REFERENCES users(uuid) ON DELETE CASCADE,
     trustee_uuid TEXT NOT NULL REFERENCES users(uuid) ON DELETE CASCADE,
     created_at TEXT NOT NULL,
     PRIMARY KEY (truster_uuid, trustee_uuid)
   ) WITHOUT ROWID;
   CREATE TABLE timelines (
     uuid TEXT PRIMARY KEY,
     name TEXT NOT NULL,
     owner_uuid TEXT NOT NULL REFERENCES users(uuid),
     locked INTEGER NOT NULL DEFAULT 0,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL
   );
   CREATE INDEX timelines_by_owner ON timelines(owner_uuid, uuid);
   CREATE TABLE participations (
     timeline_uuid TEXT NOT NULL REFERENCES timelines(uuid) ON DELETE CASCADE,
     user_uuid TEXT NOT NULL REFERENCES users(uuid) ON DELETE CASCADE,
     created_at TEXT NOT NULL,
     PRIMARY KEY (timeline_uuid, user_uuid)
   ) WITHOUT ROWID;
   CREATE INDEX participations_by_user ON participations(user_uuid, timeline_uuid);
   CREATE TABLE messages (
     uuid TEXT PRIMARY KEY,
     timeline_uuid TEXT NOT NULL REFERENCES timelines(uuid) ON DELETE CASCADE,
     user_uuid TEXT NOT NULL REFERENCES users(uuid),
     body TEXT NOT NULL,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL
   );
   CREATE INDEX messages_by_timeline ON messages(timeline_uuid, uuid);
   CREATE TABLE assets (
     uuid TEXT PRIMARY KEY,
     timeline_uuid TEXT NOT NULL REFERENCES timelines(uuid) ON DELETE CASCADE,
     user_uuid TEXT NOT NULL REFERENCES users(uuid),
     description TEXT NOT NULL,
     filename TEXT NOT NULL,
     content_type TEXT NOT NULL,
     byte_size INTEGER NOT NULL,
     checksum TEXT NOT NULL,
     file_token TEXT NOT NULL UNIQUE,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL
   );
   CREATE INDEX assets_by_timeline ON assets(timeline_uuid, uuid);
   CREATE TABLE tasks (
     uuid TEXT PRIMARY KEY,
     timeline_uuid TEXT NOT NULL REFERENCES timelines(uuid) ON DELETE CASCADE,
     user_uuid TEXT NOT NULL REFERENCES users(uuid),
     instructions TEXT NOT NULL,
     activate_at TEXT NOT NULL,
     activate_at_ms INTEGER NOT NULL,
     status TEXT NOT NULL CHECK (status IN ('pending', 'activated', 'blocked_timeline_locked', 'cancelled')),
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL
   );
   CREATE INDEX tasks_by_timeline ON tasks(timeline_uuid, uuid);
   CREATE INDEX tasks_due ON tasks(status, activate_at_ms);
   CREATE TABLE webhook_endpoints (
     uuid TEXT PRIMARY KEY,
     timeline_uuid TEXT NOT NULL REFERENCES timelines(uuid) ON DELETE CASCADE,
     user_uuid TEXT NOT NULL REFERENCES users(uuid),
     description TEXT NOT NULL,
     enabled INTEGER NOT NULL DEFAULT 1,
     ingest_token TEXT NOT NULL UNIQUE,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL
   );
   CREATE INDEX webhook_endpoints_by_timeline ON webhook_endpoints(timeline_uuid, uuid);
   CREATE TABLE webhook_events (
     uuid TEXT PRIMARY KEY,
     timeline_uuid TEXT NOT NULL REFERENCES timelines(uuid) ON DELETE CASCADE,
     endpoint_uuid TEXT NOT NULL REFERENCES webhook_endpoints(uuid) ON DELETE CASCADE,
     content_type TEXT NOT NULL,
     headers TEXT NOT NULL,
     payload TEXT NOT NULL,
     ingest_token_at_receipt TEXT NOT NULL,
     verified_at_receipt INTEGER NOT NULL DEFAULT 0,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL
   );
   CREATE INDEX webhook_events_by_timeline ON webhook_events(timeline_uuid, uuid);
   CREATE INDEX webhook_events_by_endpoint ON webhook_events(endpoint_uuid, uuid);
   CREATE TABLE idempotency_keys (
     timeline_uuid TEXT NOT NULL REFERENCES timelines(uuid) ON DELETE CASCADE,
     user_uuid TEXT NOT NULL,
     kind TEXT NOT NULL,
     key TEXT NOT NULL,
     record_uuid TEXT NOT NULL,
     created_at TEXT NOT NULL,
     PRIMARY KEY (timeline_uuid, user_uuid, kind, key)
   ) WITHOUT ROWID;
   CREATE TABLE deliveries (
     uuid TEXT PRIMARY KEY,
     event TEXT NOT NULL,
     timeline_uuid TEXT NOT NULL,
     recipient_uuid TEXT NOT NULL,
     target_url TEXT NOT NULL,
     body TEXT NOT NULL,
     state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
     attempts INTEGER NOT NULL DEFAULT 0,
     next_attempt_ms INTEGER NOT NULL,
     last_status INTEGER,
     last_error TEXT,
     created_at TEXT NOT NULL,
     delivered_at TEXT
   );
   CREATE INDEX deliveries_due ON deliveries(state, next_attempt_ms);
   CREATE INDEX deliveries_by_recipient ON deliveries(recipient_uuid, state);`,
];
