import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkWebhookSignature, headerValue } from '../../channel/webhook-signature.ts';
import { openDatabase, type Database } from '../../store/database.ts';
import { errorMessage } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';
import type { WakeQueue } from '../worker/queue.ts';

/**
 * `acx router`: receives the platform's signed webhook deliveries and wakes the agent each is
 * addressed to, as the BaseCradle router does (FACTS.md): the signature checked over the raw
 * bytes in constant time, a delivery id seen before answered and ignored, wakes serialized per
 * agent, `acx wake <agent> --timeline <uuid>` run with BASECRADLE_DELIVERY_ID, a non-zero exit
 * retried (3 attempts, 0.5 s then 1 s apart) and every outcome recorded in router.db. A message
 * delivery for an agent and timeline that already has a message wake waiting in the queue joins
 * that wake (recorded as coalesced): in a burst, one process answers what piled up.
 */
export interface RoutedAgent {
  /** The agent's platform handle (its name in --agents). */
  name: string;
  /** Agent directory or cartridge, as `acx wake` takes it. */
  dir: string;
  /** The platform user it speaks as: its token, and its uuid (the deliveries' recipient_uuid). */
  token: string;
  uuid: string;
  /** The key its deliveries are signed with. */
  secret: string;
}

export interface RouterOptions {
  agents: readonly RoutedAgent[];
  /** The platform's base URL, for the wakes (a function when it is known only once the platform is up). */
  platformUrl: string | (() => string);
  /** router.db: the deliveries seen and what came of them. */
  databasePath: string;
  logger: Logger;
  port?: number;
  host?: string;
  /** The command a wake runs: default this Node on this acx's bin. Tests may point it elsewhere. */
  wakeCommand?: { command: string; args: readonly string[] };
  /** Environment for every wake (model keys, ACX_HOME …); each wake adds its own BASECRADLE_* values. */
  env?: NodeJS.ProcessEnv;
  /** Waits between attempts; default 500 ms then 1000 ms (three attempts). */
  retryDelaysMs?: readonly number[];
  /**
   * Enqueue each accepted delivery on this pg-boss queue for `acx worker` instead of running a
   * wake here: the signature check and the dedupe stay the router's, the wake, its retries and
   * its per-timeline serialization become the queue's.
   */
  queue?: WakeQueue;
}

export interface RunningRouter {
  url: string;
  port: number;
  /** Resolves when every wake queued so far has finished (tests). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

/** The events that wake the recipient; every other event is logged and ignored. */
export const WAKING_EVENTS: Readonly<Record<string, '--message' | '--asset' | '--task' | '--event'>> = {
  'message.created': '--message',
  'asset.created': '--asset',
  'task.activated': '--task',
  'webhook_event.received': '--event',
};

const MIGRATIONS = [
  `CREATE TABLE deliveries (
     delivery TEXT PRIMARY KEY, agent TEXT NOT NULL, event TEXT NOT NULL, timeline TEXT NOT NULL,
     state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, exit_code INTEGER, received_at TEXT NOT NULL, finished_at TEXT)`,
  // A delivery folded into a wake already queued for the same agent and timeline: that wake's delivery.
  `ALTER TABLE deliveries ADD COLUMN covered_by TEXT`,
];

const MAX_BODY_BYTES = 1024 * 1024;

interface Delivery {
  id: string;
  event: string;
  timeline: string;
  resource: string | undefined;
  agent: RoutedAgent;
}

export async function startRouter(options: RouterOptions): Promise<RunningRouter> {
  const { logger } = options;
  const db = openDatabase(options.databasePath, { migrations: MIGRATIONS });
  const byRecipient = new Map(options.agents.map((agent) => [agent.uuid, agent]));
  const queues = new Map<string, Promise<void>>();
  const delays = options.retryDelaysMs ?? [500, 1000];

  // Message wakes queued and not started yet, by agent and timeline: a later message there is
  // read by that wake anyway (it reads everything unseen when it starts, and the platform
  // records a message before it sends its delivery), so it joins it instead of costing a process.
  const waiting = new Map<string, Delivery>();
  const enqueue = (delivery: Delivery) => {
    if (options.queue) {
      queues.set(delivery.id, toQueue(options.queue, delivery));
      return;
    }
    const key = `${delivery.agent.name}\n${delivery.timeline}`;
    const covering = delivery.event === 'message.created' ? waiting.get(key) : undefined;
    if (covering) {
      db.prepare("UPDATE deliveries SET state = 'coalesced', covered_by = ? WHERE delivery = ?").run(covering.id, delivery.id);
      logger.info('router delivery coalesced', { agent: delivery.agent.name, delivery: delivery.id, timeline: delivery.timeline, into: covering.id });
      return;
    }
    if (delivery.event === 'message.created') waiting.set(key, delivery);
    const start = () => {
      if (waiting.get(key) === delivery) waiting.delete(key);
      return runWake(delivery);
    };
    const previous = queues.get(delivery.agent.name) ?? Promise.resolve();
    const next = previous.then(start).catch((error) => logger.error('router wake failed', { delivery: delivery.id, error: errorMessage(error) }));
    queues.set(delivery.agent.name, next);
  };

  // Settled here once pg-boss holds the job: a worker anywhere answers it, as often as it takes.
  const toQueue = async (queue: WakeQueue, delivery: Delivery) => {
    const flag = WAKING_EVENTS[delivery.event];
    const about = flag && flag !== '--task' && delivery.resource ? { [flag.slice(2)]: delivery.resource } : {};
    try {
      const job = await queue.send({
        kind: 'timeline',
        agent: delivery.agent.name,
        sessionId: `timeline:${delivery.timeline}`,
        timeline: delivery.timeline,
        ...about,
        deliveryId: delivery.id,
        platformUrl: typeof options.platformUrl === 'function' ? options.platformUrl() : options.platformUrl,
      });
      db.prepare("UPDATE deliveries SET state = 'enqueued', finished_at = datetime('now') WHERE delivery = ?").run(delivery.id);
      logger.info('router delivery enqueued', { agent: delivery.agent.name, delivery: delivery.id, event: delivery.event, timeline: delivery.timeline, job });
    } catch (error) {
      db.prepare("UPDATE deliveries SET state = 'failed', finished_at = datetime('now') WHERE delivery = ?").run(delivery.id);
      logger.error('router enqueue failed', { agent: delivery.agent.name, delivery: delivery.id, error: errorMessage(error) });
    } finally {
      queues.delete(delivery.id);
    }
  };

  const runWake = async (delivery: Delivery) => {
    for (let attempt = 1; ; attempt++) {
      const code = await wakeOnce(options, delivery);
      db.prepare('UPDATE deliveries SET attempts = ?, exit_code = ? WHERE delivery = ?').run(attempt, code, delivery.id);
      if (code === 0 || attempt > delays.length) {
        const state = code === 0 ? 'done' : 'failed';
        db.prepare("UPDATE deliveries SET state = ?, finished_at = datetime('now') WHERE delivery = ?").run(state, delivery.id);
        (code === 0 ? logger.info : logger.error).call(logger, 'router wake', { agent: delivery.agent.name, delivery: delivery.id, event: delivery.event, timeline: delivery.timeline, outcome: state, attempts: attempt, exit: code });
        return;
      }
      logger.warn('router wake retry', { agent: delivery.agent.name, delivery: delivery.id, attempt, exit: code, wait_ms: delays[attempt - 1] });
      await new Promise((resolve) => setTimeout(resolve, delays[attempt - 1]));
    }
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) req.destroy();
      else chunks.push(chunk);
    });
    req.on('end', () => {
      const answer = (status: number, text: string) => {
        res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' }).end(`${text}\n`);
      };
      if (req.method !== 'POST') return answer(405, 'POST a platform delivery here');
      const raw = Buffer.concat(chunks);
      const received = receive(raw, req.headers, byRecipient, db, logger);
      if ('reject' in received) return answer(received.status, received.reject);
      answer(202, received.duplicate ? 'already received' : 'accepted');
      if (!received.duplicate && received.delivery) enqueue(received.delivery);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${options.host ?? '127.0.0.1'}:${port}`;
  logger.info('router listening', { url, agents: options.agents.map((agent) => agent.name).join(',') });
  return {
    url,
    port,
    async idle() {
      for (;;) {
        const pending = [...queues.values()];
        await Promise.all(pending);
        if ([...queues.values()].every((queue, index) => queue === pending[index])) return;
      }
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.all(queues.values());
      db.close();
    },
  };
}

type Received = { status: number; reject: string } | { duplicate: boolean; delivery?: Delivery };

/** Verifies, parses and records one delivery; a delivery id seen before is a duplicate. */
function receive(raw: Buffer, headers: http.IncomingHttpHeaders, byRecipient: Map<string, RoutedAgent>, db: Database, logger: Logger): Received {
  const deliveryId = headerValue(headers, 'X-BaseCradle-Delivery');
  const event = headerValue(headers, 'X-BaseCradle-Event');
  if (!deliveryId || !event) return { status: 400, reject: 'X-BaseCradle-Event and X-BaseCradle-Delivery are required' };
  let body: { recipient_uuid?: unknown; timeline_uuid?: unknown; resource?: { uuid?: unknown } };
  try {
    body = JSON.parse(raw.toString('utf8')) as typeof body;
  } catch {
    return { status: 400, reject: 'the body is not JSON' };
  }
  const agent = typeof body.recipient_uuid === 'string' ? byRecipient.get(body.recipient_uuid) : undefined;
  if (!agent) return { status: 404, reject: 'no agent here for this recipient_uuid' };
  // Verified before anything else is believed or recorded.
  const check = checkWebhookSignature({ rawBody: raw, headers, secret: agent.secret });
  if (!check.ok) {
    logger.warn('router delivery refused', { delivery: deliveryId, agent: agent.name, reason: `signature ${check.reason}` });
    return { status: 401, reject: `signature ${check.reason}` };
  }
  if (typeof body.timeline_uuid !== 'string') return { status: 400, reject: 'timeline_uuid is required' };
  const inserted = db
    .prepare("INSERT OR IGNORE INTO deliveries (delivery, agent, event, timeline, state, received_at) VALUES (?, ?, ?, ?, ?, datetime('now'))")
    .run(deliveryId, agent.name, event, body.timeline_uuid, WAKING_EVENTS[event] ? 'queued' : 'ignored');
  if (inserted.changes === 0) {
    logger.info('router delivery duplicate', { delivery: deliveryId, agent: agent.name });
    return { duplicate: true };
  }
  if (!WAKING_EVENTS[event]) {
    logger.info('router delivery ignored', { delivery: deliveryId, event });
    return { duplicate: false };
  }
  const resource = typeof body.resource?.uuid === 'string' ? body.resource.uuid : undefined;
  return { duplicate: false, delivery: { id: deliveryId, event, timeline: body.timeline_uuid, resource, agent } };
}

function wakeOnce(options: RouterOptions, delivery: Delivery): Promise<number> {
  const command = options.wakeCommand ?? { command: process.execPath, args: [new URL('../../../bin/acx.js', import.meta.url).pathname] };
  const flag = WAKING_EVENTS[delivery.event];
  // A task needs no trigger: the wake takes up every activated task it has not seen.
  const trigger: string[] = flag && flag !== '--task' && delivery.resource ? [flag, delivery.resource] : [];
  const env: NodeJS.ProcessEnv = {
    ...(options.env ?? process.env),
    BASECRADLE_BASE_URL: typeof options.platformUrl === 'function' ? options.platformUrl() : options.platformUrl,
    BASECRADLE_TOKEN: delivery.agent.token,
    BASECRADLE_DELIVERY_ID: delivery.id,
  };
  return new Promise((resolve) => {
    const child = spawn(command.command, [...command.args, 'wake', delivery.agent.dir, '--timeline', delivery.timeline, ...trigger], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) options.logger.debug('wake output', { agent: delivery.agent.name, line });
    });
    child.on('error', () => resolve(127));
    child.on('close', (code) => resolve(code ?? 1));
  });
}
