import { existsSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { AcxError } from '../core/errors.ts';
import { createLogger, type Logger } from '../util/logger.ts';
import { findUser } from './data/users.ts';
import { Deliverer } from './delivery.ts';
import { openPlatformDb, platformHome } from './home.ts';
import { createApp } from './http/app.ts';
import { serveApp } from './http/node-listener.ts';
import { type PasswordKdf, Passwords } from './passwords.ts';
import type { PlatformAnswer, PlatformRuntime } from './runtime.ts';
import { SignInThrottle, type SignInThrottleOptions } from './sign-in-throttle.ts';
import { TaskScheduler } from './scheduler.ts';

export interface PlatformOptions {
  /** The platform home: platform.db and the asset files. */
  home: string;
  /** Default 4700; 0 picks a free port. */
  port?: number;
  /** Default 127.0.0.1: the platform is reachable from this machine only unless told otherwise. */
  host?: string;
  /** The URL peers reach it at, when that is not http://<host>:<port> (a proxy in front). */
  publicUrl?: string;
  /** Where every event delivery is POSTed (routers). */
  deliverTo?: readonly string[];
  /** Signs deliveries to recipients with no key of their own. */
  webhookSecret?: string;
  /** Per-agent signing keys, by handle (case-insensitive); they win over webhookSecret. */
  webhookSecrets?: Readonly<Record<string, string>>;
  logger?: Logger;
  maxAssetBytes?: number;
  maxBodyBytes?: number;
  rateLimitPerMinute?: number;
  /** Failed POST /session sign-ins per account and per address (sign-in-throttle.ts; defaults there). */
  signInThrottle?: Partial<SignInThrottleOptions>;
  /** The password KDF: node:crypto's async scrypt unless a test wraps it (to count or hold its calls). */
  passwordKdf?: PasswordKdf;
  delivery?: { maxAttempts?: number; retryBaseMs?: number; maxBackoffMs?: number; timeoutMs?: number };
  /** Sees every answer before it is sent (the tests hold each one to openapi.yaml). Costs nothing unset. */
  onAnswer?: (answer: PlatformAnswer) => void;
}

export interface RunningPlatform {
  /** e.g. http://127.0.0.1:4700 */
  url: string;
  port: number;
  home: string;
  close(): Promise<void>;
}

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];

/**
 * Starts the embedded platform: opens (or creates) its home, listens, activates tasks on time
 * and sends the delivery outbox. Everything it needs to resume (pending tasks, undelivered
 * events) is in the database, so a restart picks up where the last process stopped.
 */
export async function startPlatform(options: PlatformOptions): Promise<RunningPlatform> {
  const logger = options.logger ?? createLogger();
  const host = options.host ?? '127.0.0.1';
  const subscribers = (options.deliverTo ?? []).map(checkedSubscriber);
  const publicUrl = options.publicUrl === undefined ? undefined : checkedUrl(options.publicUrl, '--public-url');
  const home = platformHome(options.home);
  const db = openPlatformDb(home);
  sweepOrphanedAssets(db, home.assetsDir);

  const server = createServer();
  const port = await listen(server, options.port ?? 4700, host).catch((error: NodeJS.ErrnoException) => {
    db.close();
    if (error.code === 'EADDRINUSE') throw new AcxError('usage', `Port ${options.port} on ${host} is already in use.`, { hint: 'Pick another --port, or --port 0 for a free one.' });
    throw error;
  });
  const baseUrl = (publicUrl ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/+$/, '');
  const allowedHosts = new Set([...LOOPBACK_NAMES.map((name) => `${name}:${port}`), `${host}:${port}`, new URL(baseUrl).host]);

  const secrets = new Map(Object.entries(options.webhookSecrets ?? {}).map(([handle, secret]) => [handle.toLowerCase(), secret]));
  const signingKey = (recipient: string): string | undefined => {
    const user = findUser(db, recipient);
    return (user && secrets.get(user.handle.toLowerCase())) || options.webhookSecret || undefined;
  };
  const deliverer = new Deliverer(db, { signingKey, logger, ...options.delivery });
  const outbox = { subscribers, baseUrl };
  const scheduler = new TaskScheduler(db, outbox, () => deliverer.kick(), logger);
  const rt: PlatformRuntime = {
    db,
    home,
    baseUrl,
    logger,
    outbox,
    maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024,
    maxAssetBytes: options.maxAssetBytes ?? 25 * 1024 * 1024,
    passwords: new Passwords(options.passwordKdf),
    signIns: new SignInThrottle(options.signInThrottle),
    rateLimitPerMinute: options.rateLimitPerMinute,
    canSignFor: (user) => signingKey(user) !== undefined,
    kickDeliveries: () => deliverer.kick(),
    kickTasks: () => scheduler.kick(),
    onAnswer: options.onAnswer,
  };
  const app = createApp(rt, allowedHosts);
  serveApp(server, app.fetch);
  scheduler.kick();
  deliverer.kick();
  logger.info('platform listening', { url: baseUrl, home: home.dir, subscribers: subscribers.length });
  if (subscribers.length > 0 && !options.webhookSecret && secrets.size === 0) {
    logger.warn('platform deliveries unsigned', { reason: 'no webhook secret is set, so no delivery can be signed and none will be sent; set ACX_PLATFORM_WEBHOOK_SECRET' });
  }

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      scheduler.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await deliverer.stop();
      db.close();
    })());
  return { url: baseUrl, port, home: home.dir, close };
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : port);
    });
  });
}

function checkedUrl(value: string, what: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new AcxError('usage', `${what} must be an http(s) URL, not "${value}".`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new AcxError('usage', `${what} must be an http(s) URL, not "${value}".`);
  return url.href.replace(/\/+$/, '');
}

const checkedSubscriber = (value: string): string => checkedUrl(value, '--deliver-to');

/** Asset folders of timelines that are gone (deleted while the process died before removing them). */
function sweepOrphanedAssets(db: PlatformRuntime['db'], assetsDir: string): void {
  if (!existsSync(assetsDir)) return;
  const exists = db.prepare('SELECT 1 FROM timelines WHERE uuid = ?');
  for (const name of readdirSync(assetsDir)) {
    if (exists.get(name) === undefined) rmSync(join(assetsDir, name), { recursive: true, force: true });
  }
}
