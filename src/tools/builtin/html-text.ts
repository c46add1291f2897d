import type { Worker } from 'node:worker_threads';

/**
 * HTML reduced to readable text by html-to-text, on a worker thread that a caller's signal can
 * stop. Not on the event loop: the parser's work grows with the square of the nesting depth
 * (2 MiB of unclosed tags costs it minutes), and a synchronous call there could be stopped by
 * neither a timeout nor an abort. `maxDepth` keeps the converter's recursive walk from
 * overflowing the stack on such a page; what lies deeper is shown as an ellipsis.
 *
 * One thread is kept and reused, one page at a time (starting a thread and loading the converter
 * costs several times a typical page's conversion). A signal that aborts while its page is
 * converting terminates the thread; the next page gets a new one. The thread never keeps the
 * process alive while it is idle.
 */
const CONVERT_OPTIONS = {
  wordwrap: false,
  selectors: [{ selector: 'img', format: 'skip' }],
  limits: { maxDepth: 256 },
};

// A CommonJS eval worker: it imports the converter by the URL the parent resolved, so it finds the
// same copy whether acx runs from its sources or from an installed package.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const converter = import(workerData.module);
parentPort.on('message', async (html) => {
  try {
    const { convert } = await converter;
    parentPort.postMessage({ text: convert(html, workerData.options) });
  } catch (error) {
    parentPort.postMessage({ error: String((error && error.message) || error) });
  }
});
`;

export class HtmlTextError extends Error {}

interface Job {
  html: string;
  signal: AbortSignal;
  resolve: (text: string) => void;
  reject: (error: unknown) => void;
}

/** The thread and the page it is converting; replaced whole when a conversion is stopped. */
class ConverterThread {
  private readonly worker: Worker;
  private job: Job | undefined;
  /** The thread failed or exited: it takes no more pages. */
  dead = false;

  private readonly onIdle: () => void;

  constructor(onIdle: () => void) {
    this.onIdle = onIdle;
    // node:worker_threads loads with the first page to convert, not with web_fetch.
    const { Worker } = process.getBuiltinModule('node:worker_threads');
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { module: import.meta.resolve('html-to-text'), options: CONVERT_OPTIONS },
    });
    this.worker.unref();
    this.worker.on('message', (message: { text?: string; error?: string }) =>
      this.finish((job) => (message.text !== undefined ? job.resolve(message.text) : job.reject(new HtmlTextError(message.error ?? 'no text')))),
    );
    this.worker.on('error', (error) => {
      this.dead = true;
      this.finish((job) => job.reject(new HtmlTextError(error.message)));
    });
    this.worker.on('exit', (code) => {
      this.dead = true;
      this.finish((job) => job.reject(new HtmlTextError(`the converter exited (code ${code})`)));
    });
  }

  get busy(): boolean {
    return this.job !== undefined;
  }

  start(job: Job): void {
    this.job = job;
    this.worker.ref();
    this.worker.postMessage(job.html);
  }

  /** Ends the current job (its signal aborted) with the thread. */
  stop(): void {
    const job = this.job;
    this.job = undefined;
    this.dead = true;
    void this.worker.terminate();
    job?.reject(job.signal.reason);
  }

  private finish(settle: (job: Job) => void): void {
    const job = this.job;
    if (!job) return;
    this.job = undefined;
    this.worker.unref();
    settle(job);
    this.onIdle();
  }
}

let thread: ConverterThread | undefined;
const waiting: Job[] = [];

function startNext(): void {
  if (thread?.dead) thread = undefined;
  if (thread?.busy || waiting.length === 0) return;
  thread ??= new ConverterThread(() => startNext());
  thread.start(waiting.shift()!);
}

/** Rejects with `signal.reason` once the signal aborts, with HtmlTextError when conversion fails. */
export function htmlToText(html: string, signal: AbortSignal): Promise<string> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<string>((resolve, reject) => {
    const onAbort = () => {
      const queued = waiting.indexOf(job);
      if (queued >= 0) {
        waiting.splice(queued, 1);
        reject(signal.reason);
        return;
      }
      // Converting now: only ending the thread stops it.
      thread?.stop();
      startNext();
    };
    const job: Job = {
      html,
      signal,
      resolve: (text) => {
        signal.removeEventListener('abort', onAbort);
        resolve(text);
      },
      reject: (error) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    };
    signal.addEventListener('abort', onAbort, { once: true });
    waiting.push(job);
    startNext();
  });
}
