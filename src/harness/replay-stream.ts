import type { AsyncIterableStream } from 'ai';

/**
 * One producer, any number of readers: every `readable()` is a fresh web ReadableStream (async
 * iterable too, as the AI SDK's streams are) that replays what was pushed so far and then
 * follows. A turn's result offers several streams over the same parts (harness parts, AI SDK
 * parts, text); each can be read, in any order, without one starving another.
 */
export class ReplayStream<T> {
  private readonly items: T[] = [];
  private readonly readers = new Set<ReadableStreamDefaultController<T>>();
  private outcome: { error?: unknown; failed: boolean } | undefined;

  push(item: T): void {
    if (this.outcome) return;
    this.items.push(item);
    for (const reader of this.readers) reader.enqueue(item);
  }

  end(): void {
    this.settle({ failed: false });
  }

  fail(error: unknown): void {
    this.settle({ failed: true, error });
  }

  readable(): AsyncIterableStream<T> {
    let self: ReadableStreamDefaultController<T> | undefined;
    const stream = new ReadableStream<T>({
      start: (controller) => {
        for (const item of this.items) controller.enqueue(item);
        if (this.outcome) return this.close(controller, this.outcome);
        self = controller;
        this.readers.add(controller);
      },
      cancel: () => {
        if (self) this.readers.delete(self);
      },
    });
    return stream as AsyncIterableStream<T>;
  }

  private settle(outcome: { error?: unknown; failed: boolean }): void {
    if (this.outcome) return;
    this.outcome = outcome;
    for (const reader of this.readers) this.close(reader, outcome);
    this.readers.clear();
  }

  private close(controller: ReadableStreamDefaultController<T>, outcome: { error?: unknown; failed: boolean }): void {
    if (outcome.failed) controller.error(outcome.error);
    else controller.close();
  }
}
