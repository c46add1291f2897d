import type { Hono, MiddlewareHandler } from 'hono';
import { getConnInfo } from '@hono/node-server/conninfo';
import { transaction } from '../../store/database.ts';
import { deleteSession, deleteSessionsOf, mintSession, type SessionRow } from '../data/sessions.ts';
import { findUserByEmail } from '../data/users.ts';
import { blank, jsonBody, stringField } from '../http/body.ts';
import { isUuid } from '../ids.ts';
import { listPage } from '../pagination.ts';
import { PlatformError, invalid } from '../problem.ts';
import { type PlatformEnv, type PlatformRuntime, wireFor } from '../runtime.ts';
import { visibleName } from '../visible-names.ts';
import { Wire } from '../wire.ts';

/**
 * Credentials: minting a token from email + password (`POST /session`), signing out, and a
 * user's own sessions (strictly self-scoped: another user's session is a 404).
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
