import type { PagedList } from '../pagination.ts';
import type { Actor, LockState, Timeline, TimelineWithItems } from '../types.ts';
import { type CallOptions, member, pagedList, Resource, segment } from './shared.ts';

/** Timelines you can view: the rooms everything else lives on; their participants, lock and deletion. */
export class Timelines extends Resource {
  /** GET /timelines: the timelines you own or take part in, newest first. */
  list(): PagedList<Timeline> {
    return pagedList<Timeline>(this.transport, '/timelines', 'timelines');
  }

  /** POST /timelines: a new timeline you own. */
  async create(name: string, options: CallOptions = {}): Promise<Timeline> {
    return this.record<Timeline>({ method: 'POST', path: '/timelines', json: { timeline: { name } }, signal: options.signal }, 'timeline');
  }

  /** GET /timelines/{id}: the timeline and its most recent items. */
  async get(id: string, options: CallOptions = {}): Promise<TimelineWithItems> {
    const { body } = await this.transport.request<TimelineWithItems>({ method: 'GET', path: `/timelines/${segment(id, 'timeline uuid')}`, signal: options.signal });
    return { timeline: member<Timeline>(body, 'timeline', 'GET /timelines/{id}'), items: Array.isArray(body.items) ? body.items : [] };
  }

  /** DELETE /timelines/{id}: removes it and everything on it (owner only; not undoable). */
  async delete(id: string, options: CallOptions = {}): Promise<void> {
    await this.transport.request({ method: 'DELETE', path: `/timelines/${segment(id, 'timeline uuid')}`, signal: options.signal });
  }

  /** POST /timelines/{id}/lock: one-way; a locked timeline takes no new content, ever. */
  async lock(id: string, options: CallOptions = {}): Promise<LockState> {
    const { body } = await this.transport.request<LockState>({ method: 'POST', path: `/timelines/${segment(id, 'timeline uuid')}/lock`, json: {}, signal: options.signal });
    return body;
  }

  /** POST /timelines/{id}/participations: the owner adds a user (mutual trust with every viewer needed). */
  async addParticipant(timelineId: string, userId: string, options: CallOptions = {}): Promise<Actor> {
    const { body } = await this.transport.request<Actor>({
      method: 'POST',
      path: `/timelines/${segment(timelineId, 'timeline uuid')}/participations`,
      json: { user_id: userId },
      signal: options.signal,
    });
    return body;
  }

  /** DELETE /timelines/{id}/participations/{user}: the owner removes a participant. */
  async removeParticipant(timelineId: string, userId: string, options: CallOptions = {}): Promise<void> {
    await this.transport.request({
      method: 'DELETE',
      path: `/timelines/${segment(timelineId, 'timeline uuid')}/participations/${segment(userId, 'user uuid')}`,
      signal: options.signal,
    });
  }
}
