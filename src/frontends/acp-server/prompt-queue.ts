/**
 * A session's prompts (turns and slash commands), one at a time in the order they arrived. A
 * prompt sent while another runs waits for it instead of being refused: editors send the next
 * prompt as soon as the user does (Zed sends one right after a cancel, before the cancelled turn
 * has answered). A cancel answers every prompt waiting at that moment at once, without running
 * it; stopping the running one is the session's part. Prompts sent after the cancel run.
 */
export type Queued<T> = { ran: true; value: T } | { ran: false };

interface Waiter {
  cancelled: boolean;
  cancel(): void;
  /** Settles when the waiter is cancelled. */
  readonly cancellation: Promise<void>;
}

export class PromptQueue {
  /** Settles once every prompt taken so far has settled. */
  private tail: Promise<void> = Promise.resolve();
  private readonly waiting = new Set<Waiter>();
  private taken = 0;

  /** Whether a prompt is running or waiting. */
  get busy(): boolean {
    return this.taken > 0;
  }

  /** How many prompts are running or waiting (before this one is taken). */
  get ahead(): number {
    return this.taken;
  }

  /** Runs `work` once every prompt taken before it has settled; `{ ran: false }` when a cancel came first. */
  async run<T>(work: () => Promise<T>): Promise<Queued<T>> {
    const previous = this.tail;
    let settle!: () => void;
    this.tail = new Promise<void>((resolve) => (settle = resolve));
    const waiter = createWaiter();
    this.waiting.add(waiter);
    this.taken++;
    try {
      await Promise.race([previous, waiter.cancellation]);
      this.waiting.delete(waiter);
      if (waiter.cancelled) return { ran: false };
      return { ran: true, value: await work() };
    } finally {
      this.waiting.delete(waiter);
      this.taken--;
      // A prompt cancelled while it waited answers at once, but the next one still starts only
      // after the one running before it has settled.
      void previous.then(settle);
    }
  }

  /** Cancels every prompt waiting now; how many there were. */
  cancelWaiting(): number {
    const cancelled = this.waiting.size;
    for (const waiter of this.waiting) waiter.cancel();
    this.waiting.clear();
    return cancelled;
  }
}

function createWaiter(): Waiter {
  let cancel!: () => void;
  const cancellation = new Promise<void>((resolve) => (cancel = resolve));
  const waiter: Waiter = {
    cancelled: false,
    cancellation,
    cancel() {
      waiter.cancelled = true;
      cancel();
    },
  };
  return waiter;
}
