/**
 * What web_fetch pays for reducing HTML to text off the event loop (src/tools/builtin/html-text.ts,
 * a reused worker thread) against html-to-text's `convert` called on the main thread, the same
 * page and options, in the same run. Prints the median ms of each, their ratio, and the first
 * conversion (which starts the thread and loads the converter into it). No thresholds.
 * Run: `npx node bench/html-text.ts [rows=600] [rounds=30]`.
 */
import { performance } from 'node:perf_hooks';
import { convert } from 'html-to-text';
import { htmlToText } from '../src/tools/builtin/html-text.ts';

const ROWS = Number(process.argv[2] ?? 600);
const ROUNDS = Number(process.argv[3] ?? 30);
// The options html-text.ts passes, so both sides do the same work.
const OPTIONS = { wordwrap: false as const, selectors: [{ selector: 'img', format: 'skip' }], limits: { maxDepth: 256 } };

const row = '<tr><td><a href="/item">Item</a></td><td>Some <b>bold</b> text and a longer sentence, as on a listing page.</td></tr>';
const page = `<html><head><title>Listing</title></head><body><h1>Listing</h1><table>${row.repeat(ROWS)}</table></body></html>`;
const signal = new AbortController().signal;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

let started = performance.now();
await htmlToText(page, signal);
const first = performance.now() - started;
convert(page, OPTIONS);

const worker: number[] = [];
const main: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  // Alternate which side goes first, so neither always runs on a warmer machine.
  for (const side of round % 2 === 0 ? ['worker', 'main'] : ['main', 'worker']) {
    started = performance.now();
    if (side === 'worker') await htmlToText(page, signal);
    else convert(page, OPTIONS);
    (side === 'worker' ? worker : main).push(performance.now() - started);
  }
}

const w = median(worker);
const m = median(main);
console.log(`page: ${(page.length / 1024).toFixed(0)} KiB, ${ROUNDS} rounds`);
console.log(`first conversion (thread start + converter load): ${first.toFixed(1)} ms`);
console.log(`worker thread: ${w.toFixed(1)} ms median; main thread (anchor): ${m.toFixed(1)} ms median`);
console.log(`ratio worker / main: ${(w / m).toFixed(2)}`);
