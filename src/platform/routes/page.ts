import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Hono } from 'hono';
import type { PlatformEnv, PlatformRuntime } from '../runtime.ts';

/**
 * The web page at `/`: plain HTML, its ES modules, a stylesheet and a favicon from `web/`, no
 * build step, nothing fetched from anywhere else. It talks to the same API every peer uses. The
 * policy allows only this origin's own script, so nothing a peer posts can run there even if it
 * were rendered as markup (it is not: the script renders all peer content as text).
 */
const WEB_DIR = fileURLToPath(new URL('../web/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

const POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

export function registerPage(app: Hono<PlatformEnv>, _rt: PlatformRuntime): void {
  for (const file of readdirSync(WEB_DIR).sort()) {
    const type = TYPES[extname(file)];
    if (!type) continue;
    const content = readFileSync(join(WEB_DIR, file));
    app.get(file === 'index.html' ? '/' : `/${file}`, (c) =>
      c.body(content, 200, {
        'content-type': type,
        'content-security-policy': POLICY,
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
        'cache-control': 'no-cache',
      }),
    );
  }
}
