import { BaseCradleClient } from '../../channel/client.ts';
import type { PagedList } from '../../channel/pagination.ts';
import type { Asset, Message, Task, WebhookEvent } from '../../channel/types.ts';
import { errorMessage } from '../../core/errors.ts';
import type { LogThrottle } from '../../util/log-throttle.ts';
import type { Logger } from '../../util/logger.ts';
import type { RoutedAgent } from './agents.ts';
import type { DeliveryLog } from './delivery-log.ts';
import type { ItemKind } from './events.ts';

/**
 * `acx router --poll 30s`: for a platform that cannot reach the router (an agent behind NAT),
 * the router asks instead. Every interval, for each agent, it reads the platform's lists of the
 * items on the timelines the agent views (GET /messages, /assets, /webhook_events and
 * /tasks?status=activated, newest first) down to its poll mark, and hands each item it has not
 * seen to the same wake path a webhook delivery takes: the same item claim in router.db (so an
 * item a webhook delivered is not woken again by the poll, nor the other way round, and two
 * routers on one router.db wake it once), the same per-agent serialization and coalescing, the
 * same queue with --queue.
 *
 * - What is skipped, as the platform's deliveries skip it: an agent's own messages and assets.
 *   A task activation and an inbound webhook have no author, so they reach the agent whoever
 *   wrote the task.
 * - The first read of a kind (no mark yet: a new router.db) goes back as far as a delivery may
 *   (the replay window, 24 h by default), not over the whole history.
 * - Tasks are listed by creation, not activation, so each read takes the newest 50 activated
 *   tasks (the window acx's own timeline wake reads) and compares their activation time.
 * - A failed read (the platform away, a token refused) is logged and tried again next interval;
 *   the mark moves only past what was read.
 */
export interface PolledItem {
  kind: ItemKind;
  event: string;
  uuid: string;
  timeline: string;
  atMs: number;
}

export interface PollerOptions {
  agents: readonly RoutedAgent[];
  platformUrl: () => string;
  log: DeliveryLog;
  intervalMs: number;
  /** How far back the first read of a kind goes. */
  horizonMs: number;
  now: () => number;
  logger: Logger;
  throttled: LogThrottle;
  /** Hands an item to the wake path; false when it was seen before (by a delivery or another poll). */
  take: (agent: RoutedAgent, item: PolledItem) => boolean;
}

export interface Poller {
  /** Runs one read of every agent's items (after any read under way) and resolves when it has finished. */
  pollNow(): Promise<void>;
  stop(): Promise<void>;
}

type Listed = Message | Asset | Task | WebhookEvent;

interface KindReader {
  kind: ItemKind;
  event: string;
  list: (client: BaseCradleClient) => PagedList<Listed>;
  /** The time the item's event happened. */
  at: (item: Listed) => string | undefined;
  /** Newest first by `at`, so a read may stop at the mark; false: read one page and compare each. */
  orderedByAt: boolean;
}

const KINDS: readonly KindReader[] = [
  { kind: 'message', event: 'message.created', list: (c) => c.messages.list(), at: (item) => item.created_at, orderedByAt: true },
  { kind: 'asset', event: 'asset.created', list: (c) => c.assets.list(), at: (item) => item.created_at, orderedByAt: true },
  { kind: 'webhook_event', event: 'webhook_event.received', list: (c) => c.webhookEvents.list(), at: (item) => item.created_at, orderedByAt: true },
  // An activated task's updated_at is its activation (the platform's last change to it).
  { kind: 'task', event: 'task.activated', list: (c) => c.tasks.list({ status: 'activated' }), at: (item) => item.updated_at ?? (item as Task).content.activate_at, orderedByAt: false },
];

/** Whom a listed item is by, where it has an author whose own posts do not wake them. */
const authorOf = (item: Listed): string | undefined => (item.type === 'message' || item.type === 'asset' ? item.user.uuid : undefined);

export function startPoller(options: PollerOptions): Poller {
  const { logger } = options;
  let chain: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let cycle = 0;

  const readKind = async (agent: RoutedAgent, client: BaseCradleClient, reader: KindReader): Promise<number> => {
    const mark = options.log.pollMark(agent.name, reader.kind);
    const floor = mark ?? options.now() - options.horizonMs;
    let newest = mark;
    const unseen: PolledItem[] = [];
    for await (const page of reader.list(client).pages()) {
      let reachedFloor = false;
      for (const item of page.items) {
        const atMs = Date.parse(reader.at(item) ?? '');
        if (!Number.isFinite(atMs) || atMs < floor) {
          reachedFloor = true;
          continue;
        }
        newest = Math.max(newest ?? atMs, atMs);
        if (authorOf(item) === agent.uuid) continue;
        unseen.push({ kind: reader.kind, event: reader.event, uuid: item.content.uuid, timeline: item.timeline.uuid, atMs });
      }
      if (!reader.orderedByAt || reachedFloor) break;
    }
    let woke = 0;
    // Oldest first, as the platform would have delivered them.
    for (const item of unseen.sort((a, b) => a.atMs - b.atMs)) if (options.take(agent, item)) woke += 1;
    if (newest !== undefined) options.log.advancePollMark(agent.name, reader.kind, newest);
    return woke;
  };

  const readAll = async (): Promise<void> => {
    cycle += 1;
    let woke = 0;
    for (const agent of options.agents) {
      const client = new BaseCradleClient({ baseUrl: options.platformUrl(), token: agent.token });
      for (const reader of KINDS) {
        try {
          woke += await readKind(agent, client, reader);
        } catch (error) {
          options.throttled.log('warn', 'router poll failed', { agent: agent.name, kind: reader.kind, error: errorMessage(error), next: 'the next interval' });
        }
      }
    }
    logger.debug('router poll done', { cycle, woke });
  };

  const pollNow = (): Promise<void> => (chain = chain.then(readAll).catch((error) => logger.error('router poll failed', { error: errorMessage(error) })));
  const schedule = () => {
    if (!stopped) timer = setTimeout(() => void pollNow().then(schedule), options.intervalMs);
  };
  void pollNow().then(schedule);
  logger.info('router polling', { every_s: options.intervalMs / 1000, agents: options.agents.map((agent) => agent.name).join(',') });
  return {
    pollNow,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await chain;
    },
  };
}
