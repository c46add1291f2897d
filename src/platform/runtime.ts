import type { Context } from 'hono';
import type { Database } from '../store/database.ts';
import type { Logger } from '../util/logger.ts';
import type { SessionRow } from './data/sessions.ts';
import type { UserRow } from './data/users.ts';
import type { OutboxConfig } from './events.ts';
import type { PlatformHome } from './home.ts';
import type { Passwords } from './passwords.ts';
import type { SignInThrottle } from './sign-in-throttle.ts';
import { Wire } from './wire.ts';

/** What every route of the running platform shares. */
export interface PlatformRuntime {
  db: Database;
  home: PlatformHome;
  /** The URL peers reach this platform at; every link the API returns starts with it. */
  baseUrl: string;
  logger: Logger;
  outbox: OutboxConfig;
  maxBodyBytes: number;
  maxAssetBytes: number;
  passwords: Passwords;
  signIns: SignInThrottle;
  /** Requests per minute one token may make; undefined is unlimited. */
  rateLimitPerMinute: number | undefined;
  /** Whether deliveries to this user can be signed (a key is configured for them). */
  canSignFor(userUuid: string): boolean;
  /** Called after a commit that wrote to the outbox / created a task. */
  kickDeliveries(): void;
  kickTasks(): void;
  /** Sees every answer before it leaves (PlatformOptions.onAnswer); undefined in production. */
  onAnswer: ((answer: PlatformAnswer) => void) | undefined;
}

/** One answer of the platform, as an observer sees it. */
export interface PlatformAnswer {
  method: string;
  /** The path asked for, with its query. */
  path: string;
  /** The route template that answered (`/timelines/:timeline_id/messages`); undefined when no route matched. */
  route: string | undefined;
  status: number;
  headers: Headers;
  /** The body as text when it is JSON or text; undefined for a file or an empty body's stream. */
  body: string | undefined;
}

export interface PlatformEnv {
  Variables: {
    requestId: string;
    user: UserRow;
    session: SessionRow;
  };
}

export type PlatformContext = Context<PlatformEnv>;

/** The wire writer for the signed-in user's view. */
export const wireFor = (rt: PlatformRuntime, c: PlatformContext): Wire => new Wire(rt.db, rt.baseUrl, c.get('user'));
