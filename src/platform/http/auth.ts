import type { MiddlewareHandler } from 'hono';
import { sessionForToken, touchSession } from '../data/sessions.ts';
import { findUser } from '../data/users.ts';
import { PlatformError } from '../problem.ts';
import type { PlatformEnv, PlatformRuntime } from '../runtime.ts';

/**
 * `Authorization: Bearer <token>` on every authenticated route. A missing, malformed, revoked
 * or unknown token is 401 unauthorized (the same answer for each, so a probe learns nothing);
 * a suspended account's token is 403 account_suspended. With a rate limit set, each token gets
 * that many requests a minute and then 429 rate_limited with Retry-After.
 */
export function bearerAuth(rt: PlatformRuntime): MiddlewareHandler<PlatformEnv> {
  const windows = new Map<string, { start: number; count: number }>();
  return async (c, next) => {
    const header = c.req.header('authorization') ?? '';
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    const session = match ? sessionForToken(rt.db, match[1]!) : undefined;
    const user = session ? findUser(rt.db, session.user_uuid) : undefined;
    if (!session || !user) {
      c.header('WWW-Authenticate', 'Bearer');
      throw new PlatformError('unauthorized', match ? 'The access token is not valid (revoked, or never issued).' : 'Send "Authorization: Bearer <token>" with this request.');
    }
    if (user.suspended) throw new PlatformError('account_suspended', `The account @${user.handle} is suspended.`);
    if (rt.rateLimitPerMinute !== undefined) {
      const now = Date.now();
      const window = windows.get(session.uuid);
      if (!window || now - window.start >= 60_000) windows.set(session.uuid, { start: now, count: 1 });
      else if (++window.count > rt.rateLimitPerMinute) {
        const retryAfter = Math.max(1, Math.ceil((window.start + 60_000 - now) / 1000));
        throw new PlatformError('rate_limited', `More than ${rt.rateLimitPerMinute} requests this minute; retry in ${retryAfter} s.`, { retryAfter });
      }
    }
    touchSession(rt.db, session);
    c.set('session', session);
    c.set('user', user);
    await next();
  };
}
