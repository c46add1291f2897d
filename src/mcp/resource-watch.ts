import { createHash } from 'node:crypto';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { McpError, SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { errorMessage } from '../core/errors.ts';
import { silentLogger, type Logger } from '../util/logger.ts';
import { RESOURCE_NOT_FOUND, readServedResource, servedResourceOf, servedTemplates, type ServedResources } from './resources.ts';

/**
 * resources/subscribe for the served resources: a client subscribed to a URI gets
 * `notifications/resources/updated` when what that URI reads changes. The watch knows a change
 * by reading each subscribed URI again and comparing a digest of what it reads, so it is exact
 * (no notice for a memory that did not change) and holds for any memory store: after every
 * call of a tool that may write (`check`), and every `pollMs` while anyone is subscribed, for
 * changes made elsewhere (another acx process on the same memory).
 */
export interface ResourceWatchOptions {
  /** How often subscribed URIs are read again for changes made outside this server, ms (default 2000); 0: only after tool calls. */
  pollMs?: number;
  logger?: Logger;
}

export const DEFAULT_RESOURCE_POLL_MS = 2000;
/** A memory that does not exist (yet): its digest, so its creation is a change. */
const ABSENT = 'absent';

export class ResourceWatch {
  private readonly resources: ServedResources;
  private readonly pollMs: number;
  private readonly logger: Logger;
  /** Per session: each subscribed URI and the digest of what it read last. */
  private readonly subscriptions = new Map<Server, Map<string, string>>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private causes: Array<{ server: Server; requestId: string | number }> = [];

  constructor(resources: ServedResources, options: ResourceWatchOptions = {}) {
    this.resources = resources;
    this.pollMs = options.pollMs ?? DEFAULT_RESOURCE_POLL_MS;
    this.logger = options.logger ?? silentLogger;
  }

  /** Declares `subscribe` and answers resources/subscribe and /unsubscribe on one session (before it connects). */
  attach(server: Server): void {
    server.registerCapabilities({ resources: { subscribe: true } });
    server.setRequestHandler(SubscribeRequestSchema, async (request) => {
      const { uri } = request.params;
      if (!servedResourceOf(this.resources, uri)) {
        throw new McpError(RESOURCE_NOT_FOUND, `acx mcp serves no resource ${uri} to subscribe to. Its resources: ${servedTemplates(this.resources).join(', ')}.`);
      }
      const digest = await this.digest(uri);
      const subscribed = this.subscriptions.get(server) ?? new Map<string, string>();
      subscribed.set(uri, digest);
      this.subscriptions.set(server, subscribed);
      this.startPolling();
      return {};
    });
    server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
      this.subscriptions.get(server)?.delete(request.params.uri);
      this.dropIfEmpty(server);
      return {};
    });
  }

  /** The session ended: its subscriptions go with it. */
  detach(server: Server): void {
    this.subscriptions.delete(server);
    this.dropIfEmpty(server);
  }

  /**
   * Reads every subscribed URI again and notifies those whose contents changed. `cause`, the
   * session's request that may have changed them (a tool call), gets its own session's notices
   * as part of it (over HTTP, on its stream, ahead of its result). Calls while one runs make one
   * more run after it.
   */
  check(cause?: { server: Server; requestId: string | number }): Promise<void> {
    if (this.running) {
      this.again = true;
      if (cause) this.causes.push(cause);
      return this.running;
    }
    if (cause) this.causes.push(cause);
    this.running = (async () => {
      do {
        this.again = false;
        const causes = this.causes.splice(0);
        await this.checkOnce(causes);
      } while (this.again);
    })().finally(() => (this.running = undefined));
    return this.running;
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.subscriptions.clear();
  }

  private async checkOnce(causes: ReadonlyArray<{ server: Server; requestId: string | number }>): Promise<void> {
    for (const [server, subscribed] of [...this.subscriptions]) {
      const cause = causes.find((c) => c.server === server);
      for (const [uri, before] of [...subscribed]) {
        let now: string;
        try {
          now = await this.digest(uri);
        } catch (error) {
          this.logger.debug('mcp resource not read for its subscribers', { uri, reason: errorMessage(error) });
          continue;
        }
        if (now === before || this.subscriptions.get(server)?.get(uri) !== before) continue;
        subscribed.set(uri, now);
        const related = cause ? { relatedRequestId: cause.requestId } : undefined;
        server.notification({ method: 'notifications/resources/updated', params: { uri } }, related).catch((error: unknown) => this.logger.debug('mcp resource update not delivered', { uri, reason: errorMessage(error) }));
      }
    }
  }

  private async digest(uri: string): Promise<string> {
    try {
      return createHash('sha256').update(JSON.stringify((await readServedResource(this.resources, uri)).contents)).digest('base64url');
    } catch (error) {
      if (error instanceof McpError && error.code === RESOURCE_NOT_FOUND) return ABSENT;
      throw error;
    }
  }

  private startPolling(): void {
    if (this.timer || this.pollMs <= 0) return;
    this.timer = setInterval(() => void this.check(), this.pollMs);
    this.timer.unref();
  }

  private dropIfEmpty(server: Server): void {
    if (this.subscriptions.get(server)?.size === 0) this.subscriptions.delete(server);
    if (this.subscriptions.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}
