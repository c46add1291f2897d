// Issue 30, "Checked by": a real chat app on acx in headless Chromium. The server is
// test/support/chat-app/server.ts (node:http, createAgentUIStreamResponse piped with .pipe(),
// onFinish persistence, the history GET from session.uiMessages(), the resume GET), run as its own
// process; the page is test/support/chat-app/page (useChat from @ai-sdk/react with resume: true,
// built once with Vite); the model is the local scripted model server. One chat goes through every
// path a person takes — stream, approve, deny, reload (also mid-reply), a new message while an
// approval waits, cancel and go on — and after each the server is still up and the chat still answers.
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { UIMessage } from 'ai';
import { type Browser, chromium, type Page } from 'playwright-core';
import { build } from 'vite';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ChatApp, chatModel, startChatApp } from '../support/chat-app/start.ts';
import { type ModelServer, startModelServer } from '../support/model-server.ts';
import { scaled } from '../support/time-scale.ts';

const CHROMIUM = '/usr/bin/chromium';
const CHAT = 'browser-chat';
const WAIT = { timeout: scaled(30_000) };

describe.skipIf(!existsSync(CHROMIUM))(`a chat app on acx in Chromium${existsSync(CHROMIUM) ? '' : ` (skipped: ${CHROMIUM} is not installed; .ci/run installs Debian's chromium)`}`, () => {
  let model: ModelServer;
  let app: ChatApp;
  let browser: Browser;
  let page: Page;
  let home: string;

  beforeAll(async () => {
    const outDir = mkdtempSync(join(tmpdir(), 'acx-chat-page-'));
    home = mkdtempSync(join(tmpdir(), 'acx-chat-home-'));
    model = await startModelServer({ fallback: chatModel });
    const [, started, launched] = await Promise.all([
      build({ root: join(import.meta.dirname, '../support/chat-app/page'), configFile: false, logLevel: 'error', build: { outDir, emptyOutDir: true } }),
      startChatApp({ home, openaiBaseURL: model.openaiBaseURL, staticDir: outDir }),
      chromium.launch({
        executablePath: CHROMIUM,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      }),
    ]);
    app = started;
    browser = launched;
    page = await browser.newPage();
    await page.goto(`${app.url}/?chat=${CHAT}`);
    await page.getByTestId('input').waitFor(WAIT);
  }, scaled(120_000));

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await model?.close();
  });

  afterEach(() => {
    expect(app.alive(), `the server died:\n${app.stderr()}`).toBe(true);
  });

  const assistantTexts = () => page.locator('li[data-role=assistant] p.text').allTextContents();
  const lastTool = (name: string) => page.locator(`li[data-role=assistant] .tool[data-tool=${name}]`).last();
  const deployed = () => (existsSync(join(home, 'deployed')) ? readFileSync(join(home, 'deployed'), 'utf8').trim().split('\n') : []);

  /**
   * Types a message and sends it, as a person does; waits until its reply has come: the message
   * is on the page, an assistant message follows it, and the chat is ready (or shows an error).
   */
  async function say(text: string): Promise<void> {
    const users = await page.locator('li[data-role=user]').count();
    await expect.poll(() => page.getByTestId('status').textContent(), WAIT).toBe('ready');
    await page.getByTestId('input').fill(text);
    await page.getByTestId('send').click();
    await expect
      .poll(async () => ({
        users: await page.locator('li[data-role=user]').count(),
        last: await page.locator('li[data-role]').last().getAttribute('data-role'),
        status: await page.getByTestId('status').textContent(),
      }), WAIT)
      .toEqual({ users: users + 1, last: 'assistant', status: 'ready' });
  }

  it('streams a reply', async () => {
    await say('hello');
    await expect.poll(assistantTexts, WAIT).toEqual(['You said: hello']);
  });

  it('approve: the tool runs, its output and the reply appear', async () => {
    await say('please deploy');
    await expect.poll(() => lastTool('deploy').getAttribute('data-state'), WAIT).toBe('approval-requested');
    expect(deployed(), 'nothing runs before the click').toEqual([]);
    await page.getByTestId('approve').click();
    await expect.poll(() => lastTool('deploy').getAttribute('data-state'), WAIT).toBe('output-available');
    await expect.poll(async () => (await assistantTexts()).at(-1), WAIT).toBe('Done: deployed to prod');
    expect(deployed()).toEqual([`${CHAT} prod`]);
  });

  it('deny: the tool never runs, the part says denied, the chat answers on', async () => {
    await say('please deploy');
    await expect.poll(() => lastTool('deploy').getAttribute('data-state'), WAIT).toBe('approval-requested');
    await page.getByTestId('deny').click();
    await expect.poll(() => lastTool('deploy').getAttribute('data-state'), WAIT).toBe('output-denied');
    await expect.poll(() => lastTool('deploy').textContent(), WAIT).toContain('(not now)');
    expect(deployed()).toEqual([`${CHAT} prod`]);
    await say('weather please');
    await expect.poll(async () => (await assistantTexts()).at(-1), WAIT).toBe('Done: sunny in Paris');
  });

  it('reload: the history comes back from session.uiMessages() as the page showed it, and the chat goes on', async () => {
    const before = await page.getByTestId('messages').innerText();
    await page.reload();
    await page.getByTestId('input').waitFor(WAIT);
    expect(await page.getByTestId('messages').innerText()).toBe(before);
    await say('still here?');
    await expect.poll(async () => (await assistantTexts()).at(-1), WAIT).toBe('You said: still here?');
  });

  it('reload mid-reply: useChat({ resume: true }) brings the reply back whole, once, and it streams on to its end', async () => {
    let release = () => {};
    model.enqueue({ toolCalls: [{ name: 'weather', input: { city: 'Lyon' } }] }, { text: 'Done: sunny in Lyon', pauseUntil: new Promise<void>((resolve) => (release = resolve)) });
    const assistants = await page.locator('li[data-role=assistant]').count();
    await page.getByTestId('input').fill('weather in Lyon please');
    await page.getByTestId('send').click();
    // Mid-reply: the tool has run and the report has begun, held by the model after its first delta.
    await expect.poll(async () => (await page.locator('li[data-role=assistant]').count()) === assistants + 1 && (await assistantTexts()).at(-1)?.startsWith('Done'), WAIT).toBe(true);
    expect(await page.getByTestId('status').textContent()).toBe('streaming');

    await page.reload();
    await page.getByTestId('input').waitFor(WAIT);
    // The resumed reply is back, as far as it had come, while the model still holds the rest.
    await expect.poll(async () => (await assistantTexts()).at(-1), WAIT).toMatch(/^Done/);
    release();
    await expect.poll(() => page.getByTestId('status').textContent(), WAIT).toBe('ready');
    expect((await assistantTexts()).at(-1)).toBe('Done: sunny in Lyon');
    expect(await page.locator('li[data-role=assistant]').count(), 'the reply once, not once from the history and once resumed').toBe(assistants + 1);
    expect(await lastTool('weather').getAttribute('data-state')).toBe('output-available');
    expect(await page.locator('li[data-role=assistant]').last().locator('.tool').count()).toBe(1);
    // What the page shows after the resume is what a reload shows once the turn is done.
    const resumed = await page.getByTestId('messages').innerText();
    await page.reload();
    await page.getByTestId('input').waitFor(WAIT);
    expect(await page.getByTestId('messages').innerText()).toBe(resumed);
  });

  it('a new message while an approval waits declines it: no error, the reply comes, the tool never runs', async () => {
    await say('please deploy');
    await expect.poll(() => lastTool('deploy').getAttribute('data-state'), WAIT).toBe('approval-requested');
    await say('never mind, hello');
    await expect.poll(async () => (await assistantTexts()).at(-1), WAIT).toBe('You said: never mind, hello');
    expect(await page.getByTestId('error').count()).toBe(0);
    await say('weather please');
    await expect.poll(async () => (await assistantTexts()).at(-1), WAIT).toBe('Done: sunny in Paris');
    expect(deployed()).toEqual([`${CHAT} prod`]);
    // After a reload the declined call shows what the model was told.
    await page.reload();
    await page.getByTestId('input').waitFor(WAIT);
    const declined = page.locator('li[data-role=assistant] .tool[data-tool=deploy]').nth(2);
    await expect.poll(() => declined.getAttribute('data-state'), WAIT).toBe('output-denied');
    expect(await declined.textContent()).toContain('Not run: the turn was abandoned (the user moved on without approving).');
  });

  it('cancel a waiting approval (session.abandonTurn) and go on', async () => {
    await say('please deploy');
    await expect.poll(() => lastTool('deploy').getAttribute('data-state'), WAIT).toBe('approval-requested');
    await page.getByTestId('abandon').click();
    await expect.poll(() => lastTool('deploy').getAttribute('data-state'), WAIT).toBe('output-denied');
    expect(await lastTool('deploy').textContent()).toContain('Not run: the turn was abandoned (the user cancelled).');
    await say('hello again');
    await expect.poll(async () => (await assistantTexts()).at(-1), WAIT).toBe('You said: hello again');
    expect(deployed()).toEqual([`${CHAT} prod`]);
  });

  it("persistence with onFinish: the app's own store holds the chat the page shows", async () => {
    const stored = (await (await fetch(`${app.url}/api/chat/${CHAT}/stored`)).json()) as UIMessage[];
    const shown = await page.locator('li[data-role]').evaluateAll((items) =>
      items.map((item) => [item.getAttribute('data-role'), [...item.querySelectorAll('p.text')].map((p) => p.textContent)]),
    );
    expect(stored.map((m) => [m.role, m.parts.flatMap((p) => (p.type === 'text' ? [p.text] : []))])).toEqual(shown);
    expect(shown.at(-1)).toEqual(['assistant', ['You said: hello again']]);
  });
});
