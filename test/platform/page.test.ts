// The web page in headless Chromium (Debian's chromium, driven by playwright-core): a person signs in
// with a token, opens a timeline with an agent on it, posts, and the agent's reply appears. The agent
// is a scripted peer: it takes the platform's signed webhook and answers through the REST API with its
// own token, as a woken agent would. Peer content is text on the page, never markup. What others post
// through the API appears without a reload, and a reader who scrolled up is not moved.
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { AddedUser } from '../../src/platform/index.ts';
import { BROWSER_TEST_TIMEOUT, CHROMIUM_MISSING, launchChromium, loadedWidth, PATIENT, recordOffOrigin } from '../support/browser.ts';
import type { Dom, DomElement } from '../support/dom.ts';
import { postMessage, startTestPlatform, type TestPlatform, violations } from '../support/platform.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

const SECRET = 'page-test-secret';
// A 2x2 red PNG.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEklEQVR4nGP4z8DAwMDAwMAAAAX+AP+3vJCjAAAAAElFTkSuQmCC', 'base64');

describe.skipIf(CHROMIUM_MISSING !== '')(`the web page in Chromium${CHROMIUM_MISSING}`, { timeout: BROWSER_TEST_TIMEOUT }, () => {
  let platform: TestPlatform;
  let agent: WebhookReceiver;
  let browser: Browser;
  let page: Page;
  let offOrigin: string[];
  let ada: AddedUser;
  let nova: AddedUser;
  let grace: AddedUser;
  let timeline: string;

  beforeAll(async () => {
    agent = await startWebhookReceiver();
    platform = await startTestPlatform({ deliverTo: [agent.url], webhookSecret: SECRET });
    ada = platform.user('ada', 'human');
    nova = platform.user('nova', 'ai', { trust: ['ada'] });
    grace = platform.user('grace', 'human', { trust: ['ada', 'nova'] });
    // The scripted agent: verify the delivery, read the message it names, reply to a person who mentions it.
    agent.onDelivery = async ({ headers, raw, body }) => {
      const expected = `sha256=${createHmac('sha256', SECRET).update(raw).digest('hex')}`;
      if (headers['x-basecradle-signature'] !== expected || body.event !== 'message.created' || body.recipient_uuid !== nova.uuid) return;
      const read = await platform.api('GET', new URL(body.resource.url).pathname, { token: nova.token });
      const message = read.body.message;
      if (message.user.kind !== 'human' || !message.content.body.includes('@nova')) return;
      await platform.api('POST', `/timelines/${body.timeline_uuid}/messages`, {
        token: nova.token,
        json: { message: { body: `Hello @${message.user.handle}, you said: ${message.content.body}` } },
        headers: { 'idempotency-key': `reply-${message.content.uuid}` },
      });
    };
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    offOrigin = recordOffOrigin(page, platform.url);
    page.on('dialog', (dialog) => void dialog.accept());
  }, BROWSER_TEST_TIMEOUT);

  afterAll(async () => {
    await browser?.close();
    await platform?.close();
    await agent?.close();
  });

  it('a person signs in, opens a timeline with an agent, posts, and the reply appears; markup stays text', async () => {
    await page.goto(`${platform.url}/`);
    await page.getByTestId('token').fill(ada.token);
    await page.getByTestId('sign-in').click();
    await expect.poll(() => page.getByTestId('me').textContent(), PATIENT).toBe('@ada');
    expect(await page.locator('#sign-in').isVisible()).toBe(false);

    await page.getByTestId('new-timeline-name').fill('Chat with nova');
    await page.getByTestId('new-timeline').click();
    await expect.poll(() => page.getByTestId('timeline-name').textContent(), PATIENT).toBe('Chat with nova');
    timeline = (await page.locator('#timelines button[aria-current=true]').getAttribute('data-uuid'))!;
    await expect.poll(() => page.getByTestId('add-who').locator('option').allTextContents(), PATIENT).toEqual(['@nova', '@grace']);
    await page.getByTestId('add-who').selectOption({ label: '@nova' });
    await page.getByTestId('add-participant').click();
    await expect.poll(() => page.getByTestId('participants').textContent(), PATIENT).toBe('Owner @ada · with @nova');
    await page.getByTestId('add-participant').click(); // grace, the one left
    await expect.poll(() => page.getByTestId('participants').textContent(), PATIENT).toBe('Owner @ada · with @nova, @grace');
    expect(await page.getByTestId('add-participant').isVisible()).toBe(false); // nobody else to add

    const hostile = 'hi @nova <script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">';
    await page.getByTestId('message-body').fill(hostile);
    await page.getByTestId('send').click();
    const reply = page.locator('#items li[data-author=nova] .body');
    await expect.poll(() => reply.textContent(), PATIENT).toBe(`Hello @ada, you said: ${hostile}`);
    expect(await page.locator('#items li[data-author=ada] .body').textContent()).toBe(hostile);
    expect(await page.evaluate('typeof window.pwned')).toBe('undefined');
    expect(await page.locator('#items script, #items img').count()).toBe(0);
  });

  it('an uploaded image shows inline, and a task can be scheduled and cancelled', async () => {
    await page.locator('#upload-panel summary').click();
    await page.getByTestId('file').setInputFiles({ name: 'red.png', mimeType: 'image/png', buffer: PNG });
    await page.getByTestId('file-description').fill('a red square');
    await page.getByTestId('upload').click();
    const image = page.locator('#items li[data-type=asset] img');
    await expect.poll(() => loadedWidth(image), PATIENT).toBe(2);
    expect(await image.getAttribute('alt')).toBe('a red square');

    await page.locator('#task-panel summary').click();
    await page.getByTestId('task-instructions').fill('check the build');
    await page.getByTestId('task-when').fill('2099-01-01T09:00');
    await page.getByTestId('task-create').click();
    const task = page.getByTestId('tasks').locator('li');
    await expect.poll(() => task.getAttribute('data-status'), PATIENT).toBe('pending');
    await task.getByRole('button', { name: 'Cancel the task “check the build”' }).click();
    await expect.poll(() => task.getAttribute('data-status'), PATIENT).toBe('cancelled');
  });

  it('what a person and an agent post through the API appears without a reload, an image as an image with its description as alt text', async () => {
    // A mark in the page's memory: a reload or navigation would lose it.
    await page.evaluate(() => Object.assign(globalThis, { stillThisPage: true }));
    let navigations = 0;
    page.on('framenavigated', () => navigations++);

    await postMessage(platform, grace.token, timeline, 'grace here, written elsewhere');
    await expect.poll(() => page.locator('#items li[data-author=grace] .body').last().textContent(), PATIENT).toBe('grace here, written elsewhere');

    const form = new FormData();
    form.append('asset[file]', new Blob([PNG], { type: 'image/png' }), 'chart.png');
    form.append('asset[description]', 'the build times, as a chart');
    expect((await platform.api('POST', `/timelines/${timeline}/assets`, { token: nova.token, form })).status).toBe(201);
    const image = page.locator('#items li[data-author=nova][data-type=asset] img');
    await expect.poll(() => loadedWidth(image), PATIENT).toBe(2);
    expect(await image.getAttribute('alt')).toBe('the build times, as a chart');

    expect(await page.evaluate('window.stillThisPage')).toBe(true);
    expect(navigations).toBe(0);
  });

  it('a poll leaves the keyboard focus and a selection where they were', async () => {
    const chooser = page.locator(`#timelines button[data-uuid="${timeline}"]`);
    await chooser.focus();
    const selected = 'grace here, written elsewhere';
    await page.locator('#items li[data-author=grace] .body').last().evaluate((body: DomElement) => {
      const { document, getSelection } = globalThis as unknown as Dom;
      const range = document.createRange();
      range.selectNodeContents(body);
      getSelection()!.removeAllRanges();
      getSelection()!.addRange(range);
    });
    // The sidebar is redrawn (if at all) between the answer to GET /timelines and the request for the open timeline that follows it.
    const sidebarPolled = new Promise<void>((resolve) => {
      let listAsked = false;
      const watch = (request: { url(): string }) => {
        const path = new URL(request.url()).pathname;
        if (path === '/timelines') listAsked = true;
        else if (listAsked && path === `/timelines/${timeline}`) {
          page.off('request', watch);
          resolve();
        }
      };
      page.on('request', watch);
    });
    await postMessage(platform, grace.token, timeline, 'a message while you look elsewhere');
    await sidebarPolled;
    await expect.poll(() => page.locator('#items li[data-author=grace] .body').last().textContent(), PATIENT).toBe('a message while you look elsewhere');
    expect(await chooser.evaluate((button: DomElement) => (globalThis as unknown as Dom).document.activeElement === button)).toBe(true);
    expect(await page.evaluate(() => (globalThis as unknown as Dom).getSelection()?.toString())).toBe(selected);
  });

  it('a reader who scrolled up stays put while new messages arrive, is offered a way down, and one at the bottom follows them', async () => {
    for (let i = 0; i < 25; i++) await postMessage(platform, grace.token, timeline, `filler ${i}: ${'a line of chat to fill the screen '.repeat(2)}`);
    const list = page.getByTestId('items');
    await expect.poll(() => page.locator('#items li[data-author=grace] .body').last().textContent(), PATIENT).toMatch(/^filler 24:/);
    // The view followed them down: the reader was at the bottom.
    const atBottom = () => list.evaluate((ol: DomElement) => ol.scrollTop + ol.clientHeight >= ol.scrollHeight - 2);
    expect(await atBottom()).toBe(true);

    // Scrolled up to the middle: note which item is at the top of the view, and where.
    const anchor = await list.evaluate((ol: DomElement) => {
      ol.scrollTop = Math.floor((ol.scrollHeight - ol.clientHeight) / 2);
      const top = ol.getBoundingClientRect().top;
      const first = [...ol.children].find((li) => li.getBoundingClientRect().bottom > top)!;
      return { scrollTop: ol.scrollTop, uuid: first.dataset.uuid!, y: first.getBoundingClientRect().top };
    });
    expect(await page.getByTestId('jump').isVisible()).toBe(false);
    await postMessage(platform, grace.token, timeline, 'news while you read');
    await expect.poll(() => page.locator('#items li[data-author=grace] .body').last().textContent(), PATIENT).toBe('news while you read');
    const after = await list.evaluate((ol: DomElement, uuid) => ({ scrollTop: ol.scrollTop, y: ol.querySelector(`li[data-uuid="${uuid}"]`)!.getBoundingClientRect().top }), anchor.uuid);
    expect(after).toEqual({ scrollTop: anchor.scrollTop, y: anchor.y });
    expect(await page.getByTestId('jump').isVisible()).toBe(true);

    await page.getByTestId('jump').click();
    expect(await atBottom()).toBe(true);
    expect(await page.getByTestId('jump').isVisible()).toBe(false);

    // At the bottom, the next one is followed: it is in view the moment it is on the page.
    await postMessage(platform, nova.token, timeline, 'and one more');
    const arrived = () => list.evaluate((ol: DomElement) => {
      const last = ol.lastElementChild;
      if (last?.querySelector('.body')?.textContent !== 'and one more') return 'not yet';
      return ol.scrollTop + ol.clientHeight >= ol.scrollHeight - 2 ? 'in view' : 'out of view';
    });
    await expect.poll(arrived, PATIENT).not.toBe('not yet');
    expect(await arrived()).toBe('in view');
    expect(await page.getByTestId('jump').isVisible()).toBe(false);
    expect(offOrigin).toEqual([]);
    expect(violations).toEqual([]);
  });
});
