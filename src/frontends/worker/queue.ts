import { type JobAttempt, PgBoss, type Queue } from 'pg-boss';
import type { WakeEvent } from '../../store/wake-store.ts';
import { AcxError, errorMessage } from '../../core/errors.ts';
import { redactUrl } from '../../store/store-url.ts';
import { serverNotThereYet, waitForPostgres, type WaitForPostgresOptions, whileServerAway } from '../../store/postgres-wait.ts';
import { createLogThrottle } from '../../util/log-throttle.ts';
import type { Logger } from '../../util/logger.ts';

/**
 * The work queue between `acx router` (or any producer) and `acx worker`: one pg-boss queue on the
 * store's PostgreSQL database, one job per event, the session in the job. What each setting buys:
 *
 * - `singleton` policy with the session as `singletonKey`: pg-boss hands out at most one active job
 *   per session across every worker, so a session's events are answered one turn at a time without
 *   workers spinning on each other's wake leases (the wake-store lease still guards the session).
 * - `heartbeatSeconds`: a worker touches its active jobs while their turns run; a SIGKILLed worker
 *   stops, and its job is failed into a retry by the next supervise pass of any pg-boss instance,
 *   then taken by another worker, which finishes the turn from the journal.
 * - `retryLimit` with backoff, then the dead-letter queue: a job that keeps failing (an agent that
 *   cannot start, a session busy for maxDeferrals tries in a row) is set aside for an operator, never dropped.
 */
export const WAKE_QUEUE = 'acx-wakes';
export const WAKE_DEAD_LETTER_QUEUE = 'acx-wakes-dead';

/** What every job carries besides its event. */
interface WakeJobBase {
  /**
   * How many times a worker has put this event off (its session busy, or declined by the breaker)
   * by sending it again for later: not failures, so never counted against `retryLimit`.
   */
  deferrals?: number | undefined;
}

/** An event for a session of one of the worker's agents, answered as `acx wake --session` would. */
export interface SessionWakeJob extends WakeJobBase {
  kind: 'session';
  /** The agent's name in the worker's --agents. */
  agent: string;
  sessionId: string;
  event: WakeEvent;
  /** The producer's correlation id (a router's delivery); rides the wake's bookend log lines. */
  deliveryId?: string | undefined;
}

/**
 * A platform delivery (`acx router --queue`): answered as `acx wake --timeline` would. The agent's
 * platform token never travels in the job; the worker has it (BASECRADLE_TOKEN_<HANDLE>).
 */
export interface TimelineWakeJob extends WakeJobBase {
  kind: 'timeline';
  agent: string;
  /** `timeline:<uuid>`, the session a timeline wake runs its turns in. */
  sessionId: string;
  timeline: string;
  /** What the delivery is about, as `acx wake --timeline` takes it. */
  message?: string | undefined;
  asset?: string | undefined;
  event?: string | undefined;
  deliveryId: string;
  /** The platform the router received the delivery from (a worker's own --platform wins). */
  platformUrl: string;
}

export type WakeJob = SessionWakeJob | TimelineWakeJob;

/** Whom pg-boss serializes on: one active job per agent session. */
export const sessionKey = (job: Pick<WakeJob, 'agent' | 'sessionId'>): string => `${job.agent}\n${job.sessionId}`;

export interface WakeQueueSettings {
  /** Retries a job gets after its first attempt before it is dead-lettered (default 10: a kill costs one). */
  retryLimit: number;
  /** First wait before a retry, seconds; doubled each retry (with jitter) up to `retryDelayMax`. */
  retryDelay: number;
  retryDelayMax: number;
  /** A worker that has not touched its job for this long is taken for dead (pg-boss's minimum is 10). */
  heartbeatSeconds: number;
  /** How often this instance's supervisor looks for dead workers' jobs (pg-boss default 60 s). */
  superviseSeconds: number;
  /** How long opening waits for a server that is down or restarting (store/postgres-wait.ts; default 5 minutes). */
  startupWait?: WaitForPostgresOptions;
}

export const DEFAULT_QUEUE_SETTINGS: WakeQueueSettings = { retryLimit: 10, retryDelay: 1, retryDelayMax: 30, heartbeatSeconds: 10, superviseSeconds: 5 };

export interface WakeQueue {
  readonly boss: PgBoss;
  /** Enqueues one event, to be taken no sooner than `startAfterSeconds` from now if given; resolves to the job id. */
  send(job: WakeJob, options?: { startAfterSeconds?: number }): Promise<string>;
  /** Resolves once the queue's server accepts connections again (or after `maxWaitMs`, default 5 minutes). */
  untilReachable(maxWaitMs?: number): Promise<void>;
  /**
   * `send`, tried again while it fails because the server is away (waiting for it each time, up
   * to SEND_ATTEMPTS tries); `onRetry` hears of each failure that is tried again.
   */
  sendWhenReachable(job: WakeJob, onRetry: (error: unknown, attempt: number) => void): Promise<string>;
  /**
   * Records a job answered, tried again while the server is away (up to one heartbeat): whether
   * it was. pg-boss settles a handler's jobs itself, once, and a job it could not settle (the
   * server restarting just then) stays active until its heartbeat lapses, holding back its
   * session's next jobs (one active per session). Fenced to this attempt of the job.
   */
  completeWhenReachable(job: JobAttempt): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Starts pg-boss on the store's database (its own `pgboss` schema, created and migrated on first
 * use) and makes sure the queue and its dead-letter queue exist (creating them is idempotent, so
 * routers and workers may start in any order; the first to create a queue fixes its settings).
 */
export async function openWakeQueue(url: string, logger: Logger, settings: Partial<WakeQueueSettings> = {}): Promise<WakeQueue> {
  const tuned = { ...DEFAULT_QUEUE_SETTINGS, ...settings };
  const boss = new PgBoss({
    connectionString: url,
    application_name: 'acx',
    superviseIntervalSeconds: tuned.superviseSeconds,
    monitorIntervalSeconds: tuned.superviseSeconds,
    // New jobs wake idle workers at once instead of at their next poll.
    useListenNotify: true,
  });
  // pg-boss reports background faults (a dropped connection, a failed supervise pass) as events:
  // while PostgreSQL is down, one per poll and pass, so a few are written and the rest counted.
  const throttled = createLogThrottle(logger);
  boss.on('error', (error) => throttled.log('warn', 'queue error', { error: errorMessage(error) }));
  try {
    // Started while PostgreSQL is down or restarting: wait for it rather than exit.
    await waitForPostgres(url, logger, settings.startupWait ?? {});
    await boss.start();
  } catch (error) {
    // Found by the chaos run: a router restarted while PostgreSQL was down said only "unexpected error".
    throw new AcxError('store-open', `Cannot open the wake queue in the PostgreSQL database at ${redactUrl(url)}: ${errorMessage(error)}`, {
      hint: 'Check that the server is up and the URL (host, port, database, user) is right; under a supervisor (systemd Restart=) the process is started again and retries.',
      cause: error,
    });
  }
  const options: Omit<Queue, 'name'> = {
    retryLimit: tuned.retryLimit,
    retryDelay: tuned.retryDelay,
    retryBackoff: true,
    retryDelayMax: tuned.retryDelayMax,
    heartbeatSeconds: tuned.heartbeatSeconds,
    notify: true,
  };
  await boss.createQueue(WAKE_DEAD_LETTER_QUEUE, options);
  await boss.createQueue(WAKE_QUEUE, { ...options, policy: 'singleton', deadLetter: WAKE_DEAD_LETTER_QUEUE });
  const queue: WakeQueue = {
    boss,
    async send(job, sendOptions = {}) {
      const later = sendOptions.startAfterSeconds !== undefined ? { startAfter: sendOptions.startAfterSeconds } : {};
      const id = await boss.send(WAKE_QUEUE, job, { singletonKey: sessionKey(job), ...later });
      if (!id) throw new Error(`the queue refused the job for session ${job.sessionId}`);
      return id;
    },
    // Work is waiting on the server: look for it every second (waitForPostgres's cap; found by the
    // chaos run when the cap was 5 s: each stage of the recovery after an outage came up to 5 s
    // late, the router's enqueue and the worker's fail).
    untilReachable: (maxWaitMs) => waitForPostgres(url, logger, maxWaitMs !== undefined ? { maxWaitMs } : {}),
    async sendWhenReachable(job, onRetry) {
      for (let attempt = 1; ; attempt++) {
        try {
          return await queue.send(job);
        } catch (error) {
          if (!serverNotThereYet(error) || attempt >= SEND_ATTEMPTS) throw error;
          onRetry(error, attempt);
          await queue.untilReachable();
        }
      }
    },
    async completeWhenReachable(job) {
      try {
        await whileServerAway(() => boss.complete(WAKE_QUEUE, job), tuned.heartbeatSeconds * 1000);
        return true;
      } catch {
        return false;
      }
    },
    close: async () => {
      await boss.stop({ graceful: true, timeout: 10_000 });
      throttled.flush();
    },
  };
  return queue;
}

/** Tries of `sendWhenReachable`, each after waiting (up to 5 minutes) for the server. */
const SEND_ATTEMPTS = 10;
