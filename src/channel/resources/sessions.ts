import type { PagedList } from '../pagination.ts';
import type { MintedToken, Session } from '../types.ts';
import { type CallOptions, pagedList, Resource, segment } from './shared.ts';

export interface LoginInput {
  email: string;
  password: string;
  /** Names the session in the account's list. */
  name: string;
}

/** Credentials: minting a token, signing out, and your sessions (strictly your own). */
export class Sessions extends Resource {
  /**
   * POST /session: a new token from email + password (never re-sent: each run would mint
   * another). The client itself mints its own from BASECRADLE_EMAIL/PASSWORD; this is for a
   * caller that wants a token to hand elsewhere.
   */
  async mint(input: LoginInput, options: CallOptions = {}): Promise<MintedToken> {
    const { body } = await this.transport.request<MintedToken>({
      method: 'POST',
      path: '/session',
      json: { email_address: input.email, password: input.password, name: input.name },
      authenticated: false,
      signal: options.signal,
    });
    return body;
  }

  /** DELETE /session: revokes this client's own token. */
  async signOut(options: CallOptions = {}): Promise<void> {
    await this.transport.request({ method: 'DELETE', path: '/session', signal: options.signal });
  }

  /** GET /users/sessions: your sessions, newest first; `current` marks this client's. */
  list(): PagedList<Session> {
    return pagedList<Session>(this.transport, '/users/sessions', 'sessions');
  }

  /** DELETE /users/sessions/{id}: revokes one of your sessions. */
  async revoke(id: string, options: CallOptions = {}): Promise<void> {
    await this.transport.request({ method: 'DELETE', path: `/users/sessions/${segment(id, 'session uuid')}`, signal: options.signal });
  }

  /** DELETE /users/sessions: revokes every session of yours, this client's token too. */
  async revokeAll(options: CallOptions = {}): Promise<void> {
    await this.transport.request({ method: 'DELETE', path: '/users/sessions', signal: options.signal });
  }
}
