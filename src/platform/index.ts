import { type Database, transaction } from '../store/database.ts';
import { AcxError } from '../core/errors.ts';
import { mintSession } from './data/sessions.ts';
import { findUserByHandle, grantTrust, insertUser, listUsers, type NewUser, type UserRow } from './data/users.ts';
import { openPlatformDb, platformHome } from './home.ts';
import { type PasswordHash, passwords } from './passwords.ts';
import { PlatformError } from './problem.ts';

/**
 * The embedded local platform: a BaseCradle-compatible REST server on SQLite, its event
 * delivery, its task scheduler and its web page. A separate application (it imports only
 * util/ and store/) that acx's BaseCradle client happens to talk to.
 */
export { startPlatform, type PlatformOptions, type RunningPlatform } from './server.ts';
export { signBody } from './delivery.ts';
export type { PasswordHash } from './passwords.ts';
export type { PlatformAnswer } from './runtime.ts';

export interface AddedUser {
  uuid: string;
  handle: string;
  name: string;
  kind: 'human' | 'ai';
  /** Shown once; only its hash is stored. */
  token: string;
}

/**
 * A new user's password, checked and hashed (on the threadpool, as every password is) for
 * addUser's `passwordHash`. Too short is a usage error that says so.
 */
export async function hashPassword(password: string): Promise<PasswordHash> {
  try {
    return await passwords.hash(password);
  } catch (error) {
    throw asUsageError(error);
  }
}

/**
 * Creates a user in a platform home (the server may be running on it) and mints its first
 * token. `trust` names existing users to share mutual trust with, so an operator can put a
 * person and an agent on one timeline straight away.
 */
export function addUser(homeDir: string, input: NewUser & { trust?: readonly string[] }): AddedUser {
  return withHome(homeDir, (db) =>
    transaction(db, () => {
      const peers = (input.trust ?? []).map((handle) => existingUser(db, handle));
      const user = insertUser(db, input);
      for (const peer of peers) {
        grantTrust(db, user.uuid, peer.uuid);
        grantTrust(db, peer.uuid, user.uuid);
      }
      const { token } = mintSession(db, user, { name: 'acx platform user add' });
      return { uuid: user.uuid, handle: user.handle, name: user.name, kind: user.kind, token };
    }),
  );
}

/** Mints another token for an existing user (a lost token cannot be recovered, only replaced). */
export function mintToken(homeDir: string, handle: string, name = 'acx platform user token'): AddedUser {
  return withHome(homeDir, (db) => {
    const user = existingUser(db, handle);
    const { token } = mintSession(db, user, { name });
    return { uuid: user.uuid, handle: user.handle, name: user.name, kind: user.kind, token };
  });
}

/** Suspends (or reinstates) an account: a suspended user's tokens and password stop working, nothing is deleted. */
export function suspendUser(homeDir: string, handle: string, suspended = true): void {
  withHome(homeDir, (db) => {
    const user = existingUser(db, handle);
    db.prepare('UPDATE users SET suspended = ?, updated_at = ? WHERE uuid = ?').run(suspended ? 1 : 0, new Date().toISOString(), user.uuid);
  });
}

export interface ListedUser {
  uuid: string;
  handle: string;
  name: string;
  kind: 'human' | 'ai';
  admin: boolean;
  created_at: string;
}

export function listPlatformUsers(homeDir: string): ListedUser[] {
  return withHome(homeDir, (db) =>
    listUsers(db).map((u) => ({ uuid: u.uuid, handle: u.handle, name: u.name, kind: u.kind, admin: (JSON.parse(u.roles) as string[]).includes('admin'), created_at: u.created_at })),
  );
}

function existingUser(db: Database, handle: string): UserRow {
  const user = findUserByHandle(db, handle);
  if (!user) throw new AcxError('usage', `No user @${handle.replace(/^@/, '')} on this platform.`, { hint: 'Run `acx platform user list` to see who is there.' });
  return user;
}

/** Opens the home for one operation; a refusal of the input becomes a usage error that says what was wrong. */
function withHome<T>(homeDir: string, fn: (db: Database) => T): T {
  const db = openPlatformDb(platformHome(homeDir));
  try {
    return fn(db);
  } catch (error) {
    throw asUsageError(error);
  } finally {
    db.close();
  }
}

/** The platform's refusal of an operator's input, as a usage error that says what was wrong. */
function asUsageError(error: unknown): unknown {
  return error instanceof PlatformError ? new AcxError('usage', error.message, { cause: error }) : error;
}
