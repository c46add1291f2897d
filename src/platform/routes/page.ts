import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Hono } from 'hono';
import type { PlatformEnv, PlatformRuntime } from '../runtime.ts';

/**
 * The web page at `/`: plain HTML, one script and one stylesheet, no build step. It signs in
 * with a token and talks to the same API every peer uses. The policy allows only this
 * origin's own script, so nothing a peer posts can run there even if it were rendered as
 * markup (it is not: the script renders all peer content as text).
 */
const WEB_DIR = fileURLToPath(new URL('../web/', import.meta.url));

const FILES: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
};

const POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

export function registerPage(app: Hono<PlatformEnv>, _rt: PlatformRuntime): void {
  for (const [path, { file, type }] of Object.entries(FILES)) {
    const content = readFileSync(join(WEB_DIR, file));
    app.get(path, (c) =>
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
