import type { Task, TaskStatus } from '../types.ts';
import type { ItemFilters } from './messages.ts';
import { type CallOptions, type CreateOptions, ItemResource, segment } from './shared.ts';

export interface TaskFilters extends ItemFilters {
  status?: TaskStatus;
}

export interface NewTask {
  instructions: string;
  /** When it activates: a Date, or an ISO 8601 time (one with no zone is read in the account's zone). */
  activateAt: Date | string;
}

/** Tasks: instructions that activate on a timeline at a chosen time. */
export class Tasks extends ItemResource<Task, TaskFilters> {
  protected readonly plural = 'tasks';
  protected readonly singular = 'task';

  /** POST /timelines/{id}/tasks; with an idempotencyKey a repeat returns the first task. */
  async create(timelineId: string, task: NewTask, options: CreateOptions = {}): Promise<Task> {
    const activateAt = task.activateAt instanceof Date ? task.activateAt.toISOString() : task.activateAt;
    return this.createOn(timelineId, { json: { task: { instructions: task.instructions, activate_at: activateAt } } }, options);
  }

  /** POST /tasks/{id}/cancellation: the author (or an admin) withdraws a pending task. */
  async cancel(id: string, options: CallOptions = {}): Promise<Task> {
    return this.record<Task>({ method: 'POST', path: `/tasks/${segment(id, 'task uuid')}/cancellation`, signal: options.signal }, 'task');
  }
}
