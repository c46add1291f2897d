/**
 * A time limit that can stand still: while paused (a tool call waits on its user, who is
 * answering a question), the time spent does not count. `signal` aborts when the limit is
 * reached; `clear()` disarms it for good.
 */
export class PausableDeadline {
  readonly #controller = new AbortController();
  #remainingMs: number;
  #startedAt = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #pauses = 0;
  #expired = false;

  constructor(limitMs: number) {
    this.#remainingMs = limitMs;
    this.#arm();
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get expired(): boolean {
    return this.#expired;
  }

  /** Stops the clock; pauses nest (the clock runs again when each has resumed). */
  pause(): void {
    if (this.#pauses++ > 0 || this.#timer === undefined) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#remainingMs -= performance.now() - this.#startedAt;
  }

  resume(): void {
    if (this.#pauses === 0 || --this.#pauses > 0 || this.#expired || this.#controller.signal.aborted) return;
    this.#arm();
  }

  clear(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#pauses = Number.POSITIVE_INFINITY;
  }

  #arm(): void {
    this.#startedAt = performance.now();
    this.#timer = setTimeout(
      () => {
        this.#expired = true;
        this.#controller.abort(new Error('deadline reached'));
      },
      Math.max(0, this.#remainingMs),
    );
  }
}
