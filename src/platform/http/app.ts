import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { routePath } from 'hono/route';
import { newUuid } from '../ids.ts';
import { PlatformError, problemDocument } from '../problem.ts';
import type { PlatformContext, PlatformEnv, PlatformRuntime } from '../runtime.ts';
import { registerAuthRoutes } from '../routes/auth.ts';
import { registerContentRoutes } from '../routes/content.ts';
import { registerPage } from '../routes/page.ts';
import { registerTimelineRoutes } from '../routes/timelines.ts';
import { registerUserRoutes } from '../routes/users.ts';
import { registerWebhookRoutes } from '../routes/webhooks.ts';
import { isStorageFull, STORAGE_FULL_RETRY_SECONDS } from '../storage-full.ts';
import { createLogThrottle } from '../../util/log-throttle.ts';
import { bearerAuth } from './auth.ts';
import { assetTooLarge, tooLarge } from './body.ts';

/**
 * The platform's HTTP surface: the BaseCradle REST API, the unauthenticated webhook ingest,
 * the asset files, and the web page. Cross-cutting rules live here, once:
 * - a request whose Host is not this platform's is refused (a web page elsewhere cannot reach
 *   the API through DNS rebinding);
 * - every error leaves as a problem document; an unexpected one is logged with its request id
 *   and answered without its details;
 * - request bodies are bounded before they are read;
 * - the log names the route template, never the raw path (an ingest URL is a secret).
 */
export function createApp(rt: PlatformRuntime, allowedHosts: ReadonlySet<string>): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const auth = bearerAuth(rt);

  // Outermost, so it sees every answer: a refusal by the middleware below as much as a route's.
  const observe = rt.onAnswer;
  if (observe) {
    app.use('*', async (c, next) => {
      await next();
      // The route of the handler that answered (the last one run), not merely the last that matched.
      const route = routePath(c);
      const type = c.res.headers.get('content-type') ?? '';
      const body = /json|^text\//.test(type) ? await c.res.clone().text() : undefined;
      const url = new URL(c.req.url);
      observe({ method: c.req.method, path: url.pathname + url.search, route: route === '*' || route === '/*' ? undefined : route, status: c.res.status, headers: c.res.headers, body });
    });
  }

  app.use('*', async (c, next) => {
    c.set('requestId', newUuid());
    const host = (c.req.header('host') ?? '').toLowerCase();
    if (!allowedHosts.has(host)) throw new PlatformError('not_found', `This platform does not answer for host "${host}".`);
    const started = Date.now();
    await next();
    rt.logger.debug('request', { method: c.req.method, route: routePath(c), status: c.res.status, ms: Date.now() - started });
  });

  app.use('*', async (c, next) => {
    const upload = c.req.method === 'POST' && /^\/timelines\/[^/]+\/assets$/.test(c.req.path);
    const limit = upload ? rt.maxAssetBytes + 64 * 1024 : rt.maxBodyBytes;
    return bodyLimit({ maxSize: limit, onError: () => { throw upload ? assetTooLarge(rt.maxAssetBytes) : tooLarge(limit); } })(c, next);
  });

  // A full disk refuses every write the same way for a while: a few lines say so, the rest are counted.
  const storageFull = createLogThrottle(rt.logger);
  app.onError((error, c) => {
    if (error instanceof PlatformError) return problemResponse(c, rt, error);
    if (isStorageFull(error)) {
      storageFull.log('error', 'request refused', { request: c.get('requestId'), route: routePath(c), reason: 'the disk is full', note: 'nothing was written; free space on the platform home' });
      const body = { type: 'https://basecradle.com/docs/api#error-storage-full', title: 'Storage full', status: 503, code: 'storage_full', detail: "The platform's disk is full, so nothing was written. Try again shortly.", instance: c.get('requestId') };
      return c.body(JSON.stringify(body), 503, { 'content-type': 'application/problem+json', 'retry-after': String(STORAGE_FULL_RETRY_SECONDS) });
    }
    rt.logger.error('request failed', { request: c.get('requestId'), route: routePath(c), error: error.message });
    const body = { type: 'https://basecradle.com/docs/api#error-internal', title: 'Internal error', status: 500, code: 'internal', detail: 'The platform failed to answer this request; its log names the request.', instance: c.get('requestId') };
    return c.body(JSON.stringify(body), 500, { 'content-type': 'application/problem+json' });
  });

  app.notFound((c) => {
    const path = c.req.path.startsWith('/webhooks/') ? '/webhooks/…' : c.req.path;
    return problemResponse(c, rt, new PlatformError('not_found', `No route ${c.req.method} ${path} on this platform.`));
  });

  registerPage(app, rt);
  registerAuthRoutes(app, rt, auth);
  registerUserRoutes(app, rt, auth);
  registerTimelineRoutes(app, rt, auth);
  registerContentRoutes(app, rt, auth);
  registerWebhookRoutes(app, rt, auth);
  return app;
}

function problemResponse(c: PlatformContext, rt: PlatformRuntime, error: PlatformError): Response {
  if (error.retryAfter !== undefined) c.header('Retry-After', String(error.retryAfter));
  const instance = c.get('requestId') ?? newUuid();
  return c.body(JSON.stringify(problemDocument(error, instance)), error.status as 400, { 'content-type': 'application/problem+json' });
}
