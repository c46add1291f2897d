import type http from 'node:http';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Logger } from '../util/logger.ts';

/**
 * The live MCP sessions of one Streamable HTTP server, so no client can make it hold state
 * forever: at most `maxSessions` at once, and each closed once it has been idle — no request of
 * it open, a held-open stream included — for `idleMs`. A client whose session was closed gets
 * 404 on its next request and, as the MCP spec has it, initializes a new one.
 */
export interface SessionLimits {
  /** The most sessions held at once (at least 1). */
  maxSessions: number;
  /** How long a session may sit idle before it is closed, in ms; 0 never closes one for it. */
  idleMs: number;
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = { maxSessions: 32, idleMs: 60 * 60_000 };

interface Session {
  transport: StreamableHTTPServerTransport;
  /** Requests of the session still open (an SSE stream stays open until the client lets go). */
  open: number;
  lastUsed: number;
  idleTimer?: NodeJS.Timeout | undefined;
}

export class HttpSessions {
  private readonly sessions = new Map<string, Session>();
  private readonly limits: SessionLimits;
  private readonly logger: Logger;

  constructor(limits: SessionLimits, logger: Logger) {
    this.limits = limits;
    this.logger = logger;
  }

  get size(): number {
    return this.sessions.size;
  }

  transport(id: string): StreamableHTTPServerTransport | undefined {
    return this.sessions.get(id)?.transport;
  }

  /**
   * Whether a new session may start: below the cap, or at it with an idle session that `add`
   * will close to make room. False when every session has a request open: the caller refuses.
   */
  hasRoom(): boolean {
    return this.sessions.size < this.limits.maxSessions || this.longestIdle() !== undefined;
  }

  /** A session that has just initialized, its first request (`res`) still open. At the cap, the longest idle one is closed first. */
  add(id: string, transport: StreamableHTTPServerTransport, res: http.ServerResponse): void {
    if (this.sessions.size >= this.limits.maxSessions) {
      const idle = this.longestIdle();
      if (idle) this.close(idle, `the session cap (${this.limits.maxSessions}) was reached and it was idle the longest`);
    }
    this.sessions.set(id, { transport, open: 0, lastUsed: Date.now() });
    this.track(id, res);
  }

  /** The session's transport closed (a DELETE from the client, expiry, shutdown): forget it. */
  remove(id: string): void {
    const session = this.sessions.get(id);
    if (session) clearTimeout(session.idleTimer);
    this.sessions.delete(id);
  }

  /** Counts `res` as open on the session until it closes; the idle clock runs only while none is open. */
  track(id: string, res: http.ServerResponse): void {
    const session = this.sessions.get(id);
    if (!session) return;
    session.open += 1;
    clearTimeout(session.idleTimer);
    session.idleTimer = undefined;
    res.once('close', () => {
      session.open -= 1;
      session.lastUsed = Date.now();
      if (session.open > 0 || this.limits.idleMs <= 0 || this.sessions.get(id) !== session) return;
      session.idleTimer = setTimeout(() => this.close(id, `idle for ${this.limits.idleMs / 1000} s`), this.limits.idleMs);
      session.idleTimer.unref();
    });
  }

  async closeAll(): Promise<void> {
    const all = [...this.sessions.values()];
    for (const session of all) clearTimeout(session.idleTimer);
    this.sessions.clear();
    await Promise.allSettled(all.map((session) => session.transport.close()));
  }

  private longestIdle(): string | undefined {
    let oldest: [string, Session] | undefined;
    for (const entry of this.sessions) {
      if (entry[1].open === 0 && (!oldest || entry[1].lastUsed < oldest[1].lastUsed)) oldest = entry;
    }
    return oldest?.[0];
  }

  private close(id: string, reason: string): void {
    const session = this.sessions.get(id);
    if (!session) return;
    this.remove(id);
    this.logger.info('mcp http session closed', { session: id, reason });
    void session.transport.close().catch(() => {});
  }
}
