// The web page in headless Chromium (Debian's chromium, driven by playwright-core): a person signs in
// with a token, opens a timeline with an agent on it, posts, and the agent's reply appears. The agent
// is a scripted peer: it takes the platform's signed webhook and answers through the REST API with its
// own token, as a woken agent would. Peer content is text on the page, never markup.
import { createHmac } from 'node:crypto';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, chromium, type Page } from 'playwright-core';
import type { AddedUser } from '../../src/platform/index.ts';
import { startTestPlatform, type TestPlatform, violations } from '../support/platform.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { scaled } from '../support/time-scale.ts';

const CHROMIUM = '/usr/bin/chromium';
const SECRET = 'page-test-secret';
// A 2x2 red PNG.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEklEQVR4nGP4z8DAwMDAwMAAAAX+AP+3vJCjAAAAAElFTkSuQmCC', 'base64');

describe.skipIf(!existsSync(CHROMIUM))(`the web page in Chromium${existsSync(CHROMIUM) ? '' : ` (skipped: ${CHROMIUM} is not installed; .ci/run installs Debian's chromium)`}`, () => {
  let platform: TestPlatform;
  let agent: WebhookReceiver;
  let browser: Browser;
  let page: Page;
  let ada: AddedUser;
  let nova: AddedUser;

  beforeAll(async () => {
    agent = await startWebhookReceiver();
    platform = await startTestPlatform({ deliverTo: [agent.url], webhookSecret: SECRET });
    ada = platform.user('ada', 'human');
    nova = platform.user('nova', 'ai', { trust: ['ada'] });
    // The scripted agent: verify the delivery, read the message it names, reply to a person.
    agent.onDelivery = async ({ headers, raw, body }) => {
      const expected = `sha256=${createHmac('sha256', SECRET).update(raw).digest('hex')}`;
      if (headers['x-basecradle-signature'] !== expected || body.event !== 'message.created' || body.recipient_uuid !== nova.uuid) return;
      const read = await platform.api('GET', new URL(body.resource.url).pathname, { token: nova.token });
      const message = read.body.message;
      if (message.user.kind !== 'human') return;
      await platform.api('POST', `/timelines/${body.timeline_uuid}/messages`, {
        token: nova.token,
        json: { message: { body: `Hello @${message.user.handle}, you said: ${message.content.body}` } },
        headers: { 'idempotency-key': `reply-${message.content.uuid}` },
      });
    };
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    page = await browser.newPage();
    page.on('dialog', (dialog) => void dialog.accept());
  }, scaled(60_000));

  afterAll(async () => {
    await browser?.close();
    await platform?.close();
    await agent?.close();
  });

  it('a person signs in, opens a timeline with an agent, posts, and the reply appears; markup stays text', async () => {
    await page.goto(`${platform.url}/`);
    await page.getByTestId('token').fill(ada.token);
    await page.getByTestId('sign-in').click();
    await expect.poll(() => page.getByTestId('me').textContent()).toBe('@ada');
    expect(await page.locator('#sign-in').isVisible()).toBe(false);

    await page.getByTestId('new-timeline-name').fill('Chat with nova');
    await page.getByTestId('new-timeline').click();
    await expect.poll(() => page.getByTestId('timeline-name').textContent()).toBe('Chat with nova');
    await expect.poll(() => page.getByTestId('add-who').locator('option').allTextContents()).toEqual(['@nova']);
    await page.getByTestId('add-participant').click();
    await expect.poll(() => page.getByTestId('participants').textContent()).toBe('Owner @ada · with @nova');
    expect(await page.getByTestId('add-participant').isVisible()).toBe(false); // nobody else to add

    const hostile = 'hi @nova <script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">';
    await page.getByTestId('message-body').fill(hostile);
    await page.getByTestId('send').click();
    const reply = page.locator('#items li[data-author=nova] .body');
    await expect.poll(() => reply.textContent(), { timeout: scaled(15_000) }).toBe(`Hello @ada, you said: ${hostile}`);
    expect(await page.locator('#items li[data-author=ada] .body').textContent()).toBe(hostile);
    expect(await page.evaluate('typeof window.pwned')).toBe('undefined');
    expect(await page.locator('#items script, #items img').count()).toBe(0);
  });

  it('an uploaded image shows inline, and a task can be scheduled and cancelled', async () => {
    await page.getByTestId('file').setInputFiles({ name: 'red.png', mimeType: 'image/png', buffer: PNG });
    await page.getByTestId('file-description').fill('a red square');
    await page.getByTestId('upload').click();
    const image = page.locator('#items li[data-type=asset] img');
    await expect.poll(() => image.evaluate((img) => (img as unknown as { complete: boolean; naturalWidth: number }).complete && (img as unknown as { naturalWidth: number }).naturalWidth)).toBe(2);
    expect(await image.getAttribute('alt')).toBe('a red square');

    await page.getByTestId('task-instructions').fill('check the build');
    await page.getByTestId('task-when').fill('2099-01-01T09:00');
    await page.getByTestId('task-create').click();
    const task = page.getByTestId('tasks').locator('li');
    await expect.poll(() => task.getAttribute('data-status')).toBe('pending');
    await task.getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => task.getAttribute('data-status')).toBe('cancelled');
    await page.screenshot({ path: `${platform.home}/page.png`, fullPage: true });
    expect(violations).toEqual([]);
  });
});
