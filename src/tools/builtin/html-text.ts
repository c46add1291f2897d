import { Worker } from 'node:worker_threads';

/**
 * HTML reduced to readable text by html-to-text, on a worker thread that ends with the caller's
 * signal. Not on the event loop: the parser's work grows with the square of the nesting depth
 * (2 MiB of unclosed tags costs it minutes), and a synchronous call there could be stopped by
 * neither a timeout nor an abort. `maxDepth` keeps the converter's recursive walk from
 * overflowing the stack on such a page; what lies deeper is shown as an ellipsis.
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
import(workerData.module)
  .then(({ convert }) => parentPort.postMessage({ text: convert(workerData.html, workerData.options) }))
  .catch((error) => parentPort.postMessage({ error: String((error && error.message) || error) }));
`;

export class HtmlTextError extends Error {}

/** Rejects with `signal.reason` once the signal aborts, with HtmlTextError when conversion fails. */
export function htmlToText(html: string, signal: AbortSignal): Promise<string> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { module: import.meta.resolve('html-to-text'), html, options: CONVERT_OPTIONS },
    });
    const finish = (settle: () => void) => {
      signal.removeEventListener('abort', onAbort);
      void worker.terminate();
      settle();
    };
    const onAbort = () => finish(() => reject(signal.reason));
    signal.addEventListener('abort', onAbort, { once: true });
    worker.once('message', (message: { text?: string; error?: string }) =>
      finish(() => (message.text !== undefined ? resolve(message.text) : reject(new HtmlTextError(message.error ?? 'no text')))),
    );
    worker.once('error', (error) => finish(() => reject(new HtmlTextError(error.message))));
    worker.once('exit', (code) => finish(() => reject(new HtmlTextError(`the converter exited (code ${code})`))));
  });
}
