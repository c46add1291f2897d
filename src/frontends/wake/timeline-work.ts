import type { BaseCradleClient } from '../../channel/client.ts';
import type { ChannelState, ItemKind, ItemRef } from '../../store/channel-state.ts';
import type { Actor, Asset, Message, Task, Timeline, WebhookEvent } from '../../channel/types.ts';
import { viewableImage } from '../../channel/asset-images.ts';
import { assetLine, taskLine, webhookEventLine } from '../../channel/tools/render.ts';
import { errorMessage } from '../../core/errors.ts';
import type { TurnAttachment } from '../../engine/turn-types.ts';
import type { Addressed } from '../../engine/brief.ts';
import type { Logger } from '../../util/logger.ts';
import { DEFAULT_PACING, type PacingSettings, readAtHumanSpeed } from './pacing.ts';

/**
 * What a timeline wake answers: the items unseen since the agent's marks (messages, assets,
 * webhook events) and the activated tasks it has not taken up, each claimed for the wake, as the
 * turns that answer them — the unseen messages batched into one turn, every other item in a turn
 * of its own — and how each kind's mark settles once its turns are done.
 */
export interface TimelineWorkOptions {
  client: BaseCradleClient;
  state: ChannelState;
  timeline: string;
  /** The message the delivery is about (`--message`): on a first wake, the reply starts there. */
  trigger?: string;
  /** The asset or webhook event the delivery is about (`--asset`, `--event`): a first wake starts there. */
  triggers?: { asset?: string; webhook_event?: string };
  logger: Logger;
  /** How many messages a first wake reads (--context-messages; default the newest 50; Infinity: all). */
  firstWakeWindow?: number;
  /** Read-speed pacing of a peer AI's message, per timeline (ACX_PACE_*; default on, as for a session wake). */
  pacing?: PacingSettings;
  /** For tests: the clock and the wait pacing uses. */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** The first-wake backlog by default: one page of the platform's (FACTS.md: the newest 50). */
export const DEFAULT_CONTEXT_MESSAGES = 50;

/** One turn's worth of work: the items it answers (claimed), the key anchor, the prompt. */
export interface WorkTurn {
  kind: ItemKind;
  refs: ItemRef[];
  anchor: string;
  prompt: string;
  /** Why the turn calls for a reply (arms the nudge): message turns only; a mention wins. */
  addressed: Addressed;
  /** After the turn committed (a task joins the seen-set). */
  after?: () => Promise<void>;
  /** Images shown with the prompt (a peer's shared picture), never kept in the transcript. */
  attachments?: TurnAttachment[];
}

/** One gathering of a wake's work: its turns in order, how each kind's mark settles after them, and whether a live wake holds some of it. */
export interface GatheredWork {
  work: WorkTurn[];
  settleKinds: Array<() => Promise<void>>;
  busy: boolean;
}

/**
 * What a wake answers now, in order: the unseen messages as one batch, then each unseen asset,
 * webhook event and activated task in a turn of its own. A kind with nothing to answer settles
 * its mark at once (its unseen items were the agent's own).
 */
export async function gatherWork(options: TimelineWorkOptions, me: Actor, room: Timeline, wakeId: string): Promise<GatheredWork> {
  // A gathering that fails part-way gives back what it had claimed: nothing was tried on it, and
  // a claim kept would be renewed for as long as its process lives. Found by the chaos run: the
  // platform was killed between a worker's wake claiming a timeline's messages and reading its
  // webhook events; the wake failed without a word, the worker (whose store stays open between
  // jobs) kept renewing the claims, and every later delivery of the timeline was put off as busy
  // for two minutes, until a PostgreSQL restart broke the renewals.
  const taken: ItemRef[] = [];
  try {
    return await gatherAll({ ...options, state: recordingTakes(options.state, taken) }, me, room, wakeId);
  } catch (error) {
    // Renewals stop before the write; should it fail too, the claims lapse unrenewed.
    await options.state.giveBack(taken, wakeId).catch(() => {});
    throw error;
  }
}

/** `state`, with every claim `take` wins recorded in `taken`. */
function recordingTakes(state: ChannelState, taken: ItemRef[]): ChannelState {
  return new Proxy(state, {
    get(target, property) {
      if (property === 'take') {
        return async (ref: ItemRef, wake: string) => {
          const outcome = await target.take(ref, wake);
          if (outcome === 'taken' || outcome === 'resumed') taken.push(ref);
          return outcome;
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

async function gatherAll(options: TimelineWorkOptions, me: Actor, room: Timeline, wakeId: string): Promise<GatheredWork> {
  // The kinds are read at once, each with its own mark and claims, so none waits on another's
  // round trips to the platform. Every one has finished before a failure is passed on, so the
  // claims gatherWork gives back are all there are; nothing is settled then.
  const kinds = await Promise.allSettled([
    messageWork(options, me, room, wakeId),
    singleItemWork(options, me, 'asset', wakeId),
    singleItemWork(options, me, 'webhook_event', wakeId),
    taskWork(options, wakeId),
  ]);
  const failed = kinds.find((kind) => kind.status === 'rejected');
  if (failed) throw failed.reason;
  const work: WorkTurn[] = [];
  const settleKinds: Array<() => Promise<void>> = [];
  let busy = false;
  for (const kind of kinds as Array<PromiseFulfilledResult<{ turns: WorkTurn[]; settle?: () => Promise<void>; busy: boolean }>>) {
    const { turns, settle } = kind.value;
    work.push(...turns);
    busy ||= kind.value.busy;
    if (!settle) continue;
    if (turns.length === 0) await settle();
    else settleKinds.push(settle);
  }
  return { work, settleKinds, busy };
}

/** The unseen messages as one batch (two when a dead wake's batch is finished first), and how to settle their mark afterwards. */
export async function messageWork(options: TimelineWorkOptions, me: Actor, room: Timeline, wakeId: string): Promise<{ turns: WorkTurn[]; settle: () => Promise<void>; busy: boolean }> {
  const { state, timeline } = options;
  let view = await readUnseen(options, me);
  // A fresh batch whose newest message is a peer AI's is read at human speed first, and what
  // lands meanwhile is folded in; a batch an earlier wake already took up is answered as it was.
  // Loop 2 (rebuilding a turn for messages that land while it generates) has no work here: a
  // timeline turn speaks only through a tool, a turn that called one is never rebuilt, and a
  // message that lands mid-turn wakes its own delivery.
  if (!(await anyInFlight(state, view.candidates.map((message) => ref(timeline, message))))) {
    await readAtHumanSpeed(view.candidates, {
      pacing: options.pacing ?? DEFAULT_PACING,
      logger: options.logger,
      fields: { timeline },
      idField: 'message',
      describe: (message) => ({ id: message.content.uuid, fromPeerAi: message.user.kind === 'ai', text: message.content.body, at: Date.parse(message.created_at) }),
      reread: async () => (view = await readUnseen(options, me)).candidates,
      now: options.now,
      sleep: options.sleep,
    });
  }
  const { unseen, candidates, firstWake } = view;
  // Claim in order; a message a live wake holds, and everything after it, is that wake's.
  const claimed: Array<{ message: Message; resumed: boolean }> = [];
  let held: Message | undefined;
  for (const message of candidates) {
    const outcome = await state.take(ref(timeline, message), wakeId);
    if (outcome === 'held') {
      held = message;
      break;
    }
    if (outcome === 'taken' || outcome === 'resumed') claimed.push({ message, resumed: outcome === 'resumed' });
  }
  const batches = await intoBatches(state, timeline, claimed);
  const turns = batches.map(({ messages: batch, anchor }, i): WorkTurn => ({
    kind: 'message',
    refs: batch.map((message) => ref(timeline, message)),
    anchor: anchor ?? batch[0]!.content.uuid,
    prompt: batchPrompt(batch, { firstWake, earlier: firstWake && i === 0 ? unseen.slice(0, unseen.indexOf(batch[0]!)) : [] }),
    addressed: batch.some((message) => mentions(message.content.body, me.handle)) ? 'mention' : twoViewers(room) ? 'one-on-one' : false,
  }));
  return { turns, settle: () => settleMarks(state, timeline, unseen, held), busy: held !== undefined };
}

/**
 * The claimed messages as the turns that answer them. The leading messages dead wakes had claimed
 * are finished as those wakes fixed them: a run that one turn was to answer (fixBatch recorded its
 * anchor) stays that turn, under that anchor, since the journal may already hold its prompt; a
 * dead wake's claims can span several of its turns, and merging them would settle the later ones
 * under a turn whose prompt never showed them. A batch taken over in parts (the rest of it was
 * still held when its turn was finished) is still that turn: the journal finds it done and
 * nothing is answered twice. What arrived since is a batch of its own, in a turn after them, so
 * it is never swallowed unread.
 */
async function intoBatches(state: ChannelState, timeline: string, claimed: ReadonlyArray<{ message: Message; resumed: boolean }>): Promise<Array<{ messages: Message[]; anchor?: string }>> {
  const leading = claimed.findIndex((entry) => !entry.resumed);
  const resumed = claimed.slice(0, leading < 0 ? claimed.length : leading);
  const anchors = await Promise.all(resumed.map((entry) => state.batchOf(ref(timeline, entry.message))));
  const batches: Array<{ messages: Message[]; anchor?: string }> = [];
  resumed.forEach((entry, i) => {
    if (i === 0 || anchors[i] !== anchors[i - 1]) batches.push({ messages: [], ...(anchors[i] !== undefined ? { anchor: anchors[i] } : {}) });
    batches.at(-1)!.messages.push(entry.message);
  });
  const fresh = claimed.slice(resumed.length).map((entry) => entry.message);
  if (fresh.length > 0) batches.push({ messages: fresh });
  return batches;
}

/** What is unseen on the timeline, and which of it this wake would answer (peers' messages only). */
async function readUnseen(options: TimelineWorkOptions, me: Actor): Promise<{ unseen: Message[]; candidates: Message[]; firstWake: boolean }> {
  const { client, state, timeline } = options;
  const unseen = await unseenMessages(client, state, timeline, options.firstWakeWindow ?? DEFAULT_CONTEXT_MESSAGES);
  const fromPeers = unseen.filter((message) => message.user.uuid !== me.uuid);
  const firstWake = (await state.mark(timeline, 'message')) === undefined;
  // A first wake also takes up what an earlier wake claimed and never finished (it was killed
  // before its first settle, so there is no mark yet).
  const phases = await Promise.all(fromPeers.map((message) => state.phase(ref(timeline, message))));
  const stranded = new Set(fromPeers.filter((_, i) => phases[i] === 'in-flight'));
  const chosen = firstWake ? new Set([...firstWakeReplySet(unseen, me, options.trigger), ...stranded]) : new Set(fromPeers);
  return { unseen, candidates: unseen.filter((message) => chosen.has(message)), firstWake };
}

type SingleKind = 'asset' | 'webhook_event';
type SingleItem = Asset | WebhookEvent;

/**
 * Unseen assets or webhook events, each in a turn of its own. Since the mark: every newer one;
 * on a first wake: the trigger and what is newer, else only the newest. The agent's own assets
 * are skipped (their mark advances).
 */
export async function singleItemWork(options: TimelineWorkOptions, me: Actor, kind: SingleKind, wakeId: string): Promise<{ turns: WorkTurn[]; settle: () => Promise<void>; busy: boolean }> {
  const { client, state, timeline } = options;
  const mark = await state.mark(timeline, kind);
  const trigger = options.triggers?.[kind];
  const list = kind === 'asset' ? client.assets.list({ timeline }) : client.webhookEvents.list({ timeline });
  const newestFirst: SingleItem[] = [];
  for await (const item of list as AsyncIterable<SingleItem>) {
    if (item.content.uuid === mark) break;
    newestFirst.push(item);
    if (mark === undefined && (trigger === undefined || item.content.uuid === trigger || newestFirst.length >= (options.firstWakeWindow ?? DEFAULT_CONTEXT_MESSAGES))) break;
  }
  const unseen = newestFirst.reverse();
  const turns: WorkTurn[] = [];
  let held: SingleItem | undefined;
  // A first wake with no trigger does not answer old webhook deliveries: it records the newest as
  // seen, so a fresh agent never replays a backlog of historical events (a router's --event is
  // what makes a first wake act on one).
  const baselineOnly = kind === 'webhook_event' && mark === undefined && trigger === undefined;
  if (baselineOnly && unseen.length > 0) options.logger.info('webhook events baselined', { timeline, newest: unseen.at(-1)!.content.uuid, note: 'a first wake with no --event answers none of the earlier deliveries' });
  for (const item of baselineOnly ? [] : unseen) {
    if (kind === 'asset' && (item as Asset).user.uuid === me.uuid) continue;
    const itemRef: ItemRef = { timeline, kind, item: item.content.uuid };
    const outcome = await state.take(itemRef, wakeId);
    if (outcome === 'held') {
      held = item;
      break;
    }
    if (outcome !== 'taken' && outcome !== 'resumed') continue;
    const line = kind === 'asset' ? assetLine(item as Asset) : webhookEventLine(item as WebhookEvent);
    const noun = kind === 'asset' ? 'A new asset was shared on this timeline' : 'A webhook event arrived on this timeline';
    const image = kind === 'asset' ? await sharedImage(options, item as Asset) : undefined;
    const seen = image ? '\nIts image is shown to you with this message.' : '';
    turns.push({
      kind,
      refs: [itemRef],
      anchor: item.content.uuid,
      prompt: `${noun}:\n${line}${seen}\n\nAct on it if it calls for it; speak only by calling messages_create.`,
      addressed: false,
      ...(image ? { attachments: [{ type: 'image', ...image }] } : {}),
    });
  }
  const settle = async () => {
    const stop = held ? unseen.indexOf(held) : unseen.length;
    const lastSettled = unseen[stop - 1];
    if (lastSettled) await state.setMark(timeline, kind, lastSettled.content.uuid);
  };
  return { turns, settle, busy: held !== undefined };
}

/**
 * A peer's shared image, to show the model on the turn it arrived (not only when it thinks to call
 * assets_view). One that cannot be fetched is left to assets_view, with a WARNING saying why.
 */
async function sharedImage(options: TimelineWorkOptions, asset: Asset): Promise<{ data: string; mediaType: string } | undefined> {
  try {
    return await viewableImage(options.client, asset);
  } catch (error) {
    options.logger.warn('shared image not shown', { timeline: options.timeline, asset: asset.content.uuid, error: errorMessage(error), note: 'the model can still look with assets_view' });
    return undefined;
  }
}

/** Activated tasks not yet taken up (the seen-set), each in a turn of its own; the agent's own tasks run too. */
export async function taskWork(options: TimelineWorkOptions, wakeId: string): Promise<{ turns: WorkTurn[]; busy: boolean }> {
  const { client, state, timeline } = options;
  const turns: WorkTurn[] = [];
  let busy = false;
  const activated: Task[] = [];
  for await (const task of client.tasks.list({ timeline, status: 'activated' })) {
    activated.push(task);
    if (activated.length >= (options.firstWakeWindow ?? DEFAULT_CONTEXT_MESSAGES)) break;
  }
  for (const task of activated.reverse()) {
    const itemRef: ItemRef = { timeline, kind: 'task', item: task.content.uuid };
    if (await state.hasSeen(itemRef)) continue;
    const outcome = await state.take(itemRef, wakeId);
    if (outcome === 'held') {
      busy = true;
      continue;
    }
    if (outcome === 'done' || outcome === 'abandoned') {
      await state.markSeen(itemRef);
      continue;
    }
    turns.push({
      kind: 'task',
      refs: [itemRef],
      anchor: task.content.uuid,
      prompt: `A scheduled task activated on this timeline:\n${taskLine(task)}\n\nDo what it says; speak only by calling messages_create.`,
      addressed: false,
      after: () => state.markSeen(itemRef),
    });
  }
  return { turns, busy };
}

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
  const mark = await state.mark(timeline, 'message');
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
async function settleMarks(state: ChannelState, timeline: string, unseen: readonly Message[], firstPending: Message | undefined): Promise<void> {
  const stop = firstPending ? unseen.indexOf(firstPending) : unseen.length;
  const last = unseen[stop - 1];
  if (last) await state.setMark(timeline, 'message', last.content.uuid);
}

async function anyInFlight(state: ChannelState, refs: readonly ItemRef[]): Promise<boolean> {
  return (await Promise.all(refs.map((item) => state.phase(item)))).includes('in-flight');
}

const ref = (timeline: string, message: Message): ItemRef => ({ timeline, kind: 'message', item: message.content.uuid });
