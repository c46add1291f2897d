import { BaseCradleError } from '../errors.ts';
import { PagedList } from '../pagination.ts';
import type { RequestSpec, Transport } from '../transport.ts';

/** What a create may carry: the caller's Idempotency-Key (a UUID is ideal), so a retry or a re-run after a crash returns the first record. */
export interface CreateOptions {
  idempotencyKey?: string;
  signal?: AbortSignal;
}

export interface CallOptions {
  signal?: AbortSignal;
}

/** An id as one path segment; an empty one would name a different route, so it is refused. */
export function segment(id: string, what: string): string {
  if (typeof id !== 'string' || id.trim() === '') {
    throw new BaseCradleError({ code: 'invalid_argument', message: `A ${what} is required (got ${JSON.stringify(id)}).`, hint: `Pass the ${what} from the record the platform returned.` });
  }
  return encodeURIComponent(id.trim());
}

/** A lazy list of `key` records under `path`, the filters merged into every page's query. */
export function pagedList<T>(transport: Transport, path: string, key: string, filters: Readonly<Record<string, string | undefined>> = {}): PagedList<T> {
  return new PagedList<T>(async (query) => {
    const { body } = await transport.request<Record<string, unknown>>({ method: 'GET', path, query });
    const items = body[key];
    if (!Array.isArray(items)) throw new BaseCradleError({ code: 'invalid_response', message: `BaseCradle answered GET ${path} without a "${key}" list.` });
    const cursor = body.next_cursor;
    return { items: items as T[], nextCursor: typeof cursor === 'string' && cursor !== '' ? cursor : null };
  }, filters);
}

/** The record under `key` of an answer body (`{"message": {...}}`). */
export function member<T>(body: unknown, key: string, request: string): T {
  const value = body && typeof body === 'object' ? (body as Record<string, unknown>)[key] : undefined;
  if (!value || typeof value !== 'object') throw new BaseCradleError({ code: 'invalid_response', message: `BaseCradle answered ${request} without "${key}".` });
  return value as T;
}

/** A group of operations over the client's one transport. */
export abstract class Resource {
  protected readonly transport: Transport;
  constructor(transport: Transport) {
    this.transport = transport;
  }

  /** A request whose answer is one record under `key` (`{"task": {...}}`). */
  protected async record<T>(spec: RequestSpec, key: string): Promise<T> {
    const { body } = await this.transport.request(spec);
    return member<T>(body, key, `${spec.method} ${spec.path}`);
  }
}

/**
 * A kind of timeline item with a cross-timeline list (`GET /messages?timeline=…`, newest first)
 * and a read by uuid (`GET /messages/{id}`): messages, assets, tasks, webhook endpoints and events.
 */
export abstract class ItemResource<T, Filters extends object> extends Resource {
  /** The path segment and list key, e.g. `messages`. */
  protected abstract readonly plural: string;
  /** The record key, e.g. `message`. */
  protected abstract readonly singular: string;

  /** The items of every timeline you can view, or the filtered ones; lazy, newest first. */
  list(filters?: Filters): PagedList<T> {
    return pagedList<T>(this.transport, `/${this.plural}`, this.plural, { ...filters } as Record<string, string | undefined>);
  }

  /**
   * One of the four keyed creates (`POST /timelines/{id}/<plural>`): with an idempotencyKey, a
   * repeat (a retry, a re-run after a crash) returns the first record, even if the body differs.
   */
  protected async createOn(timelineId: string, payload: Pick<RequestSpec, 'json' | 'form'>, options: CreateOptions): Promise<T> {
    return this.record<T>(
      { method: 'POST', path: `/timelines/${segment(timelineId, 'timeline uuid')}/${this.plural}`, ...payload, idempotencyKey: options.idempotencyKey, signal: options.signal },
      this.singular,
    );
  }

  /** One item by its uuid. */
  async get(id: string, options: CallOptions = {}): Promise<T> {
    return this.record<T>({ method: 'GET', path: `/${this.plural}/${segment(id, `${this.singular} uuid`)}`, signal: options.signal }, this.singular);
  }
}
