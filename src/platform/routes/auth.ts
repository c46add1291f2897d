import type { Hono, MiddlewareHandler } from 'hono';
import { getConnInfo } from '@hono/node-server/conninfo';
import { transaction } from '../../store/database.ts';
import { deleteSession, deleteSessionsOf, mintSession, type SessionRow } from '../data/sessions.ts';
import { findUserByEmail } from '../data/users.ts';
import { blank, jsonBody, stringField } from '../http/body.ts';
import { isUuid, nowIso } from '../ids.ts';
import { acceptablePassword } from '../passwords.ts';
import { listPage } from '../pagination.ts';
import { PlatformError, invalid } from '../problem.ts';
import { type PlatformEnv, type PlatformRuntime, wireFor } from '../runtime.ts';
import { visibleName } from '../visible-names.ts';
import { Wire } from '../wire.ts';

/**
 * Credentials: minting a token from email + password (`POST /session`), signing out, changing
 * one's password, and a user's own sessions (strictly self-scoped: another user's session is a 404).
 *
 * Every check of a password an account holds goes through the sign-in throttle under that
 * account, whichever route asks: a stolen token does not buy unthrottled guesses at the password.
 */
export function registerAuthRoutes(app: Hono<PlatformEnv>, rt: PlatformRuntime, auth: MiddlewareHandler<PlatformEnv>): void {
  app.post('/session', async (c) => {
    const body = await jsonBody(c);
    const email = stringField(body, 'email_address');
    const password = stringField(body, 'password');
    if (!email || !password) throw invalid({ ...(email ? {} : { email_address: [blank(body)] }), ...(password ? {} : { password: [blank(body)] }) });
    const name = stringField(body, 'name')?.trim() || null;
    if (name) visibleName('name', name);
    const address = remoteAddress(c);
    const admitted = rt.signIns.admit(email, address);
    if (!admitted.attempt) {
      const retryAfter = admitted.retryAfterSeconds;
      throw new PlatformError('rate_limited', `Too many failed sign-ins for this account or from this address; try again in ${retryAfter} s.`, { retryAfter });
    }
    const user = findUserByEmail(rt.db, email);
    // The same answer, after the same work, for an unknown address and a wrong password: nothing says which it was.
    let matches = false;
    try {
      matches = await rt.passwords.verify(password, user?.password_hash);
    } finally {
      admitted.attempt.settle(matches);
    }
    if (!matches || !user) throw new PlatformError('invalid_credentials', 'The email address or password is incorrect.');
    if (user.suspended) throw new PlatformError('account_suspended', 'This account is suspended and cannot sign in.');
    const minted = mintSession(rt.db, user, {
      name,
      ipAddress: address,
      userAgent: c.req.header('user-agent') ?? null,
    });
    const wire = new Wire(rt.db, rt.baseUrl, user);
    return c.json({ token: minted.token, session: wire.session(minted.session, minted.session.uuid), start_here: `${rt.baseUrl}/users/dashboard.md` }, 201);
  });

  // The SDK's change_password: {current_password, password, password_confirmation}. Knowing the
  // current password authorizes it (a token alone does not), and it signs no session out.
  app.patch('/users/password', auth, async (c) => {
    const me = c.get('user');
    const body = await jsonBody(c);
    const fields = { current_password: stringField(body, 'current_password'), password: stringField(body, 'password'), password_confirmation: stringField(body, 'password_confirmation') };
    const missing = Object.entries(fields).filter(([, value]) => !value);
    if (missing.length > 0) throw invalid(Object.fromEntries(missing.map(([field]) => [field, [blank(body)]])));
    const { current_password: current, password, password_confirmation: confirmation } = fields as Record<keyof typeof fields, string>;
    if (confirmation !== password) {
      throw new PlatformError('password_confirmation_mismatch', 'The password confirmation does not match the new password.', { errors: { password_confirmation: ["doesn't match Password"] } });
    }
    acceptablePassword(password);
    const admitted = rt.signIns.admit(me.email ?? me.uuid, remoteAddress(c));
    if (!admitted.attempt) {
      const retryAfter = admitted.retryAfterSeconds;
      throw new PlatformError('rate_limited', `Too many wrong passwords for this account or from this address; try again in ${retryAfter} s.`, { retryAfter });
    }
    let matches = false;
    try {
      matches = await rt.passwords.verify(current, me.password_hash);
    } finally {
      admitted.attempt.settle(matches);
    }
    if (!matches) {
      const detail = me.password_hash ? 'The current password is incorrect.' : 'This account has no password (it signs in with tokens only), so there is none to change.';
      throw new PlatformError('current_password_incorrect', detail, { errors: { current_password: ['is incorrect'] } });
    }
    const hash = await rt.passwords.hash(password);
    // Only over the hash that was checked: a change that landed meanwhile makes this one's current password wrong.
    const changed = rt.db.prepare('UPDATE users SET password_hash = ?, updated_at = ? WHERE uuid = ? AND password_hash = ?').run(hash, nowIso(), me.uuid, me.password_hash);
    if (Number(changed.changes) !== 1) throw new PlatformError('current_password_incorrect', 'The password was changed meanwhile; the current password is no longer this one.', { errors: { current_password: ['is incorrect'] } });
    return c.body(null, 204);
  });

  app.delete('/session', auth, (c) => {
    deleteSession(rt.db, c.get('session').uuid);
    return c.body(null, 204);
  });

  app.get('/users/sessions', auth, (c) => {
    const page = listPage<SessionRow>(rt.db, { table: 'sessions', where: ['user_uuid = :user'], params: { user: c.get('user').uuid }, before: c.req.query('before') });
    const wire = wireFor(rt, c);
    return c.json({ sessions: page.rows.map((row) => wire.session(row, c.get('session').uuid)), next_cursor: page.nextCursor });
  });

  // Revoking everything includes the token of this very request: its next use is a 401.
  app.delete('/users/sessions', auth, (c) => {
    deleteSessionsOf(rt.db, c.get('user').uuid);
    return c.body(null, 204);
  });

  app.delete('/users/sessions/:id', auth, (c) => {
    const id = c.req.param('id');
    transaction(rt.db, () => {
      const row = isUuid(id) ? (rt.db.prepare('SELECT user_uuid FROM sessions WHERE uuid = ?').get(id) as { user_uuid: string } | undefined) : undefined;
      if (!row || row.user_uuid !== c.get('user').uuid) throw new PlatformError('not_found', `You have no session ${id}.`);
      deleteSession(rt.db, id);
    });
    return c.body(null, 204);
  });
}

function remoteAddress(c: Parameters<typeof getConnInfo>[0]): string | null {
  try {
    return getConnInfo(c).remote.address ?? null;
  } catch {
    return null;
  }
}
