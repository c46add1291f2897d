// The web page on a phone (420 px wide) and a desktop (1280 px), in headless Chromium: what a person
// needs is on screen and not covered, the sidebar folds away on the phone, axe-core finds nothing
// serious, and a message can be written and sent with the keyboard alone. Boxes, not pixels.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Locator, Page } from 'playwright-core';
import type { AddedUser } from '../../src/platform/index.ts';
import { axeViolations, BROWSER_TEST_TIMEOUT, CHROMIUM_MISSING, focusedId, launchChromium, loadedWidth, PATIENT, recordOffOrigin, serious } from '../support/browser.ts';
import type { Dom, DomElement } from '../support/dom.ts';
import { postMessage, sharedTimeline, startTestPlatform, type TestPlatform } from '../support/platform.ts';

const SCREENS = [
  { name: 'phone', width: 420, height: 860, narrow: true },
  { name: 'desktop', width: 1280, height: 800, narrow: false },
] as const;
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEklEQVR4nGP4z8DAwMDAwMAAAAX+AP+3vJCjAAAAAElFTkSuQmCC', 'base64');

interface Box {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

/** Where the element is, whether it lies wholly inside the viewport, and whether it is what a tap at its centre reaches. */
function placement(locator: Locator) {
  return locator.evaluate((element: DomElement) => {
    const { document, innerWidth, innerHeight } = globalThis as unknown as Dom;
    const r = element.getBoundingClientRect();
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return {
      box: { left: r.left, top: r.top, right: r.right, bottom: r.bottom },
      inside: r.width > 0 && r.height > 0 && r.left >= 0 && r.top >= 0 && r.right <= innerWidth && r.bottom <= innerHeight,
      onTop: hit !== null && (hit === element || element.contains(hit)),
    };
  });
}

/** Nothing sticks out sideways: the page never needs a horizontal scroll. */
const fitsWidth = (page: Page): Promise<boolean> =>
  page.evaluate(() => {
    const { document, innerWidth } = globalThis as unknown as Dom;
    return document.documentElement.scrollWidth <= innerWidth;
  });

const overlap = (a: Box, b: Box): boolean => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;

/** Tab (only the key) until the focused element matches `selector`; fails if it takes more than `most` presses. */
async function tabTo(page: Page, selector: string, most = 40): Promise<void> {
  for (let i = 0; i < most; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate((s) => (globalThis as unknown as Dom).document.activeElement?.matches(s) ?? false, selector)) return;
  }
  throw new Error(`${most} presses of Tab never reached ${selector}`);
}

describe.skipIf(CHROMIUM_MISSING !== '')(`the web page on a phone and a desktop${CHROMIUM_MISSING}`, { timeout: BROWSER_TEST_TIMEOUT }, () => {
  let platform: TestPlatform;
  let browser: Browser;
  let ada: AddedUser;
  let nova: AddedUser;
  let timeline: string;
  const shots = mkdtempSync(join(tmpdir(), 'acx-page-shots-'));

  beforeAll(async () => {
    platform = await startTestPlatform();
    ada = platform.user('ada', 'human');
    nova = platform.user('nova', 'ai', { trust: ['ada'] });
    timeline = await sharedTimeline(platform, ada, nova, 'Chat with nova');
    // Enough conversation to fill the screen, with an image in it.
    for (let i = 0; i < 14; i++) await postMessage(platform, i % 2 ? nova.token : ada.token, timeline, `message ${i}: ${'words to wrap '.repeat(1 + (i % 5))}`);
    const form = new FormData();
    form.append('asset[file]', new Blob([PNG], { type: 'image/png' }), 'red.png');
    form.append('asset[description]', 'a red square');
    expect((await platform.api('POST', `/timelines/${timeline}/assets`, { token: nova.token, form })).status).toBe(201);
    browser = await launchChromium();
  }, BROWSER_TEST_TIMEOUT);

  afterAll(async () => {
    await browser?.close();
    await platform?.close();
  });

  describe.each(SCREENS.map((screen) => [`${screen.name}, ${screen.width} px wide`, screen] as const))('%s', (_title, screen) => {
    let page: Page;
    let offOrigin: string[];

    beforeAll(async () => {
      page = await browser.newPage({ viewport: { width: screen.width, height: screen.height } });
      offOrigin = recordOffOrigin(page, platform.url);
    }, BROWSER_TEST_TIMEOUT);
    afterAll(() => page?.close());

    it('the sign-in forms fit, say what went wrong in words, and axe finds nothing serious', async () => {
      await page.goto(`${platform.url}/`);
      await page.getByTestId('token').fill('bc_uat_not-a-real-token');
      await page.getByTestId('sign-in').click();
      await expect.poll(() => page.getByTestId('sign-in-error').textContent(), PATIENT).toBe('The access token is not valid (revoked, or never issued).');
      for (const id of ['token', 'sign-in', 'email', 'password', 'password-sign-in']) {
        expect({ id, ...(await placement(page.getByTestId(id))) }).toMatchObject({ id, inside: true, onTop: true });
      }
      expect(await fitsWidth(page)).toBe(true);
      await page.screenshot({ path: join(shots, `sign-in-${screen.width}.png`) });
      expect(serious(await axeViolations(page))).toEqual([]);
    });

    it('signed in, the timeline list is at hand, and the conversation and the Send button are in view, uncovered', async () => {
      await page.getByTestId('token').fill(ada.token);
      await page.getByTestId('token').press('Enter');
      await expect.poll(() => page.getByTestId('me').textContent(), PATIENT).toBe('@ada');
      const menu = page.getByTestId('menu');
      const sidebar = page.locator('#sidebar');
      const chooser = page.locator('#timelines button', { hasText: 'Chat with nova' });
      if (screen.narrow) {
        // The sidebar waits behind the Timelines button, out of the way.
        expect(await sidebar.isVisible()).toBe(false);
        expect(await placement(menu)).toMatchObject({ inside: true, onTop: true });
        expect(await menu.getAttribute('aria-expanded')).toBe('false');
        await menu.click();
        expect(await menu.getAttribute('aria-expanded')).toBe('true');
        expect(await placement(chooser)).toMatchObject({ inside: true, onTop: true });
        await chooser.click();
        // Choosing folds it away again, and the message box has the focus.
        expect(await sidebar.isVisible()).toBe(false);
        await expect.poll(() => focusedId(page), PATIENT).toBe('message-body');
      } else {
        expect(await menu.isVisible()).toBe(false);
        expect(await placement(chooser)).toMatchObject({ inside: true, onTop: true });
        await chooser.click();
        const nav = (await placement(sidebar)).box;
        expect(nav.right).toBeLessThanOrEqual((await placement(page.locator('#conversation'))).box.left);
      }
      const image = page.locator('#items li[data-type=asset] img');
      await expect.poll(() => loadedWidth(image), PATIENT).toBe(2);

      const send = await placement(page.getByTestId('send'));
      const box = await placement(page.getByTestId('message-body'));
      const items = await placement(page.getByTestId('items'));
      expect(send).toMatchObject({ inside: true, onTop: true });
      expect(box).toMatchObject({ inside: true, onTop: true });
      expect(overlap(items.box, box.box)).toBe(false);
      expect(overlap(items.box, send.box)).toBe(false);
      expect(overlap(send.box, box.box)).toBe(false);
      // The newest item is in view at the bottom of the list.
      const newest = (await placement(page.locator('#items li').last())).box;
      expect(newest.bottom).toBeLessThanOrEqual(items.box.bottom + 1);
      expect(newest.top).toBeGreaterThanOrEqual(items.box.top);
      expect(await fitsWidth(page)).toBe(true);
      await page.screenshot({ path: join(shots, `timeline-${screen.width}.png`) });

      // The panels open without pushing the composer off screen.
      await page.locator('#upload-panel summary').click();
      await page.locator('#task-panel summary').click();
      expect(await placement(page.getByTestId('upload'))).toMatchObject({ inside: true, onTop: true });
      expect(await placement(page.getByTestId('send'))).toMatchObject({ inside: true, onTop: true });
      await page.screenshot({ path: join(shots, `panels-${screen.width}.png`) });
    });

    it('axe finds nothing serious with a timeline open, its panels open and the sidebar shown', async () => {
      if (screen.narrow) await page.getByTestId('menu').click();
      await page.screenshot({ path: join(shots, `sidebar-${screen.width}.png`) });
      expect(serious(await axeViolations(page))).toEqual([]);
      if (screen.narrow) {
        // Escape folds the sidebar away and gives the focus back to its button.
        await page.keyboard.press('Escape');
        expect(await page.locator('#sidebar').isVisible()).toBe(false);
        expect(await focusedId(page)).toBe('menu');
      }
    });

    it('with the keyboard alone: Tab to the box, type, Enter sends; Shift+Enter is a new line, Ctrl+Enter sends too', async () => {
      await page.goto(`${platform.url}/`); // signed in still (this tab's session), nothing chosen, nothing focused
      await expect.poll(() => page.getByTestId('me').textContent(), PATIENT).toBe('@ada');
      if (screen.narrow) {
        await tabTo(page, '[data-testid=menu]');
        await page.keyboard.press('Enter');
      }
      await tabTo(page, '#timelines button');
      await page.keyboard.press('Enter');
      await expect.poll(() => page.getByTestId('timeline-name').textContent(), PATIENT).toBe('Chat with nova');
      if (screen.narrow) await expect.poll(() => focusedId(page), PATIENT).toBe('message-body'); // choosing put the focus there
      else await tabTo(page, '#message-body');
      const first = `typed on the ${screen.name}`;
      await page.keyboard.type(first);
      await page.keyboard.press('Enter');
      await expect.poll(() => page.locator('#items li[data-author=ada] .body').last().textContent(), PATIENT).toBe(first);
      expect(await page.getByTestId('message-body').inputValue()).toBe('');
      expect(await focusedId(page)).toBe('message-body');

      await page.keyboard.type('line one');
      await page.keyboard.press('Shift+Enter');
      await page.keyboard.type('line two');
      expect(await page.getByTestId('message-body').inputValue()).toBe('line one\nline two');
      await page.keyboard.press('Control+Enter');
      await expect.poll(() => page.locator('#items li[data-author=ada] .body').last().textContent(), PATIENT).toBe('line one\nline two');
      const posted = await platform.api('GET', `/messages?timeline=${timeline}`, { token: ada.token });
      expect(posted.body.messages.slice(0, 2).map((m: { content: { body: string } }) => m.content.body)).toEqual(['line one\nline two', first]);
      expect(offOrigin).toEqual([]);
    });
  });
});
