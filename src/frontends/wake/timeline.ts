import { createHash, randomUUID } from 'node:crypto';
import type { HarnessAgent } from '../../agent/harness-agent.ts';
import type { BaseCradleClient } from '../../channel/client.ts';
import { NotFoundError } from '../../channel/errors.ts';
import { createIdempotencyKey } from '../../channel/idempotency.ts';
import type { ChannelState, ItemRef } from '../../channel/state.ts';
import type { KeyedKind } from '../../channel/tools/kit.ts';
import { createPlatformTools } from '../../channel/tools/index.ts';
import type { Actor, Message, Timeline } from '../../channel/types.ts';
import type { HarnessTurnResult } from '../../agent/harness-results.ts';
import type { Tool, ToolContext } from '../../tools/tool.ts';
import { errorMessage } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';
import type { BreakerSettings } from '../../store/breaker.ts';
import { passTimelineBreaker } from './timeline-breaker.ts';

/**
 * One wake of a timeline agent, as the platform's router runs it per event: read what is unseen
 * on the timeline since the agent's marks, claim it, answer it in one turn whose only way to
 * speak is the platform tools, then settle — claims done, marks past everything settled.
 *
 * What makes a kill at any moment safe: the turn's id is derived from its batch (the timeline
 * and its oldest unseen message), so the next wake finds the same turn in the journal and
 * continues it by evidence instead of starting over; every create it re-issues carries the same
 * Idempotency-Key (uuid5 over timeline:anchor:kind:ordinal, the ordinal counted from the turn's
 * earlier calls in the journal), so the platform returns the first record; and a claim left
 * in-flight by a dead wake is resumed, while a live wake's is left to it.
 *
 * This slice answers messages. Assets, activated tasks and webhook events are not read yet.
 */
export interface TimelineWakeOptions {
  client: BaseCradleClient;
  state: ChannelState;
  timeline: string;
  /** The item the delivery is about (`--message`): on a first wake, the reply starts there. */
  trigger?: string;
  deliveryId?: string;
  /** The agent for this wake, given the platform tools it must offer (they are how it perceives and speaks). */
  agent: (platformTools: Tool[]) => Promise<{ agent: HarnessAgent; maxSteps?: number; close(): Promise<void> }>;
  logger: Logger;
  /** The per-timeline circuit breaker (ACX_WAKE_BREAKER_*); absent: none. */
  breaker?: BreakerSettings;
  /** How many messages a first wake reads (FACTS.md: the newest 50). */
  firstWakeWindow?: number;
}

/** How the platform tools get a create's key: the wake supplies it per kind, from the call's context. */
export type CreateKeySource = (kind: KeyedKind, context: ToolContext) => string | undefined;

export type TimelineWakeOutcome =
  | { outcome: 'answered'; posted: number; steps: number; turnId: string; result: HarnessTurnResult }
  | { outcome: 'nothing-new' | 'busy' | 'declined'; posted: 0 }
  | { outcome: 'skipped'; reason: 'timeline_deleted' | 'timeline_locked'; posted: 0 };

/** The tools that create each keyed kind: what counts toward a create's ordinal. */
const CREATING_TOOLS: Record<KeyedKind, readonly string[]> = {
  message: ['messages_create'],
  asset: ['assets_create', 'assets_post_image'],
  task: ['tasks_create'],
  webhook_endpoint: ['webhook_endpoints_create'],
};

export async function wakeOnTimeline(options: TimelineWakeOptions): Promise<TimelineWakeOutcome> {
  const { client, state, timeline, logger } = options;
  const wakeId = randomUUID();
  const started = performance.now();
  const bookend = { timeline, ...(options.deliveryId ? { delivery: options.deliveryId } : {}) };
  if (options.breaker && !passTimelineBreaker(state, timeline, options.breaker, logger, bookend)) return { outcome: 'declined', posted: 0 };

  let room: Timeline;
  try {
    room = (await client.timelines.get(timeline)).timeline;
  } catch (error) {
    if (NotFoundError.isInstance(error)) {
      logger.info('wake skipped', { ...bookend, reason: 'timeline_deleted' });
      return { outcome: 'skipped', reason: 'timeline_deleted', posted: 0 };
    }
    throw error;
  }
  if (room.locked) {
    logger.info('wake skipped', { ...bookend, reason: 'timeline_locked' });
    return { outcome: 'skipped', reason: 'timeline_locked', posted: 0 };
  }
  const me = (await client.dashboard.get()).identity;
  logger.info('wake start', { ...bookend, agent: me.handle, trigger: options.trigger });

  const unseen = await unseenMessages(client, state, timeline, options.firstWakeWindow ?? 50);
  const fromPeers = unseen.filter((message) => message.user.uuid !== me.uuid);
  const firstWake = state.mark(timeline, 'message') === undefined;
  // A first wake also takes up what an earlier wake claimed and never finished (it was killed
  // before its first settle, so there is no mark yet).
  const stranded = new Set(fromPeers.filter((message) => state.phase(ref(timeline, message)) === 'in-flight'));
  const chosen = firstWake ? new Set([...firstWakeReplySet(unseen, me, options.trigger), ...stranded]) : new Set(fromPeers);
  const candidates = unseen.filter((message) => chosen.has(message));

  // Claim in order; a message a live wake holds, and everything after it, is that wake's.
  const batch: Message[] = [];
  let held: Message | undefined;
  for (const message of candidates) {
    const outcome = state.take(ref(timeline, message), wakeId);
    if (outcome === 'held') {
      held = message;
      break;
    }
    if (outcome === 'taken' || outcome === 'resumed') batch.push(message);
  }
  if (batch.length === 0) {
    const busy = held !== undefined;
    settleMarks(state, timeline, unseen, held);
    logger.info('wake end', { ...bookend, outcome: busy ? 'busy' : 'nothing-new', posted: 0, turns: 0, duration: seconds(started) });
    return { outcome: busy ? 'busy' : 'nothing-new', posted: 0 };
  }

  const anchor = batch[0]!.content.uuid;
  const keyFor: CreateKeySource = (kind, context) => {
    const earlier = context.earlierCalls?.() ?? [];
    const ordinal = 1 + earlier.filter((call) => CREATING_TOOLS[kind].includes(call.toolName)).length;
    return createIdempotencyKey({ timeline, anchor, kind, ordinal });
  };
  const refs = batch.map((message) => ref(timeline, message));
  // The whole platform tool set: a timeline agent perceives and speaks through it.
  const prepared = await options.agent(createPlatformTools({ client, timeline, idempotencyKey: keyFor }));
  const turnId = timelineTurnId(timeline, anchor);
  // A long turn keeps its claims fresh, so no other wake ever reads them as stale.
  const heartbeat = setInterval(() => state.heartbeat(refs, wakeId), HEARTBEAT_MS);
  heartbeat.unref();
  try {
    const session = await prepared.agent.createSession({ sessionId: `timeline:${timeline}` });
    let result: HarnessTurnResult;
    try {
      result = await prepared.agent.generate({
        session,
        prompt: batchPrompt(batch, { firstWake, earlier: firstWake ? unseen.slice(0, unseen.indexOf(batch[0]!)) : [] }),
        turnId,
        addressed: batch.some((message) => mentions(message.content.body, me.handle)) || twoViewers(room),
      });
    } catch (error) {
      if ((error as { code?: string }).code === 'turn-compacted') {
        state.abandon(refs, wakeId, 'its turn was compacted away before it finished');
        logger.error('items abandoned', { ...bookend, messages: refs.map((r) => r.item).join(','), reason: 'turn-compacted' });
        settleMarks(state, timeline, unseen, undefined);
      }
      throw error;
    }
    // A failed call stays in toolResults with an `error` field (the engine's result shape).
    const posts = result.toolResults.filter((call) => call.toolName === 'messages_create' && (call as { error?: unknown }).error === undefined);
    for (const post of posts) logger.info('posted', { ...bookend, message: /Posted message (\S+)/.exec(String(post.output))?.[1] ?? null });
    if (result.unspoken) logger.info('unspoken', { ...bookend, text: result.unspoken });
    state.commit(refs, wakeId);
    settleMarks(state, timeline, unseen, held);
    logger.info('wake end', {
      ...bookend,
      outcome: 'answered',
      posted: posts.length,
      turns: 1,
      steps: `${result.stepCount}/${prepared.maxSteps ?? '?'}`,
      resumed: result.resumed,
      duration: seconds(started),
    });
    return { outcome: 'answered', posted: posts.length, steps: result.stepCount, turnId, result };
  } catch (error) {
    // The claims stay in flight: the next wake resumes this turn from the journal.
    logger.error('wake end', { ...bookend, outcome: 'error', error: errorMessage(error), note: 'the messages stay claimed in flight; the next wake resumes the turn', duration: seconds(started) });
    throw error;
  } finally {
    clearInterval(heartbeat);
    await prepared.close();
  }
}

const HEARTBEAT_MS = 5 * 60_000;

/** What the model reads: each message with its time and author; on a first wake, the earlier ones as context. */
export function batchPrompt(batch: readonly Message[], context: { firstWake: boolean; earlier: readonly Message[] }): string {
  const lines = (messages: readonly Message[]) => messages.map((message) => `[${message.created_at}] @${message.user.handle}: ${message.content.body}`).join('\n');
  const intro = context.earlier.length > 0 ? `Earlier on this timeline (already answered or not for you):\n${lines(context.earlier)}\n\n` : '';
  const noun = batch.length === 1 ? 'A new message' : `${batch.length} new messages`;
  return `${intro}${noun} on this timeline:\n${lines(batch)}\n\nReply only by calling messages_create; your final text is not posted.`;
}

/** The agent's exact @handle, not part of a longer one (case-insensitive). */
export function mentions(body: string, handle: string): boolean {
  const escaped = handle.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[^\\w@])@${escaped}(?![\\w-])`, 'i').test(body);
}

/** A one-on-one room (its owner and participants are exactly two viewers): every message is for the agent. */
function twoViewers(room: Timeline): boolean {
  return new Set([room.owner.uuid, ...room.participants.map((participant) => participant.uuid)]).size === 2;
}

/** Messages newer than the mark, oldest first; on a first wake, the newest `window`. */
async function unseenMessages(client: BaseCradleClient, state: ChannelState, timeline: string, window: number): Promise<Message[]> {
  const mark = state.mark(timeline, 'message');
  const newestFirst: Message[] = [];
  for await (const message of client.messages.list({ timeline })) {
    if (message.content.uuid === mark) break;
    newestFirst.push(message);
    if (mark === undefined && newestFirst.length >= window) break;
  }
  return newestFirst.reverse();
}

/**
 * A first wake (no mark yet) answers the trigger and what follows it when the trigger is in the
 * window; else everything after the agent's own latest post; else only the newest message.
 */
export function firstWakeReplySet(window: readonly Message[], me: Pick<Actor, 'uuid'>, trigger: string | undefined): Message[] {
  const peers = (from: number) => window.slice(from).filter((message) => message.user.uuid !== me.uuid);
  const at = trigger ? window.findIndex((message) => message.content.uuid === trigger) : -1;
  if (at >= 0) return peers(at);
  const ownLatest = window.map((message) => message.user.uuid).lastIndexOf(me.uuid);
  if (ownLatest >= 0) return peers(ownLatest + 1);
  const newest = window.at(-1);
  return newest && newest.user.uuid !== me.uuid ? [newest] : [];
}

/** The mark moves to the newest unseen message before the first one still pending (none: to the newest). */
function settleMarks(state: ChannelState, timeline: string, unseen: readonly Message[], firstPending: Message | undefined): void {
  const stop = firstPending ? unseen.indexOf(firstPending) : unseen.length;
  const last = unseen[stop - 1];
  if (last) state.setMark(timeline, 'message', last.content.uuid);
}

const ref = (timeline: string, message: Message): ItemRef => ({ timeline, kind: 'message', item: message.content.uuid });
const seconds = (since: number) => `${((performance.now() - since) / 1000).toFixed(2)}s`;

/** The batch's turn id: the same batch (same timeline, same oldest message) is the same turn. */
export function timelineTurnId(timeline: string, anchor: string): string {
  return `timeline-${createHash('sha256').update(`${timeline}:${anchor}`).digest('hex').slice(0, 32)}`;
}

