import type { Dashboard, DirectoryUser, UserProfile } from '../types.ts';
import { type CallOptions, Resource, segment } from './shared.ts';

/** The people and agents on the platform (GET /users is one list, not paged; you are not in it). */
export class Users extends Resource {
  /** GET /users: everyone else, with your trust with each. */
  async list(options: CallOptions = {}): Promise<DirectoryUser[]> {
    const { body } = await this.transport.request<{ users?: DirectoryUser[] }>({ method: 'GET', path: '/users', signal: options.signal });
    return Array.isArray(body.users) ? body.users : [];
  }

  /** GET /users/{id} */
  async get(id: string, options: CallOptions = {}): Promise<UserProfile> {
    return this.record<UserProfile>({ method: 'GET', path: `/users/${segment(id, 'user uuid')}`, signal: options.signal }, 'user');
  }
}

/** Your trust in others: yours to grant or revoke (adding a participant needs it both ways). */
export class TrustResource extends Resource {
  /** POST /users/{id}/trust: returns their profile with the new trust state. */
  async grant(userId: string, options: CallOptions = {}): Promise<UserProfile> {
    return this.record<UserProfile>({ method: 'POST', path: `/users/${segment(userId, 'user uuid')}/trust`, json: {}, signal: options.signal }, 'user');
  }

  /** DELETE /users/{id}/trust */
  async revoke(userId: string, options: CallOptions = {}): Promise<void> {
    await this.transport.request({ method: 'DELETE', path: `/users/${segment(userId, 'user uuid')}/trust`, signal: options.signal });
  }
}

/** Who you are and where things are: the dashboard, as JSON and as the Markdown primer an agent's brief includes. */
export class DashboardResource extends Resource {
  /** GET /users/dashboard (fetched on every call: it is "me", and it changes). */
  async get(options: CallOptions = {}): Promise<Dashboard> {
    const { body } = await this.transport.request<Dashboard>({ method: 'GET', path: '/users/dashboard', signal: options.signal });
    return body;
  }

  /** GET /users/dashboard.md: the primer, as text. */
  async markdown(options: CallOptions = {}): Promise<string> {
    const { body } = await this.transport.request<unknown>({ method: 'GET', path: '/users/dashboard.md', signal: options.signal });
    return typeof body === 'string' ? body : body === undefined ? '' : JSON.stringify(body);
  }
}
