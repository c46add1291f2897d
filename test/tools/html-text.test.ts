// HTML to text on a reused worker thread: a page's conversion ends with its signal, and the pages
// waiting behind it are converted all the same.
import { describe, expect, it } from 'vitest';
import { htmlToText } from '../../src/tools/builtin/html-text.ts';
import { scaled } from '../support/time-scale.ts';

/** Unclosed nesting the parser needs minutes for: a conversion that only a signal ends. */
const COSTLY = '<div>'.repeat(400_000);
const PAGE = '<h1>Hello page</h1><p>Some <b>bold</b> prose.</p>';
const live = () => new AbortController().signal;

describe('htmlToText', { timeout: scaled(30_000) }, () => {
  it('reduces a page to readable text', async () => {
    expect(await htmlToText(PAGE, live())).toBe('HELLO PAGE\n\nSome bold prose.');
  });

  it('a conversion stopped by its signal ends with the signal\'s reason; the page queued behind it is converted', async () => {
    const costly = new AbortController();
    const stopped = htmlToText(COSTLY, costly.signal).catch((error: unknown) => error);
    const next = htmlToText(PAGE, live());
    costly.abort(new Error('stop converting'));
    expect(await stopped).toEqual(new Error('stop converting'));
    expect(await next).toBe('HELLO PAGE\n\nSome bold prose.');
  });

  it('a page whose signal aborts while it waits is dropped at once, without stopping the one converting', async () => {
    const costly = new AbortController();
    const converting = htmlToText(COSTLY, costly.signal).catch((error: unknown) => error);
    const waiting = new AbortController();
    const dropped = htmlToText(PAGE, waiting.signal).catch((error: unknown) => error);
    waiting.abort(new Error('not needed'));
    expect(await dropped).toEqual(new Error('not needed'));
    let settled = false;
    void converting.then(() => (settled = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled, 'the costly page is still converting').toBe(false);
    costly.abort(new Error('done'));
    expect(await converting).toEqual(new Error('done'));
  });

  it('a signal already aborted converts nothing', async () => {
    const controller = new AbortController();
    controller.abort(new Error('too late'));
    await expect(htmlToText(PAGE, controller.signal)).rejects.toThrow('too late');
  });
});
