// Debian's Chromium for the platform page's tests, driven by playwright-core (browser builds cannot
// be downloaded here, and this machine has no outside network: nothing in the browser may try).
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type Browser, chromium, type Locator, type Page } from 'playwright-core';
import type { Dom, DomImage } from './dom.ts';
import { scaled } from './time-scale.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_MISSING = existsSync(CHROMIUM) ? '' : ` (skipped: ${CHROMIUM} is not installed; .ci/run installs Debian's chromium)`;

/**
 * How long a test waits for the page to show something: long, as the machine may be busy. Tests
 * wait on what the page shows, never for a set time; this only bounds a wait that would never end.
 */
export const PATIENT = { timeout: scaled(60_000), interval: 50 } as const;
/** A whole browser test: several such waits, and a browser to start. */
export const BROWSER_TEST_TIMEOUT = scaled(240_000);

const QUIET = ['--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/**
 * Headless Chromium. Chromium will not run as root with its sandbox, so as root it runs without;
 * as an ordinary user it keeps the sandbox (it needs unprivileged user namespaces), and only if
 * the machine cannot give it one does it run without, saying so.
 */
export async function launchChromium(): Promise<Browser> {
  const launch = (sandbox: boolean) => chromium.launch({ executablePath: CHROMIUM, headless: true, chromiumSandbox: sandbox, args: QUIET });
  if (process.getuid?.() === 0) return launch(false);
  try {
    return await launch(true);
  } catch (error) {
    if (!/sandbox/i.test(String(error))) throw error;
    process.stderr.write(`Chromium could not start its sandbox here (no unprivileged user namespaces?); running it without.\n`);
    return launch(false);
  }
}

/** Every URL the page asked for that is not on `origin` (nor a data: or blob: URL); it should stay empty. */
export function recordOffOrigin(page: Page, origin: string): string[] {
  const off: string[] = [];
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.origin !== origin && url.protocol !== 'data:' && url.protocol !== 'blob:') off.push(request.url());
  });
  return off;
}

export interface AxeFinding {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * axe-core's WCAG 2.x A/AA and best-practice rules, run in the page as it stands: the
 * violations, each with the elements it found. axe is evaluated through the DevTools protocol,
 * which the page's Content-Security-Policy (own scripts only) does not apply to.
 */
export async function axeViolations(page: Page): Promise<AxeFinding[]> {
  if (!(await page.evaluate('typeof window.axe === "object"'))) await page.evaluate(AXE_SOURCE);
  return page.evaluate(async () => {
    const { axe, document } = globalThis as unknown as Dom & { axe: { run(context: unknown, options: object): Promise<{ violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: unknown[] }> }> }> } };
    const result = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'] } });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')) }));
  });
}

/** The findings a person relying on assistive technology would be blocked or badly hindered by. */
export const serious = (findings: AxeFinding[]): AxeFinding[] => findings.filter((f) => f.impact === 'serious' || f.impact === 'critical');

/** The image's width in pixels once it has loaded and decoded (0 until then, or if it cannot be). */
export const loadedWidth = (image: Locator): Promise<number> => image.evaluate((img: DomImage) => (img.complete ? img.naturalWidth : 0));

/** The id of the element that has the keyboard focus ('' for none). */
export const focusedId = (page: Page): Promise<string> => page.evaluate(() => (globalThis as unknown as Dom).document.activeElement?.id ?? '');
