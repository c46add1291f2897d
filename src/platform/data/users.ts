import type { Database } from '../../store/database.ts';
import { newUuid, nowIso } from '../ids.ts';
import type { PasswordHash } from '../passwords.ts';
import { invalid } from '../problem.ts';
import { hiddenCharacterProblem } from '../visible-names.ts';

/** A user as stored: human or AI, the same account either way (peers, not tools). */
export interface UserRow {
  uuid: string;
  handle: string;
  name: string;
  kind: 'human' | 'ai';
  email: string | null;
  password_hash: string | null;
  roles: string;
  suspended: number;
  visible: number;
  time_zone: string;
  max_timelines: number;
  max_participants: number;
  max_pending_tasks: number;
  created_at: string;
  updated_at: string;
}

export interface NewUser {
  handle: string;
  kind: 'human' | 'ai';
  name?: string;
  email?: string;
  /** With email, enables password sign-in; made by Passwords.hash (off the event loop), never plaintext. */
  passwordHash?: PasswordHash;
  admin?: boolean;
}

/** The caps a new account gets. A local platform is generous; the caps still hold. */
export const DEFAULT_LIMITS = { maxTimelines: 100, maxParticipants: 20, maxPendingTasks: 50 } as const;

/** A handle is how peers name each other (`@nova`): letters, digits, `_` and `-`, up to 30. */
export const HANDLE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,29}$/;
const EMAIL = /^[^\s@]+@[^\s@]+$/;

/** Checks a new user and inserts it; every problem with the input is reported at once. */
export function insertUser(db: Database, input: NewUser): UserRow {
  const handle = input.handle.replace(/^@/, '');
  const errors: Record<string, string[]> = {};
  if (!HANDLE.test(handle)) errors.handle = ['must be 1-30 letters, digits, "_" or "-", starting with a letter or digit'];
  else if (findUserByHandle(db, handle)) errors.handle = [`"${handle}" is already taken`];
  if (input.kind !== 'human' && input.kind !== 'ai') errors.kind = ['must be "human" or "ai"'];
  const hiddenInName = input.name === undefined ? undefined : hiddenCharacterProblem(input.name);
  if (hiddenInName) errors.name = [hiddenInName];
  if (input.email !== undefined && !EMAIL.test(input.email)) errors.email = ['is not an email address'];
  else if (input.email !== undefined && db.prepare('SELECT 1 FROM users WHERE email = ?').get(input.email)) errors.email = ['is already taken'];
  if ((input.email === undefined) !== (input.passwordHash === undefined)) errors.password = ['and email go together: give both or neither'];
  if (Object.keys(errors).length > 0) throw invalid(errors);
  const at = nowIso();
  const row: UserRow = {
    uuid: newUuid(),
    handle,
    name: input.name?.trim() || handle,
    kind: input.kind,
    email: input.email ?? null,
    password_hash: input.passwordHash ?? null,
    roles: JSON.stringify(input.admin ? ['admin'] : []),
    suspended: 0,
    visible: 1,
    time_zone: 'UTC',
    max_timelines: DEFAULT_LIMITS.maxTimelines,
    max_participants: DEFAULT_LIMITS.maxParticipants,
    max_pending_tasks: DEFAULT_LIMITS.maxPendingTasks,
    created_at: at,
    updated_at: at,
  };
  db.prepare(
    `INSERT INTO users (uuid, handle, name, kind, email, password_hash, roles, suspended, visible, time_zone,
       max_timelines, max_participants, max_pending_tasks, created_at, updated_at)
     VALUES (:uuid, :handle, :name, :kind, :email, :password_hash, :roles, :suspended, :visible, :time_zone,
       :max_timelines, :max_participants, :max_pending_tasks, :created_at, :updated_at)`,
  ).run({ ...row });
  return row;
}

export function findUser(db: Database, uuid: string): UserRow | undefined {
  return db.prepare('SELECT * FROM users WHERE uuid = ?').get(uuid) as UserRow | undefined;
}

export function findUserByHandle(db: Database, handle: string): UserRow | undefined {
  return db.prepare('SELECT * FROM users WHERE handle = ?').get(handle.replace(/^@/, '')) as UserRow | undefined;
}

export function findUserByEmail(db: Database, email: string): UserRow | undefined {
  return db.prepare('SELECT * FROM users WHERE email = ?').get(email) as UserRow | undefined;
}

export function listUsers(db: Database): UserRow[] {
  return db.prepare('SELECT * FROM users ORDER BY uuid').all() as unknown as UserRow[];
}

export const isAdmin = (user: UserRow): boolean => (JSON.parse(user.roles) as string[]).includes('admin');

/** Trust is directional in storage (each user grants only their own edge) and mutual at the gate. */
export interface TrustState {
  you_trust: boolean;
  trusts_you: boolean;
  mutual: boolean;
}

export function trusts(db: Database, truster: string, trustee: string): boolean {
  return db.prepare('SELECT 1 FROM trust WHERE truster_uuid = ? AND trustee_uuid = ?').get(truster, trustee) !== undefined;
}

/** `other` as `viewer` sees it. Toward yourself trust is axiomatically complete. */
export function trustBetween(db: Database, viewer: string, other: string): TrustState {
  if (viewer === other) return { you_trust: true, trusts_you: true, mutual: true };
  const you_trust = trusts(db, viewer, other);
  const trusts_you = trusts(db, other, viewer);
  return { you_trust, trusts_you, mutual: you_trust && trusts_you };
}

/** Adds `truster`'s edge toward `trustee`; idempotent. Trusting yourself is silently not stored. */
export function grantTrust(db: Database, truster: string, trustee: string): void {
  if (truster === trustee) return;
  db.prepare('INSERT OR IGNORE INTO trust (truster_uuid, trustee_uuid, created_at) VALUES (?, ?, ?)').run(truster, trustee, nowIso());
}

/** Removes `truster`'s edge; idempotent. Nobody is evicted from a timeline: the gate runs only on adding. */
export function revokeTrust(db: Database, truster: string, trustee: string): void {
  db.prepare('DELETE FROM trust WHERE truster_uuid = ? AND trustee_uuid = ?').run(truster, trustee);
}
