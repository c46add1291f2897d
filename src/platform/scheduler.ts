import { type Database, transaction } from '../store/database.ts';
import type { Logger } from '../util/logger.ts';
import { dueTasks, nextDueMs, setTaskStatus } from './data/items.ts';
import { findTimeline } from './data/timelines.ts';
import { type OutboxConfig, recordEvent } from './events.ts';

/**
 * Activates tasks when their `activate_at` comes: a pending task becomes `activated` and its
 * `task.activated` event is written to the outbox in the same transaction; on a locked
 * timeline it becomes `blocked_timeline_locked` instead and wakes nobody. Overdue tasks (the
 * server was down at their time) activate at start. One timer, armed for the next due task.
 */
/** How soon activation is tried again after it failed (a full disk). */
const RETRY_MS = 5_000;

export class TaskScheduler {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  private readonly db: Database;
  private readonly outbox: OutboxConfig;
  private readonly onDelivery: () => void;
  private readonly logger: Logger;

  constructor(db: Database, outbox: OutboxConfig, onDelivery: () => void, logger: Logger) {
    this.db = db;
    this.outbox = outbox;
    this.onDelivery = onDelivery;
    this.logger = logger;
  }

  /** Activates what is due and re-arms for the next (after a task was created, or at start). */
  kick(): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    try {
      this.activateDue();
    } catch (error) {
      // Nothing was activated (one transaction); run from a timer, a throw would end the process.
      // Found by the chaos run's full disk: tried again shortly, when there may be room.
      this.logger.error('tasks not activated', { error: (error as Error).message, retry_in_ms: RETRY_MS });
      this.timer = setTimeout(() => this.kick(), RETRY_MS);
      this.timer.unref();
    }
  }

  private activateDue(): void {
    let queued = 0;
    const changed = transaction(this.db, () =>
      dueTasks(this.db, Date.now()).map((task) => {
        const timeline = findTimeline(this.db, task.timeline_uuid)!;
        if (timeline.locked) return setTaskStatus(this.db, task, 'blocked_timeline_locked');
        const activated = setTaskStatus(this.db, task, 'activated');
        queued += recordEvent(this.db, this.outbox, { name: 'task.activated', timeline, actorUuid: null, resource: { type: 'task', uuid: task.uuid } });
        return activated;
      }),
    );
    for (const task of changed) this.logger.info(task.status === 'activated' ? 'task activated' : 'task blocked', { task: task.uuid, timeline: task.timeline_uuid, status: task.status });
    if (queued > 0) this.onDelivery();
    const next = nextDueMs(this.db);
    if (next === undefined) return;
    // Timers are capped (a task days away is re-checked hourly) and never block the process from exiting.
    this.timer = setTimeout(() => this.kick(), Math.min(Math.max(next - Date.now(), 0), 3_600_000));
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }
}
