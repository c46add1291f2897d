/** A push-to-pull bridge: producers `push`, one consumer iterates; `end`/`fail` close it. */
export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private waiters: Array<(result: IteratorResult<T>) => void> = [];
  private failure: { error: unknown } | undefined;
  private closed = false;
  private rejecters: Array<(error: unknown) => void> = [];

  push(item: T): void {
    if (this.closed) return;
    const waiter = this.waiters.shift();
    this.rejecters.shift();
    if (waiter) waiter({ value: item, done: false });
    else this.items.push(item);
  }

  end(): void {
    this.closed = true;
    for (const waiter of this.waiters) waiter({ value: undefined as never, done: true });
    this.waiters = [];
    this.rejecters = [];
  }

  fail(error: unknown): void {
    this.failure = { error };
    this.closed = true;
    for (const reject of this.rejecters) reject(error);
    this.waiters = [];
    this.rejecters = [];
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        if (this.items.length > 0) return Promise.resolve({ value: this.items.shift()!, done: false });
        if (this.failure) return Promise.reject(this.failure.error);
        if (this.closed) return Promise.resolve({ value: undefined as never, done: true });
        return new Promise((resolve, reject) => {
          this.waiters.push(resolve);
          this.rejecters.push(reject);
        });
      },
    };
  }
}
