import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorMessage } from '../../core/errors.ts';
import { createLogThrottle } from '../../util/log-throttle.ts';
import type { Logger } from '../../util/logger.ts';
import type { TimelineWakeJob, WakeQueue } from '../worker/queue.ts';
import { admitDelivery, DEFAULT_REPLAY_WINDOW, type Keys } from './admission.ts';
import type { RoutedAgent } from './agents.ts';
import { DeliveryLog, type ItemRef } from './delivery-log.ts';
import { triggerArgs, WAKING_EVENTS } from './events.ts';
import { type Poller, startPoller } from './poll.ts';
import { answerProbe, isProbeRequest } from './probe.ts';
import { checkPassEnvName, eventWakeValues, wakeEnvironment, warmWakeEnvironment } from './wake-env.ts';
import { runWakeProcess, THIS_ACX, wakeArgv, warmWakeArgv } from './wake-process.ts';
import { WarmWakes, type WarmWakesOptions } from './warm-wakes.ts';

export type { RoutedAgent } from './agents.ts';
export { WAKING_EVENTS } from './events.ts';

/**
 * `acx router`: receives the platform's signed webhook deliveries (or, with a poll interval, reads
 * the platform's lists itself: poll.ts) and wakes the agent each is addressed to, as the
 * BaseCradle router does (FACTS.md): the signature checked first, over the raw bytes in constant
 * time, and the body's own event id, event name and time believed over the unsigned headers
 * (admission.ts); a delivery seen before, or an item already woken for, answered and ignored
 * (delivery-log.ts); wakes serialized per agent, each agent's wake command (`acx wake <dir>`, or
 * any harness's: wake-process.ts) run with `--timeline <uuid> [--message|--asset|--event <uuid>]`
 * and only the environment wake-env.ts allows; a non-zero exit retried (3 attempts, 0.5 s then
 * 1 s apart) and every outcome recorded in router.db. A message delivery for an agent and
 * timeline that already has a message wake waiting in the queue joins that wake (recorded as
 * coalesced): in a burst, one process answers what piled up. The fleet's synthetic probe is
 * answered here and wakes no one (probe.ts); `GET /up` answers 200 while the router runs. Each
 * acx agent woken here has a wake process started ahead of its event and handed it on arrival
 * (warm-wakes.ts), unless `warm` is off.
 *
 * Answer codes (the platform counts any non-2xx as a failed delivery, and disables an
 * integration after five): 401 without a valid signature, whatever else is wrong; 400 for a
 * signed delivery that is malformed, stale or whose headers contradict its body; 200 for one
 * addressed to a recipient not hosted here, for an event that wakes no one and for a duplicate;
 * 202 for one accepted.
 */

export interface RouterOptions {
  agents: readonly RoutedAgent[];
  /** The platform's base URL, for the wakes (a function when it is known only once the platform is up). */
  platformUrl: string | (() => string);
  /** router.db: the deliveries seen and what came of them. */
  databasePath: string;
  logger: Logger;
  port?: number;
  host?: string;
  /** The program and first arguments that stand for `acx` in a wake command (default this Node on this acx's bin). Tests may point it elsewhere. */
  wakeCommand?: { command: string; args: readonly string[] };
  /** The environment wakes draw from (default process.env): each gets only what wake-env.ts allows, and its own BASECRADLE_* values. */
  env?: NodeJS.ProcessEnv;
  /** More variables each wake gets from `env` (`--pass-env`): never BASECRADLE_* or a webhook secret. */
  passEnv?: readonly string[];
  /** Keys a delivery for a recipient not hosted here may be signed with (the shared secret): such a delivery is answered 200, not 401. */
  sharedSecrets?: readonly string[];
  /** How old (and how far ahead) a delivery's occurred_at may be; default 24 h back, 5 min ahead. */
  replayWindow?: { pastMs: number; futureMs: number };
  /** The clock (tests). */
  now?: () => number;
  /** Waits between attempts; default 500 ms then 1000 ms (three attempts). */
  retryDelaysMs?: readonly number[];
  /**
   * Enqueue each accepted delivery for an acx agent on this pg-boss queue for `acx worker`
   * instead of running a wake here: the signature check and the dedupe stay the router's, the
   * wake, its retries and its per-timeline serialization become the queue's. An agent with its
   * own wake command is still woken here (a worker runs acx agents only).
   */
  queue?: WakeQueue;
  /** Read each agent's items from the platform this often (`--poll`), besides taking deliveries. */
  pollIntervalMs?: number;
  /** The key the fleet's synthetic probe is signed with (probe.ts); without it a probe is answered 404. */
  probeSecret?: string;
  /**
   * Keep one wake process per acx agent woken here started before its event (warm-wakes.ts),
   * so an event does not wait for Node's and acx's start-up; `--no-warm` turns it off. Default on,
   * unless `wakeCommand` stands in for acx (a stand-in need not speak warm-protocol.ts).
   */
  warm?: boolean;
  /** The warm processes' backoff and ready timeout (tests): see warm-wakes.ts. */
  warmTiming?: Pick<WarmWakesOptions, 'backoffMs' | 'readyTimeoutMs'>;
}

export interface RunningRouter {
  url: string;
  port: number;
  /** Resolves when every wake queued so far has finished (tests). */
  idle(): Promise<void>;
  /** With a poll interval: runs one poll of every agent now and resolves once it has read (and queued what it found). */
  pollNow(): Promise<void>;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 1024 * 1024;

/** One wake to run: a webhook delivery accepted for a hosted agent, or an item the poll found. */
interface Wake {
  id: string;
  event: string;
  timeline: string;
  resource: string | undefined;
  agent: RoutedAgent;
}

export async function startRouter(options: RouterOptions): Promise<RunningRouter> {
  const { logger } = options;
  for (const name of options.passEnv ?? []) checkPassEnvName(name);
  const now = options.now ?? Date.now;
  const window = options.replayWindow ?? DEFAULT_REPLAY_WINDOW;
  const log = new DeliveryLog(options.databasePath, now, window.pastMs + window.futureMs);
  const agentKeys = options.agents.flatMap((agent) => (agent.secret !== undefined ? [agent.secret] : []));
  const keys: Keys = {
    byRecipient: new Map(options.agents.map((agent) => [agent.uuid, agent])),
    all: [...new Set([...agentKeys, ...(options.sharedSecrets ?? [])])],
  };
  const byHandle = new Map(options.agents.map((agent) => [agent.name.toLowerCase(), agent]));
  const platformUrl = () => (typeof options.platformUrl === 'function' ? options.platformUrl() : options.platformUrl);
  const acx = options.wakeCommand ? [options.wakeCommand.command, ...options.wakeCommand.args] : THIS_ACX;
  // A stranger decides how often these are written: bounded per kind (src/util/log-throttle.ts).
  const throttled = createLogThrottle(logger, { now });
  const queues = new Map<string, Promise<void>>();
  const delays = options.retryDelaysMs ?? [500, 1000];

  // Message wakes queued and not started yet, by agent and timeline: a later message there is
  // read by that wake anyway (it reads everything unseen when it starts, and the platform
  // records a message before it sends its delivery), so it joins it instead of costing a process.
  const waiting = new Map<string, Wake>();
  const enqueue = (wake: Wake) => {
    if (options.queue && wake.agent.dir !== undefined) {
      queues.set(wake.id, toQueue(options.queue, wake));
      return;
    }
    const key = `${wake.agent.name}\n${wake.timeline}`;
    const covering = wake.event === 'message.created' ? waiting.get(key) : undefined;
    if (covering) {
      log.coalesced(wake.id, covering.id);
      logger.info('router delivery coalesced', { agent: wake.agent.name, delivery: wake.id, timeline: wake.timeline, into: covering.id });
      return;
    }
    if (wake.event === 'message.created') waiting.set(key, wake);
    const start = () => {
      if (waiting.get(key) === wake) waiting.delete(key);
      return runWake(wake);
    };
    const previous = queues.get(wake.agent.name) ?? Promise.resolve();
    const next = previous.then(start).catch((error) => logger.error('router wake failed', { delivery: wake.id, error: errorMessage(error) }));
    queues.set(wake.agent.name, next);
  };

  // Per agent and timeline, the message delivery whose enqueue is waiting for the queue to come
  // back. A later message delivery there joins it instead (its wake reads everything unseen, as a
  // waiting process wake does above): an outage otherwise released a job per delivery at once,
  // about a hundred per timeline, and that burst tripped the wake breaker (found by the chaos run).
  const awaitingQueue = new Map<string, string>();
  // Settled here once pg-boss holds the job: a worker anywhere answers it, as often as it takes.
  const toQueue = async (queue: WakeQueue, wake: Wake) => {
    const key = `${wake.agent.name}\n${wake.timeline}`;
    const joined = wake.event === 'message.created' ? awaitingQueue.get(key) : undefined;
    if (joined !== undefined) {
      log.coalesced(wake.id, joined);
      logger.info('router delivery coalesced', { agent: wake.agent.name, delivery: wake.id, timeline: wake.timeline, into: joined, note: 'the queue is away; that delivery is enqueued once it is back' });
      queues.delete(wake.id);
      return;
    }
    const [flag, resource] = triggerArgs(wake.event, wake.resource);
    const job: TimelineWakeJob = {
      kind: 'timeline',
      agent: wake.agent.name,
      sessionId: `timeline:${wake.timeline}`,
      timeline: wake.timeline,
      ...(flag ? { [flag.slice(2)]: resource } : {}),
      deliveryId: wake.id,
      platformUrl: platformUrl(),
    };
    try {
      // The platform was told 202 and will not send it again, and its item is claimed, so the poll
      // will not either: a delivery whose enqueue fails because PostgreSQL is away is enqueued once
      // it is back (found by the chaos run: an outage as the traffic ended lost its last messages).
      const id = await queue.sendWhenReachable(job, (error, attempt) => {
        if (wake.event === 'message.created' && !awaitingQueue.has(key)) awaitingQueue.set(key, wake.id);
        logger.warn('router enqueue retry', { agent: wake.agent.name, delivery: wake.id, attempt, error: errorMessage(error), note: 'enqueued once the queue is reachable' });
      });
      log.finished(wake.id, 'enqueued');
      logger.info('router delivery enqueued', { agent: wake.agent.name, delivery: wake.id, event: wake.event, timeline: wake.timeline, job: id });
    } catch (error) {
      log.finished(wake.id, 'failed');
      logger.error('router enqueue failed', { agent: wake.agent.name, delivery: wake.id, error: errorMessage(error) });
    } finally {
      if (awaitingQueue.get(key) === wake.id) awaitingQueue.delete(key);
      queues.delete(wake.id);
    }
  };

  const runWake = async (wake: Wake) => {
    const args = ['--timeline', wake.timeline, ...triggerArgs(wake.event, wake.resource)];
    const own = { baseUrl: platformUrl(), token: wake.agent.token, deliveryId: wake.id };
    // On the agent's warm process when it has one ready, else (or for another harness) a new one.
    const attemptWake = async () =>
      (await warm?.run(wake.agent.name, args, eventWakeValues(own), wake.id)) ??
      (await runWakeProcess([...wakeArgv(wake.agent, acx), ...args], wakeEnvironment(options.env ?? process.env, own, options.passEnv), logger, wake.agent.name));
    for (let attempt = 1; ; attempt++) {
      const code = await attemptWake();
      log.attempted(wake.id, attempt, code);
      if (code === 0 || attempt > delays.length) {
        const state = code === 0 ? 'done' : 'failed';
        log.finished(wake.id, state);
        (code === 0 ? logger.info : logger.error).call(logger, 'router wake', { agent: wake.agent.name, delivery: wake.id, event: wake.event, timeline: wake.timeline, outcome: state, attempts: attempt, exit: code });
        return;
      }
      logger.warn('router wake retry', { agent: wake.agent.name, delivery: wake.id, attempt, exit: code, wait_ms: delays[attempt - 1] });
      await new Promise((resolve) => setTimeout(resolve, delays[attempt - 1]));
    }
  };

  /** The item an event is about, claimed with its delivery so it wakes the agent once, however it arrives. */
  const itemOf = (event: string, resource: string | undefined, atMs: number): ItemRef | undefined => {
    const waking = WAKING_EVENTS[event];
    return waking && resource ? { kind: waking.kind, uuid: resource, atMs } : undefined;
  };

  // Said once per run: a platform whose bodies lack event_id or occurred_at leaves a gap.
  const warned = new Set<string>();
  const warnOnce = (gap: string, reason: string) => {
    if (warned.has(gap)) return;
    warned.add(gap);
    logger.warn('router deliveries replayable', { reason });
  };

  /** What to answer a POST (admission.ts decides what is believed), and the wake to run, if any. */
  const receive = (raw: Buffer, req: http.IncomingMessage): { status: number; text: string; accepted?: Wake } => {
    if (isProbeRequest(req.headers)) {
      const probe = answerProbe(raw, req.headers, options.probeSecret, (handle) => byHandle.get(handle.toLowerCase()));
      if (probe.answered) logger.info('router probe answered', { ...probe.answered, reason: probe.reason, note: 'no wake is run for a probe' });
      else throttled.log(probe.status === 200 ? 'info' : 'warn', 'router probe refused', { status: probe.status, reason: probe.reason, from: req.socket.remoteAddress });
      return { status: probe.status, text: probe.text };
    }
    const admitted = admitDelivery(raw, req.headers, keys, window, now());
    if (!admitted.ok) {
      throttled.log('warn', 'router delivery refused', { status: admitted.status, reason: admitted.reason, from: req.socket.remoteAddress });
      return { status: admitted.status, text: admitted.message };
    }
    const delivery = admitted.delivery;
    if (!delivery.signedId) warnOnce('event_id', "the platform's deliveries carry no event_id: deduped on the unsigned X-BaseCradle-Delivery header and on the item each is about, so one about no item, re-sent under a new header, wakes again");
    if (delivery.occurredAtMs === undefined) warnOnce('occurred_at', "the platform's deliveries carry no occurred_at: no replay window applies");
    const { agent } = delivery;
    if (!agent) {
      throttled.log('info', 'router delivery ignored', { delivery: delivery.id, reason: 'not-hosted', recipient: delivery.recipient });
      return { status: 200, text: 'no agent here for this recipient_uuid' };
    }
    const waking = WAKING_EVENTS[delivery.event] !== undefined;
    const item = itemOf(delivery.event, delivery.resource, delivery.occurredAtMs ?? now());
    const recorded = log.admit({ id: delivery.id, agent: agent.name, event: delivery.event, timeline: delivery.timeline, state: waking ? 'queued' : 'ignored', item, via: 'webhook' });
    if (!recorded.fresh) {
      const covered = recorded.reason === 'item-seen' ? { item: delivery.resource, covered_by: recorded.coveredBy } : {};
      throttled.log('info', 'router delivery duplicate', { delivery: delivery.id, agent: agent.name, reason: recorded.reason, ...covered });
      return { status: 200, text: 'already received' };
    }
    if (!waking) {
      throttled.log('info', 'router delivery ignored', { delivery: delivery.id, agent: agent.name, event: delivery.event, reason: 'not-a-waking-event' });
      return { status: 200, text: `${delivery.event} wakes no one` };
    }
    logger.debug('router delivery accepted', { delivery: delivery.id, agent: agent.name, event: delivery.event, timeline: delivery.timeline });
    return { status: 202, text: 'accepted', accepted: { id: delivery.id, event: delivery.event, timeline: delivery.timeline, resource: delivery.resource, agent } };
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
      // Liveness for a supervisor or a load balancer: no body read, nothing recorded.
      if (req.method === 'GET' && req.url === '/up') return answer(200, 'up');
      if (req.method !== 'POST') return answer(405, 'POST a platform delivery here');
      const received = receive(Buffer.concat(chunks), req);
      answer(received.status, received.text);
      if (received.accepted) enqueue(received.accepted);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => {
      log.close();
      reject(error);
    });
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const warm = (options.warm ?? !options.wakeCommand) ? new WarmWakes({ logger, ...options.warmTiming }) : undefined;
  for (const agent of warm ? options.agents : []) {
    // An acx agent on the queue is woken by a worker; another program's wake starts per event.
    const argv = options.queue && agent.dir !== undefined ? undefined : warmWakeArgv(agent, acx);
    if (argv) warm!.keep(agent.name, argv, () => warmWakeEnvironment(options.env ?? process.env, agent.token, platformUrl(), options.passEnv));
  }
  const url = `http://${options.host ?? '127.0.0.1'}:${port}`;
  logger.info('router listening', { url, agents: options.agents.map((agent) => agent.name).join(',') });
  const unset = (options.passEnv ?? []).filter((name) => (options.env ?? process.env)[name] === undefined);
  if (unset.length > 0) logger.warn('router pass-env not set', { names: unset.join(','), reason: 'listed with --pass-env (or ACX_ROUTER_PASS_ENV) but absent here, so wakes do not get them' });
  if (options.queue) {
    const local = options.agents.filter((agent) => agent.dir === undefined).map((agent) => agent.name);
    if (local.length > 0) logger.info('router wakes here', { agents: local.join(','), reason: 'their own wake commands; acx worker runs acx agents only' });
  }

  // Deliveries an earlier run took (the platform had its 202, the poll its claimed item) and never
  // finished, killed first: neither sends them again, so they are taken up here. Found by the
  // chaos run. Answering one twice is harmless: a wake answers only what is still unanswered.
  for (const row of log.unfinished()) {
    const agent = options.agents.find((candidate) => candidate.name === row.agent);
    if (!agent) continue;
    logger.info('router delivery resumed', { agent: agent.name, delivery: row.delivery, event: row.event, timeline: row.timeline, note: 'taken before a restart and never finished' });
    enqueue({ id: row.delivery, event: row.event, timeline: row.timeline, resource: row.item, agent });
  }

  const poller: Poller | undefined =
    options.pollIntervalMs === undefined
      ? undefined
      : startPoller({
          agents: options.agents,
          platformUrl,
          log,
          intervalMs: options.pollIntervalMs,
          horizonMs: window.pastMs,
          now,
          logger,
          throttled,
          take: (agent, item) => {
            const id = `poll-${agent.name}-${item.uuid}`;
            const recorded = log.admit({ id, agent: agent.name, event: item.event, timeline: item.timeline, state: 'queued', item: { kind: item.kind, uuid: item.uuid, atMs: item.atMs }, via: 'poll' });
            if (!recorded.fresh) return false;
            logger.info('router poll item', { agent: agent.name, delivery: id, event: item.event, timeline: item.timeline });
            enqueue({ id, event: item.event, timeline: item.timeline, resource: item.uuid, agent });
            return true;
          },
        });

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
    pollNow() {
      if (!poller) return Promise.reject(new Error('this router does not poll (no poll interval)'));
      return poller.pollNow();
    },
    async close() {
      await poller?.stop();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.all(queues.values());
      await warm?.close();
      throttled.flush();
      log.close();
    },
  };
}
