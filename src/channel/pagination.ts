/**
 * A cursor-paged list, read lazily: nothing is fetched until it is iterated, and each next
 * page only when the previous one is used up. Lists are newest first; a page's `next_cursor`
 * goes back as `?before=` and null ends the list. Filters are merged into every page's query.
 */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export type FetchPage<T> = (query: Record<string, string | undefined>) => Promise<Page<T>>;

export class PagedList<T> implements AsyncIterable<T> {
  private readonly fetchPage: FetchPage<T>;
  private readonly filters: Readonly<Record<string, string | undefined>>;

  constructor(fetchPage: FetchPage<T>, filters: Readonly<Record<string, string | undefined>> = {}) {
    this.fetchPage = fetchPage;
    this.filters = filters;
  }

  /** One page: the newest, or the one older than `before` (a next_cursor this list gave out). */
  page(before?: string): Promise<Page<T>> {
    return this.fetchPage({ ...this.filters, before });
  }

  /** The pages in order, each fetched when the loop asks for it. */
  async *pages(): AsyncGenerator<Page<T>, void, undefined> {
    let before: string | undefined;
    for (;;) {
      const page = await this.page(before);
      yield page;
      if (page.nextCursor === null || page.items.length === 0) return;
      before = page.nextCursor;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.items;
  }

  /** Every item (or the first `limit`), fetching no page beyond what that needs. */
  async toArray(limit = Number.POSITIVE_INFINITY): Promise<T[]> {
    const out: T[] = [];
    if (limit <= 0) return out;
    for await (const item of this) {
      out.push(item);
      if (out.length >= limit) break;
    }
    return out;
  }
}
