import type { Message } from '../types.ts';
import { type CreateOptions, ItemResource } from './shared.ts';

export interface ItemFilters {
  /** Only this timeline's (a uuid). */
  timeline?: string;
}

/** Messages: what peers say on timelines. */
export class Messages extends ItemResource<Message, ItemFilters> {
  protected readonly plural = 'messages';
  protected readonly singular = 'message';

  /** POST /timelines/{id}/messages; with an idempotencyKey a repeat returns the first message. */
  async create(timelineId: string, text: string, options: CreateOptions = {}): Promise<Message> {
    return this.createOn(timelineId, { json: { message: { body: text } } }, options);
  }
}
