// Signing in and out of the web page, in headless Chromium: a refused sign-in says why in words,
// the sign-in throttle's 429 holds the button back for as long as it says (the page's clock is
// Playwright's, moved by hand, and so is the throttle's), a token the page minted is revoked when
// the person signs out and a pasted one is not, and the page carries its own favicon.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { hashPassword, mintToken } from '../../src/platform/index.ts';
import { BROWSER_TEST_TIMEOUT, CHROMIUM_MISSING, launchChromium, PATIENT, recordOffOrigin } from '../support/browser.ts';
import type { Dom, DomLink } from '../support/dom.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';

const PASSWORD = 'correct horse battery';
const SHUT_SECONDS = 30;

describe.skipIf(CHROMIUM_MISSING !== '')(`signing in to the web page${CHROMIUM_MISSING}`, { timeout: BROWSER_TEST_TIMEOUT }, () => {
  let platform: TestPlatform;
  let browser: Browser;
  // The throttle's clock: it moves only when the test moves it.
  let now = Date.parse('2026-01-01T00:00:00Z');

  beforeAll(async () => {
    platform = await startTestPlatform({ signInThrottle: { accountFailures: 1, firstDelayMs: SHUT_SECONDS * 1000, now: () => now } });
    platform.user('ada', 'human', { email: 'ada@example.com', passwordHash: await hashPassword(PASSWORD) });
    browser = await launchChromium();
  }, BROWSER_TEST_TIMEOUT);

  afterAll(async () => {
    await browser?.close();
    await platform?.close();
  });

  it('a wrong password is said in words; the 429 that follows holds the button back, counting down, until it may be tried again', async () => {
    const page = await browser.newPage({ viewport: { width: 420, height: 860 } });
    const offOrigin = recordOffOrigin(page, platform.url);
    await page.clock.install();
    await page.goto(`${platform.url}/`);
    await page.clock.pauseAt(Date.now() + 1000);
    const error = page.getByTestId('sign-in-error');
    const button = page.getByTestId('password-sign-in');

    await page.getByTestId('email').fill('ada@example.com');
    await page.getByTestId('password').fill('not the password');
    await page.getByTestId('password').press('Enter');
    await expect.poll(() => error.textContent(), PATIENT).toBe('The email address or password is incorrect.');

    // That failure used up the account's allowance: even the right password is refused, for 30 s.
    await page.getByTestId('password').fill(PASSWORD);
    await button.click();
    await expect.poll(() => error.textContent(), PATIENT).toBe(`Too many failed sign-ins for this account or from this address; try again in ${SHUT_SECONDS} s.`);
    expect(await button.isDisabled()).toBe(true);
    expect(await button.textContent()).toBe(`Try again in ${SHUT_SECONDS} s`);
    await page.clock.runFor((SHUT_SECONDS - 1) * 1000);
    expect(await button.isDisabled()).toBe(true);
    expect(await button.textContent()).toBe('Try again in 1 s');
    await page.clock.runFor(1000);
    expect(await button.isDisabled()).toBe(false);
    expect(await button.textContent()).toBe('Sign in');
    expect(await error.textContent()).toBe('You can try to sign in again now.');

    now += SHUT_SECONDS * 1000;
    await button.click();
    await expect.poll(() => page.getByTestId('me').textContent(), PATIENT).toBe('@ada');
    expect(await page.getByTestId('password').inputValue()).toBe(''); // not left in the page
    const minted = (await page.evaluate(() => (globalThis as unknown as Dom).sessionStorage.getItem('acx-token')))!;
    expect((await platform.api('GET', '/users/dashboard', { token: minted })).status).toBe(200);

    // Signing out ends the session the page started: its token stops working.
    await page.getByRole('button', { name: 'Sign out' }).click();
    expect(await page.locator('#sign-in').isVisible()).toBe(true);
    expect(await page.evaluate(() => (globalThis as unknown as Dom).sessionStorage.getItem('acx-token'))).toBeNull();
    await expect.poll(async () => (await platform.api('GET', '/users/dashboard', { token: minted })).status, PATIENT).toBe(401);
    expect(offOrigin).toEqual([]);
    await page.close();
  });

  it('a pasted token survives signing out; once revoked elsewhere, the page returns to sign-in and says why', async () => {
    const pasted = mintToken(platform.home, 'ada').token;
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`${platform.url}/`);
    await page.getByTestId('token').fill(pasted);
    await page.getByTestId('token').press('Enter');
    await expect.poll(() => page.getByTestId('me').textContent(), PATIENT).toBe('@ada');
    await page.getByRole('button', { name: 'Sign out' }).click();
    expect(await page.locator('#sign-in').isVisible()).toBe(true);
    expect((await platform.api('GET', '/users/dashboard', { token: pasted })).status).toBe(200);

    await page.getByTestId('token').fill(pasted);
    await page.getByTestId('sign-in').click();
    await expect.poll(() => page.getByTestId('me').textContent(), PATIENT).toBe('@ada');
    expect((await platform.api('DELETE', '/session', { token: pasted })).status).toBe(204);
    await expect.poll(() => page.getByTestId('sign-in-error').textContent(), PATIENT).toBe('Your session has ended (its token was revoked). Sign in again.');
    expect(await page.locator('#app').isVisible()).toBe(false);
    await page.close();
  });

  it('the page has its own favicon, served by the platform', async () => {
    const icon = await platform.api('GET', '/favicon.svg');
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/svg+xml');
    expect(icon.text).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);

    const page = await browser.newPage();
    const offOrigin = recordOffOrigin(page, platform.url);
    await page.goto(`${platform.url}/`);
    expect(await page.locator('link[rel=icon]').evaluate((link: DomLink) => link.href)).toBe(`${platform.url}/favicon.svg`);
    // The page's policy lets it load as an image: it decodes.
    const decoded = await page.evaluate(async () => {
      const { document, Image } = globalThis as unknown as Dom;
      const image = new Image();
      image.src = (document.querySelector('link[rel=icon]') as DomLink).href;
      await image.decode();
      return image.naturalWidth > 0;
    });
    expect(decoded).toBe(true);
    expect(offOrigin).toEqual([]);
    await page.close();
  });
});
