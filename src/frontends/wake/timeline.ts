import { createHash, randomUUID } from 'node:crypto';
import type { AgentSession, HarnessAgent } from '../../harness/harness-agent.ts';
import type { BaseCradleClient } from '../../channel/client.ts';
import { NotFoundError } from '../../channel/errors.ts';
import { createIdempotencyKey } from '../../channel/idempotency.ts';
import type { ItemRef, NextLapse } from '../../store/channel-state.ts';
import type { KeyedKind, ToolImage } from '../../channel/tools/kit.ts';
import { createPlatformTools, type PlatformToolsOptions, toolManifest } from '../../channel/tools/index.ts';
import { interruptOnOutage } from '../../channel/tools/outage.ts';
import type { Timeline } from '../../channel/types.ts';
import type { HarnessTurnResult } from '../../harness/harness-results.ts';
import type { Tool, ToolContext } from '../../tools/tool.ts';
import { AcxError, errorMessage, someCause } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';
import type { BreakerSettings } from '../../store/breaker.ts';
import { serverNotThereYet } from '../../store/postgres-wait.ts';
import { refuseUnattended, WAKE_APPROVAL_REMEDY } from '../unattended-approvals.ts';
import { passTimelineBreaker } from './timeline-breaker.ts';
import { type GatheredWork, gatherWork, type TimelineWorkOptions, type WorkTurn } from './timeline-work.ts';

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
 * Unseen messages batch into one turn; each unseen asset, webhook event and activated task gets
 * a turn of its own, every item shown with its [created_at].
 */
export interface TimelineWakeOptions extends TimelineWorkOptions {
  deliveryId?: string;
  /**
   * The agent for this wake, given what its platform tools are made from (timelinePlatformTools
   * makes them: they are how it perceives and speaks; an agent prepared ahead binds the tools it
   * made to these) and the brief's sections for the agent's whole tool set once it is assembled: a
   * manifest of every active tool with a gotcha each, and the platform's dashboard.md (absent when
   * it could not be fetched, or with onboarding off).
   */
  agent: (platform: PlatformToolsOptions, brief: (tools: readonly Tool[]) => Promise<readonly string[]>) => Promise<{ agent: HarnessAgent; maxSteps?: number; close(): Promise<void> }>;
  /** Orient the agent with the platform's dashboard.md in its brief (ACX_ONBOARD); default on. */
  onboard?: boolean;
  /** The model this wake would call, named on `wake start` (absent: not named). */
  model?: { provider: string; modelId: string };
  /** The per-timeline circuit breaker (ACX_WAKE_BREAKER_*); absent: none. */
  breaker?: BreakerSettings;
  /** The agent's workspace, from which assets_create can share a file by path (a generated image). */
  workspace?: string;
  /** The agent's permission mode, named when a call it does not allow is refused (nobody can approve one in a wake). */
  permissionMode?: string;
}

/** Speech is a tool on a timeline: the final text reaches no one; messages_create is the voice. */
export const TIMELINE_SPEECH = { mode: 'tool', tool: 'messages_create' } as const;

/** How the platform tools get a create's key: the wake supplies it per kind, from the call's context. */
export type CreateKeySource = (kind: KeyedKind, context: ToolContext) => Promise<string | undefined>;

export type TimelineWakeOutcome =
  | { outcome: 'answered'; posted: number; steps: number; turnId: string; result: HarnessTurnResult }
  | { outcome: 'nothing-new' | 'declined'; posted: 0 }
  /** Another wake holds some of its work; `lapse`: when the first of those claims lapses unless renewed, and whether its holder missed a renewal (ChannelState.nextLapse). */
  | { outcome: 'busy'; posted: 0; lapse?: NextLapse | undefined }
  /** Its claims lapsed mid-wake (PostgreSQL: not renewed within their TTL): the wake that took them over answers the items. */
  | { outcome: 'lease-lost'; posted: number }
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
  const breaker = options.breaker ? await passTimelineBreaker(state, timeline, options.breaker, logger, bookend) : undefined;
  if (breaker?.passed === false) return { outcome: 'declined', posted: 0 };

  // Both read at once (a round trip less before the model is asked); the timeline's answer decides first.
  const [roomRead, meRead] = await Promise.allSettled([client.timelines.get(timeline), client.dashboard.get()]);
  if (roomRead.status === 'rejected') {
    if (NotFoundError.isInstance(roomRead.reason)) {
      logger.info('wake skipped', { ...bookend, reason: 'timeline_deleted' });
      return { outcome: 'skipped', reason: 'timeline_deleted', posted: 0 };
    }
    throw roomRead.reason;
  }
  const room: Timeline = roomRead.value.timeline;
  if (room.locked) {
    logger.info('wake skipped', { ...bookend, reason: 'timeline_locked' });
    return { outcome: 'skipped', reason: 'timeline_locked', posted: 0 };
  }
  if (meRead.status === 'rejected') throw meRead.reason;
  const me = meRead.value.identity;
  logger.info('wake start', {
    ...bookend,
    agent: me.handle,
    trigger: options.trigger ?? options.triggers?.asset ?? options.triggers?.webhook_event,
    provider: options.model?.provider,
    model: options.model?.modelId,
  });

  // What this wake answers (timeline-work.ts gatherWork); each kind settles after its turns.
  let gathered: GatheredWork;
  try {
    gathered = await gatherWork(options, me, room, wakeId);
  } catch (error) {
    logger.error('wake end', { ...bookend, outcome: 'error', error: errorMessage(error), note: 'its work could not be gathered; what it had claimed is given back for the next wake', duration: seconds(started) });
    throw error;
  }
  let { work, settleKinds } = gathered;
  const { busy } = gathered;
  if (work.length === 0) {
    // Answering nothing, it is not counted (timeline-breaker.ts).
    if (breaker?.passed) await breaker.retract();
    if (!busy) {
      logger.info('wake end', { ...bookend, outcome: 'nothing-new', posted: 0, turns: 0, duration: seconds(started) });
      return { outcome: 'nothing-new', posted: 0 };
    }
    // Whoever tries again (a worker puts the delivery off) need not wait past a dead holder's lapse.
    const lapse = await state.nextLapse(timeline);
    const lapseFields = lapse ? { lapses_in: `${(lapse.inMs / 1000).toFixed(2)}s`, ...(lapse.renewalMissed ? { holder: 'missed a renewal' } : {}) } : {};
    logger.info('wake end', { ...bookend, outcome: 'busy', posted: 0, turns: 0, ...lapseFields, duration: seconds(started) });
    return { outcome: 'busy', posted: 0, lapse };
  }

  // The platform tools are made once; each turn's creates are keyed by its own anchor.
  let anchor = work[0]!.anchor;
  const keyFor: CreateKeySource = async (kind, context) => {
    const earlier = (await context.earlierCalls?.()) ?? [];
    const ordinal = 1 + earlier.filter((call) => CREATING_TOOLS[kind].includes(call.toolName)).length;
    return createIdempotencyKey({ timeline, anchor, kind, ordinal });
  };
  // The whole platform tool set: a timeline agent perceives and speaks through it.
  // The images this turn's tool calls returned, for assets_post_image: a step's results are
  // read when it finishes, so a later step can share what an earlier one made.
  let turnImages: ToolImage[] = [];
  const platform: PlatformToolsOptions = {
    client,
    timeline,
    idempotencyKey: keyFor,
    recentToolImages: () => turnImages,
    ...(options.workspace ? { workspace: options.workspace } : {}),
  };
  let prepared: Awaited<ReturnType<TimelineWakeOptions['agent']>>;
  try {
    // The dashboard for the brief is fetched while the agent is prepared; the brief waits for it.
    const brief = platformBrief(client, options.onboard !== false, logger);
    prepared = await options.agent(platform, async (agentTools) => (await brief)(agentTools));
  } catch (error) {
    // An agent that cannot start (a required MCP server down, a broken config) is the operator's
    // problem, not the items': they go back as this wake found them, unanswered and unsettled,
    // and the wake fails so the router retries it; no retry brings them nearer to being set aside.
    await state.giveBack(work.flatMap((turn) => turn.refs), wakeId);
    logger.error('wake end', { ...bookend, outcome: 'error', error: errorMessage(error), note: 'the agent could not start; the items stay unanswered for the next wake', duration: seconds(started) });
    throw error;
  }
  let posted = 0;
  let steps = 0;
  let turns = 0;
  let last: HarnessTurnResult | undefined;
  let lastAnchor = work[0]!.anchor;
  let resumed = false;
  // Why the wake gathered no further round though there may be more to answer (the breaker declined it).
  let roundsStopped: string | undefined;
  // Aborted if this wake's claims lapse mid-wake (PostgreSQL: not renewed within the lease TTL):
  // another wake may be running the same turn, so this one stops rather than do it all twice.
  const claimsLost = state.claimsLost(wakeId);
  const onApprovalRequest = refuseUnattended(logger, { subject: 'a wake', remedy: WAKE_APPROVAL_REMEDY, permissionMode: options.permissionMode, fields: bookend });
  try {
    const session = await prepared.agent.createSession({ sessionId: `timeline:${timeline}` });
    // Rounds: what arrived while this wake worked is answered by it too, before it ends (its
    // deliveries, waiting on this wake's claims, would otherwise be put off until it had), up to
    // MAX_ROUNDS gatherings so one wake never runs unbounded under steady traffic.
    for (let round = 1; ; round++) {
      for (const turn of work) {
        anchor = turn.anchor;
        stopIfClaimsLost(claimsLost, turn, logger, bookend);
        if ((await Promise.all(turn.refs.map((item) => state.resumes(item)))).some((resumes) => resumes > STALL_AFTER_FAILED_RESUMES)) {
          await setAside(options, session, turn, wakeId, bookend);
          continue;
        }
        // A long turn keeps its claims fresh, so no other wake ever reads them as stale.
        // A failed heartbeat is tried again at the next one, hours before the claims read as stale.
        const heartbeat = setInterval(() => void state.heartbeat(turn.refs, wakeId).catch(() => {}), HEARTBEAT_MS);
        heartbeat.unref();
        // Before the journal holds the turn: a wake taking these claims over finishes them as this turn.
        if (turn.kind === 'message') await state.fixBatch(turn.refs, wakeId, turn.anchor);
        let result: HarnessTurnResult;
        try {
          turnImages = [];
          result = await prepared.agent.generate({
            session,
            prompt: turn.prompt,
            turnId: timelineTurnId(timeline, turn.anchor),
            addressed: turn.addressed,
            ...(turn.attachments ? { attachments: turn.attachments } : {}),
            onApprovalRequest,
            abortSignal: claimsLost,
            onStepFinish: (step) => {
              for (const { toolName, output } of step.toolResults) turnImages.push(...imagesIn(output, toolName));
            },
          });
        } catch (error) {
          stopIfClaimsLost(claimsLost, turn, logger, bookend);
          if ((error as { code?: string }).code !== 'turn-compacted') throw error;
          // Nothing is left to continue it from, and re-running it blind could repeat its effects:
          // the items are given up for good, and the wake goes on with the rest of its work (failing
          // it would only make the router retry a wake that skips them anyway).
          warnUnsettled(await state.abandon(turn.refs, wakeId, 'its turn was compacted away before it finished'), turn, logger, bookend);
          await turn.after?.();
          logger.error('items abandoned', { ...bookend, kind: turn.kind, items: turn.refs.map((r) => r.item).join(','), reason: 'turn-compacted' });
          continue;
        } finally {
          clearInterval(heartbeat);
        }
        // A turn still waiting on a call has not answered its items: they stay claimed in flight,
        // and the wake fails so the next one resumes the turn. Never an item handled mid-call.
        const waiting = [...result.pendingApprovals, ...result.pendingToolCalls].map((call) => call.toolName);
        if (waiting.length > 0) throw new AcxError('turn-suspended', `the turn ended waiting on ${waiting.join(', ')}, so its items are not answered`);
        const posts = logPosts(result, logger, bookend);
        if (result.unspoken) logger.info('unspoken', { ...bookend, kind: turn.kind, text: result.unspoken });
        warnUnsettled(await state.commit(turn.refs, wakeId), turn, logger, bookend);
        await turn.after?.();
        posted += posts;
        steps += result.stepCount;
        turns += 1;
        resumed ||= result.resumed;
        last = result;
        lastAnchor = turn.anchor;
      }
      for (const settle of settleKinds) await settle();
      if (round >= MAX_ROUNDS) break;
      // Each further gathering counts as a wake for the breaker: two agents answering each other
      // within one wake must trip it as soon as they would across wakes.
      const again = options.breaker ? await passTimelineBreaker(state, timeline, options.breaker, logger, bookend, true) : undefined;
      if (again?.passed === false) {
        roundsStopped = 'circuit breaker tripped';
        break;
      }
      ({ work, settleKinds } = await gatherWork(options, me, room, wakeId));
      if (work.length === 0) {
        if (again?.passed) await again.retract();
        break;
      }
    }
    logger.info('wake end', {
      ...bookend,
      outcome: 'answered',
      posted,
      turns,
      steps: `${steps}/${(prepared.maxSteps ?? 0) * turns || '?'}`,
      resumed,
      ...(roundsStopped ? { rounds_stopped: roundsStopped } : {}),
      duration: seconds(started),
    });
    return { outcome: 'answered', posted, steps, turnId: timelineTurnId(timeline, lastAnchor), result: last! };
  } catch (error) {
    if (claimsLost.aborted) {
      // Not this wake's failure: the claims lapsed, and the wake that took them over answers the items.
      logger.warn('wake end', { ...bookend, outcome: 'lease-lost', posted, reason: errorMessage(claimsLost.reason), note: 'the wake that took the claims over answers the items', duration: seconds(started) });
      return { outcome: 'lease-lost', posted };
    }
    // The claims stay in flight, let go of: the next wake resumes the turn from the journal. A
    // turn stopped by the platform's outage, or by a server it needs going away (PostgreSQL
    // restarting, a connection reset), is no sign of a stalled item, so its resume is not counted
    // (found by the chaos run: a 10 s full disk, then two PostgreSQL restarts and a kill, set a
    // message aside).
    await state
      .letGo(
        work.flatMap((turn) => turn.refs),
        wakeId,
        { countResume: !interruptedByOutage(error) && !serverNotThereYet(error) },
      )
      .catch((failure: unknown) => logger.warn('claims not let go', { ...bookend, error: errorMessage(failure), note: 'they are resumed once they lapse' }));
    logger.error('wake end', { ...bookend, outcome: 'error', error: errorMessage(error), note: 'the items stay claimed in flight; the next wake resumes the turn', duration: seconds(started) });
    throw error;
  } finally {
    await prepared.close();
  }
}

/**
 * An item this wake took over from the third wake in a row that did not finish it (the first try
 * and two resumes failed) is set aside rather than tried forever: the items abandoned (the reason
 * kept with their claims), the turn given up in the journal so it no longer holds back the
 * session, and an ERROR naming them. Nothing is posted: the harness never speaks in the agent's
 * voice, so whether and how to tell anyone is the agent's (and the operator's) call.
 */
async function setAside(options: TimelineWakeOptions, session: AgentSession, turn: WorkTurn, wakeId: string, bookend: Record<string, string>): Promise<void> {
  const { state, timeline, logger } = options;
  const reason = `set aside after ${STALL_AFTER_FAILED_RESUMES} failed resumes`;
  warnUnsettled(await state.abandon(turn.refs, wakeId, reason), turn, logger, bookend);
  await session.abandonTurn(timelineTurnId(timeline, turn.anchor), `its items were ${reason}`);
  await turn.after?.();
  logger.error('items abandoned', {
    ...bookend,
    kind: turn.kind,
    items: turn.refs.map((item) => item.item).join(','),
    reason: 'stalled',
    resumes: STALL_AFTER_FAILED_RESUMES,
    note: 'nothing was posted: the harness never speaks for the agent',
  });
}

/**
 * One line per message the agent posted (`kind=tool`, the body's length, never the body), and an
 * ERROR for each post the platform refused: the agent thought, spent tokens, and was not heard.
 * A failed call stays in toolResults with an `error` field (the engine's result shape).
 */
function logPosts(result: HarnessTurnResult, logger: Logger, bookend: Record<string, string>): number {
  let posted = 0;
  for (const call of result.toolResults) {
    if (call.toolName !== 'messages_create') continue;
    const body = (call.input as { body?: unknown } | null)?.body;
    const chars = typeof body === 'string' ? [...body].length : undefined;
    const error = (call as { error?: unknown }).error;
    if (error !== undefined) {
      logger.error('post refused', { ...bookend, kind: 'tool', chars, error: errorMessage(error), note: 'the agent was not heard' });
      continue;
    }
    posted += 1;
    logger.info('posted', { ...bookend, message: /Posted message (\S+)/.exec(String(call.output))?.[1] ?? null, kind: 'tool', chars });
  }
  return posted;
}

/** Whether the turn was stopped by a platform outage (interruptOnOutage), the error or one it was caused by. */
function interruptedByOutage(error: unknown): boolean {
  return someCause(error, (at) => AcxError.hasCode(at, 'turn-interrupted'));
}

/** Ends the wake once its claims are lost, saying which items: another wake may be answering them. */
function stopIfClaimsLost(claimsLost: AbortSignal, turn: WorkTurn, logger: Logger, bookend: Record<string, string>): void {
  if (!claimsLost.aborted) return;
  const reason = errorMessage(claimsLost.reason);
  logger.warn('claims lost', { ...bookend, kind: turn.kind, items: turn.refs.map((r) => r.item).join(','), reason, note: 'the turn is stopped so it does not run twice' });
  throw new Error(`the wake stopped: ${reason}`);
}

/** A commit or abandon that settled nothing for some items (another wake took them over) is said, never passed over. */
function warnUnsettled(missed: readonly ItemRef[], turn: WorkTurn, logger: Logger, bookend: Record<string, string>): void {
  if (missed.length === 0) return;
  logger.warn('claims not settled', {
    ...bookend,
    kind: turn.kind,
    items: missed.map((r) => r.item).join(','),
    reason: 'no longer held by this wake: its claims lapsed and another wake took them over',
  });
}

/** Resumes of a take-over that may fail before its items are set aside (FACTS.md: 2). */
const STALL_AFTER_FAILED_RESUMES = 2;

/**
 * A timeline agent's platform tools, made from `platform`. Unattended: a platform outage stops the
 * turn (the next wake continues it) rather than tell a model whose reply to "the platform could not
 * be reached" nobody would hear.
 */
export function timelinePlatformTools(platform: PlatformToolsOptions): Tool[] {
  return createPlatformTools(platform).map(interruptOnOutage);
}

/**
 * The brief's platform part, given the agent's whole tool set: every active tool with a one-line
 * gotcha, then dashboard.md when onboarding is on (a failed fetch degrades to a WARNING).
 */
async function platformBrief(client: BaseCradleClient, onboard: boolean, logger: Logger): Promise<(tools: readonly Tool[]) => string[]> {
  let dashboard: string | undefined;
  if (onboard) {
    try {
      dashboard = `## The platform (its dashboard)\n${(await client.dashboard.markdown()).trim()}`;
    } catch (error) {
      logger.warn('dashboard unavailable', { error: errorMessage(error), note: 'the brief goes without it' });
    }
  }
  return (tools) => [
    `## Your tools\nYou perceive and act only through these; speaking on the platform is messages_create.\n${toolManifest(tools)}`,
    ...(dashboard ? [dashboard] : []),
  ];
}

const HEARTBEAT_MS = 5 * 60_000;

/** How many times one wake gathers work (the first and what arrived meanwhile) before it ends. */
const MAX_ROUNDS = 5;

const seconds = (since: number) => `${((performance.now() - since) / 1000).toFixed(2)}s`;

/** The batch's turn id: the same batch (same timeline, same oldest message) is the same turn. */
export function timelineTurnId(timeline: string, anchor: string): string {
  return `timeline-${createHash('sha256').update(`${timeline}:${anchor}`).digest('hex').slice(0, 32)}`;
}

/** The image parts of a tool's output (a content list, or `{ content }`), oldest first. */
function imagesIn(output: unknown, toolName: string): ToolImage[] {
  const parts = Array.isArray(output) ? output : Array.isArray((output as { content?: unknown } | null)?.content) ? (output as { content: unknown[] }).content : [];
  return parts.flatMap((part) => {
    const image = part as { type?: unknown; data?: unknown; mediaType?: unknown };
    return image.type === 'image' && typeof image.data === 'string' && typeof image.mediaType === 'string' ? [{ data: image.data, mediaType: image.mediaType, toolName }] : [];
  });
}
