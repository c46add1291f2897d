import type { Database } from '../../store/database.ts';
import { newApiToken, newUuid, nowIso, tokenHash } from '../ids.ts';
import { secureEqual } from '../../util/secure-compare.ts';
import type { UserRow } from './users.ts';

/**
 * A session is one credential a user holds. The token itself is returned once, when it is
 * minted, and never stored or logged: the database keeps its SHA-256 only.
 */
export interface SessionRow {
  uuid: string;
  user_uuid: string;
  token_sha256: string;
  name: string | null;
  kind: 'api' | 'web';
  ip_address: string | null;
  user_agent: string | null;
  created_at: string;
  last_used_at: string;
}

export interface MintedSession {
  token: string;
  session: SessionRow;
}

export function mintSession(
  db: Database,
  user: UserRow,
  details: { name?: string | null; ipAddress?: string | null; userAgent?: string | null } = {},
): MintedSession {
  const token = newApiToken();
  const at = nowIso();
  const session: SessionRow = {
    uuid: newUuid(),
    user_uuid: user.uuid,
    token_sha256: tokenHash(token),
    name: details.name ?? null,
    kind: 'api',
    ip_address: details.ipAddress ?? null,
    user_agent: details.userAgent ?? null,
    created_at: at,
    // Minting is the credential's first use: the field is never null on the wire.
    last_used_at: at,
  };
  db.prepare(
    `INSERT INTO sessions (uuid, user_uuid, token_sha256, name, kind, ip_address, user_agent, created_at, last_used_at)
     VALUES (:uuid, :user_uuid, :token_sha256, :name, :kind, :ip_address, :user_agent, :created_at, :last_used_at)`,
  ).run({ ...session });
  return { token, session };
}

/**
 * The session a bearer token belongs to. The row is found by the token's hash, then the hash
 * is compared again in constant time, so nothing about a wrong token depends on how much of it
 * matched.
 */
export function sessionForToken(db: Database, token: string): SessionRow | undefined {
  const hash = tokenHash(token);
  const row = db.prepare('SELECT * FROM sessions WHERE token_sha256 = ?').get(hash) as SessionRow | undefined;
  return row && secureEqual(row.token_sha256, hash) ? row : undefined;
}

/** Recorded at most once a minute per session: a busy agent would otherwise write on every read. */
export function touchSession(db: Database, session: SessionRow): void {
  if (Date.now() - Date.parse(session.last_used_at) < 60_000) return;
  db.prepare('UPDATE sessions SET last_used_at = ? WHERE uuid = ?').run(nowIso(), session.uuid);
}

export function deleteSession(db: Database, uuid: string): void {
  db.prepare('DELETE FROM sessions WHERE uuid = ?').run(uuid);
}

export function deleteSessionsOf(db: Database, userUuid: string): void {
  db.prepare('DELETE FROM sessions WHERE user_uuid = ?').run(userUuid);
}
