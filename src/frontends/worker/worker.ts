import type { Job } from 'pg-boss';
import type { HarnessAgent } from '../../harness/harness-agent.ts';
import { DEFAULT_WAKE_LEASE_TTL_MS } from '../../store/postgres-wake-store.ts';
import { serverNotThereYet } from '../../store/postgres-wait.ts';
import type { NextLapse } from '../../store/channel-state.ts';
import type { BreakerSettings, WakeStore } from '../../store/wake-store.ts';
import { errorMessage } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';
import type { PacingSettings } from '../wake/pacing.ts';
import { wake } from '../wake/session.ts';
import { type SessionWakeJob, type TimelineWakeJob, WAKE_QUEUE, type WakeJob, type WakeQueue } from './queue.ts';

/**
 * `acx worker`: takes wake jobs off the queue and answers each with the same session wake as
 * `acx wake` (src/frontends/wake/session.ts), in this process. The wake records the job's event
 * (once per id), takes the session's lease, answers everything pending in order and logs its
 * bookend lines; so a job delivered twice, or retried after its event was answered, answers
 * nothing twice. Each outcome maps to what pg-boss does with the job:
 *
 * - answered / nothing-new: completed.
 * - busy (another holder's lease, e.g. a dead worker's not yet lapsed) or declined (the breaker):
 *   deferred — not a failure, so it spends none of the retries meant for failures. The event is
 *   already recorded (the wake's admit records it before deciding), so the job is sent again to
 *   start when the session may be free (`busyDeferSeconds`, doubled per deferral up to
 *   `maxBusyDeferSeconds`) or the breaker may reopen (its cooldown), and only then is this job
 *   completed. A busy wake is not counted by the breaker, so a long turn's waiting events never trip it. Sent before completed: a crash in between
 *   leaves two jobs for one recorded event, which the wake answers once; a send that fails throws
 *   and the job is retried as before. After `maxDeferrals` the job fails into pg-boss's retries,
 *   so a session that never frees up ends in the dead-letter queue, not in a loop.
 * - lease-lost (the wake's lease lapsed mid-turn, so another holder may have taken the session
 *   over and answers what is pending): deferred as busy is — the later job finds the event
 *   answered, or answers it if no one took the session over (the server was only unreachable).
 * - the job's event set aside after the wake's own attempts: dead-lettered at once.
 * - a throw (agent cannot start, a model fault the wake retries): failed, retried, and
 *   dead-lettered once its retries are spent.
 */
export interface WorkerAgent {
  name: string;
  /**
   * Prepares the agent: called when its first job is answered, and again by the first job after
   * `watch` reported a change. A prepared agent serves every job in between.
   */
  prepare: () => Promise<PreparedWorkerAgent>;
  /**
   * Calls `onChange` when what the agent is prepared from changes on disk; returns how to stop
   * watching. Absent: the agent is prepared once for the worker's life.
   */
  watch?: ((onChange: () => void) => () => void) | undefined;
  store: WakeStore;
  model?: { provider: string; modelId: string } | undefined;
  maxSteps?: number | undefined;
  /** Runs a platform delivery's timeline wake; absent: this worker takes no timeline jobs for the agent. */
  wakeTimeline?: (job: TimelineWakeJob) => Promise<{ outcome: string; lapse?: NextLapse | undefined }>;
}

export interface PreparedWorkerAgent {
  agent: HarnessAgent;
  close(): Promise<void>;
}

export interface WorkerOptions {
  queue: WakeQueue;
  agents: readonly WorkerAgent[];
  /** Jobs this worker runs at once (default 1); pg-boss never gives it two of one session. */
  concurrency?: number;
  breaker: BreakerSettings;
  pacing: PacingSettings;
  maxAttempts: number;
  logger: Logger;
  /** How long an idle worker waits between polls when no notification woke it (seconds, default 1). */
  pollSeconds?: number;
  /**
   * When a busy session's event is first tried again (seconds): a live holder answers it anyway;
   * this is for a dead one, whose lease lapses within the PostgreSQL lease TTL (the default, 15 s).
   * Each further deferral of the event doubles it, up to `maxBusyDeferSeconds`.
   */
  busyDeferSeconds?: number;
  /** The longest a busy session's event is put off at once (seconds, default MAX_BUSY_DEFER_SECONDS). */
  maxBusyDeferSeconds?: number;
  /** How often one event may be put off before it counts as a failure (default DEFAULT_MAX_DEFERRALS). */
  maxDeferrals?: number;
}

/** A busy event's first deferral (seconds, `busyDeferSeconds`): a dead holder's lease (the PostgreSQL default TTL) has lapsed by then. */
export const DEFAULT_BUSY_DEFER_SECONDS = DEFAULT_WAKE_LEASE_TTL_MS / 1000;

/**
 * How long past its holder's claims' lapse a busy event comes back (seconds). With the wake state
 * on PostgreSQL both ends are read off the server's clock (ChannelState.nextLapse, pg-boss's
 * start_after), so the margin covers only the time between the two reads; were they on clocks
 * that disagree, an event brought back early is only put off again, until the lapse.
 */
export const LAPSE_MARGIN_SECONDS = 0.25;

/** Deferrals one event may have (busy, breaker) before its job fails into pg-boss's retries: about 8 hours busy, backed off. */
export const DEFAULT_MAX_DEFERRALS = 100;

/** The cap on one busy deferral (seconds): a long turn is waited out in steps of at most 5 minutes. */
export const MAX_BUSY_DEFER_SECONDS = 300;

/**
 * How long a busy session's event is put off: the base doubled for each deferral so far, up to
 * the cap. A live leader's long turn answers the event anyway, so its waiting jobs come back less
 * and less often instead of every few seconds (each one a query, a log line and a queue job).
 */
export function busyDeferralSeconds(baseSeconds: number, deferralsSoFar: number, capSeconds: number = MAX_BUSY_DEFER_SECONDS): number {
  return Math.min(capSeconds, baseSeconds * 2 ** Math.min(deferralsSoFar, 30));
}

export interface RunningWorker {
  /** Stops taking jobs, waits for the running ones to finish, and stops. */
  stop(): Promise<void>;
}

/** The failure a job put off too often reports to pg-boss: the job is retried, its event kept. */
export class WakeDeferred extends Error {}

export async function startWorker(options: WorkerOptions): Promise<RunningWorker> {
  const { queue, logger } = options;
  const byName = new Map(options.agents.map((agent) => [agent.name, agent]));
  const agents = new PreparedAgents(logger);
  const unwatch = options.agents.flatMap((agent) => (agent.watch ? [agent.watch(() => agents.retire(agent.name, 'its files changed on disk'))] : []));

  const answer = async (job: Job<WakeJob>): Promise<'completed' | 'deadletter'> => {
    const data = job.data;
    const agent = byName.get(data.agent);
    if (!agent) {
      logger.error('worker job refused', { job: job.id, agent: data.agent, reason: `this worker serves no agent named ${data.agent}` });
      return 'deadletter';
    }
    if (data.kind === 'timeline') {
      if (!agent.wakeTimeline) throw new Error(`this worker cannot wake @${agent.name} on a timeline`);
      const { outcome, lapse } = await agent.wakeTimeline(data);
      if (outcome === 'busy' || outcome === 'declined' || outcome === 'lease-lost') return defer(job, outcome, `timeline ${data.timeline}`, lapse);
      return 'completed';
    }
    return answerSession(agent, job as Job<SessionWakeJob>);
  };

  const maxDeferrals = options.maxDeferrals ?? DEFAULT_MAX_DEFERRALS;
  /** Puts a busy, declined or lease-lost job's event off: the same job again, for later; this one completed (see above). */
  const defer = async (job: Job<WakeJob>, outcome: 'busy' | 'declined' | 'lease-lost', what: string, lapse?: NextLapse): Promise<'completed'> => {
    const deferrals = (job.data.deferrals ?? 0) + 1;
    const why = outcome === 'declined' ? 'declined by its circuit breaker' : outcome === 'busy' ? 'busy' : 'left when its lease was lost';
    if (deferrals > maxDeferrals) throw new WakeDeferred(`${what} was ${why} ${maxDeferrals} times running; the job is retried as a failure`);
    const busyBase = options.busyDeferSeconds ?? DEFAULT_BUSY_DEFER_SECONDS;
    const busyFor = busyDeferralSeconds(busyBase, deferrals - 1, options.maxBusyDeferSeconds);
    // The first time, and whenever the holder has missed a renewal, only until its claims lapse:
    // a dead holder's are taken over then (found by the chaos run: deliveries behind a killed or
    // failed wake waited out whole deferrals, doubled, 30 s and more; then up to 2 s past the
    // lapse, rounded up to whole seconds). A live holder renews them and answers the event
    // itself; for it the later deferrals double, so a long turn's waiting events come back less
    // and less often.
    const untilLapse = lapse && (deferrals === 1 || lapse.renewalMissed) ? lapse.inMs / 1000 + LAPSE_MARGIN_SECONDS : undefined;
    const seconds =
      outcome === 'declined'
        ? Math.max(1, Math.ceil(options.breaker.cooldownMs / 1000))
        : untilLapse !== undefined && untilLapse < busyFor
          ? Math.round(untilLapse * 100) / 100
          : Math.max(1, Math.ceil(busyFor));
    const again = await queue.send({ ...job.data, deliveryId: job.data.deliveryId ?? job.id, deferrals }, { startAfterSeconds: seconds });
    logger.info('worker job deferred', { job: job.id, session: job.data.sessionId, outcome, again, after_s: seconds, deferrals });
    return 'completed';
  };

  const answerSession = async (agent: WorkerAgent, job: Job<SessionWakeJob>): Promise<'completed' | 'deadletter'> => {
    const use = agents.use(agent);
    try {
      return await answerWith(use.agent, agent, job);
    } finally {
      use.done();
    }
  };

  const answerWith = async (prepared: () => Promise<HarnessAgent>, agent: WorkerAgent, job: Job<SessionWakeJob>): Promise<'completed' | 'deadletter'> => {
    const data = job.data;
    const outcome = await wake({
      agent: prepared,
      store: agent.store,
      sessionId: data.sessionId,
      event: data.event,
      breaker: options.breaker,
      pacing: options.pacing,
      maxAttempts: options.maxAttempts,
      deliveryId: data.deliveryId ?? job.id,
      model: agent.model,
      maxSteps: agent.maxSteps,
      logger,
    });
    if (outcome.outcome === 'busy' || outcome.outcome === 'declined' || outcome.outcome === 'lease-lost') return defer(job, outcome.outcome, `session ${data.sessionId}`);
    return outcome.failedEvents.includes(data.event.id) ? 'deadletter' : 'completed';
  };

  // One pg-boss worker per slot, each with its own id: a slot that has just answered a job asks
  // its own worker to fetch again at once (notifyWorker), instead of sleeping out the poll. The
  // poll stays short for the rest: a session's next job becomes fetchable when its previous one
  // settles, which notifies no one.
  const concurrency = options.concurrency ?? 1;
  const workIds: string[] = [];
  for (let slot = 0; slot < concurrency; slot++) {
    let workId = '';
    workId = await queue.boss.work<WakeJob>(
      WAKE_QUEUE,
      { batchSize: 1, perJobResults: true, pollingIntervalSeconds: options.pollSeconds ?? 1, notifyPollingIntervalSeconds: options.pollSeconds ?? 1 },
      async (jobs) => {
        const results = [];
        for (const job of jobs) {
          try {
            const status = await answer(job);
            // Settled here, waiting out a server restart (found by the chaos run: a job answered as
            // PostgreSQL restarted stayed active until its heartbeat lapsed, 10-15 s, and its
            // timeline's next messages waited as long); pg-boss's own settle then finds it done.
            if (status === 'completed') await queue.completeWhenReachable(job);
            results.push({ id: job.id, status });
          } catch (error) {
            logger.warn('worker job retried', { job: job.id, session: job.data.sessionId, attempt: job.retryCount + 1, error: errorMessage(error) });
            // Failed because PostgreSQL went away: pg-boss could not record the failure either, and
            // the job would sit active until its heartbeat lapsed, holding back its session's other
            // jobs (singleton). Found by the chaos run; waiting for the server lets the retry come
            // after the usual backoff instead.
            if (serverNotThereYet(error)) await queue.untilReachable();
            throw error;
          }
        }
        queue.boss.notifyWorker(workId);
        return results;
      },
    );
    workIds.push(workId);
  }
  logger.info('worker started', { agents: options.agents.map((agent) => agent.name).join(','), concurrency, queue: WAKE_QUEUE });
  return {
    async stop() {
      for (const stop of unwatch) stop();
      await Promise.all(workIds.map((id) => queue.boss.offWork(WAKE_QUEUE, { id, wait: true })));
      await agents.closeAll();
    },
  };
}

interface Preparation {
  ready: Promise<PreparedWorkerAgent>;
  /** Jobs that took this preparation and have not finished. */
  jobs: number;
  /** Replaced (its files changed): closed once its last job finishes. */
  retired: boolean;
}

/**
 * Each agent prepared once and kept between jobs. A preparation is shared by the jobs that run at
 * once; a failed one is forgotten, so a later job tries again; a retired one (its files changed
 * on disk) serves the jobs that already hold it and is closed after the last, while the next job
 * prepares the agent afresh.
 */
class PreparedAgents {
  readonly #current = new Map<string, Preparation>();
  readonly #closing: Array<Promise<void>> = [];
  readonly #logger: Logger;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** One job's hold on its agent: `agent` prepares it (only once the wake needs it), `done` lets it go. */
  use(agent: WorkerAgent): { agent: () => Promise<HarnessAgent>; done(): void } {
    let held: Preparation | undefined;
    return {
      agent: async () => {
        held ??= this.#take(agent);
        return (await held.ready).agent;
      },
      done: () => {
        if (!held) return;
        held.jobs -= 1;
        if (held.retired && held.jobs === 0) this.#close(held);
      },
    };
  }

  #take(agent: WorkerAgent): Preparation {
    let preparation = this.#current.get(agent.name);
    if (!preparation) {
      const fresh: Preparation = { ready: agent.prepare(), jobs: 0, retired: false };
      fresh.ready.catch(() => {
        if (this.#current.get(agent.name) === fresh) this.#current.delete(agent.name);
      });
      this.#current.set(agent.name, fresh);
      preparation = fresh;
    }
    preparation.jobs += 1;
    return preparation;
  }

  retire(name: string, why: string): void {
    const preparation = this.#current.get(name);
    if (!preparation) return;
    this.#current.delete(name);
    preparation.retired = true;
    this.#logger.info('worker agent changed', { agent: name, reason: why, note: 'the next job prepares it again' });
    if (preparation.jobs === 0) this.#close(preparation);
  }

  #close(preparation: Preparation): void {
    this.#closing.push(preparation.ready.then((ready) => ready.close()).catch(() => {}));
  }

  async closeAll(): Promise<void> {
    for (const preparation of this.#current.values()) this.#close(preparation);
    this.#current.clear();
    await Promise.allSettled(this.#closing);
  }
}
