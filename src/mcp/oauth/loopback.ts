import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { AcxError } from '../../core/errors.ts';
import { tokenMatches } from '../../util/secure-compare.ts';

/**
 * Catches the authorization code on a loopback redirect (RFC 8252 §7.3): an HTTP server on
 * 127.0.0.1 that answers `/callback` only. A redirect is taken only when its `state` is the one
 * the authorization URL carried (compared in constant time); anything else is answered 400 and
 * the wait goes on, so a stray or forged request cannot end a login. The server listens only
 * while a login runs.
 */
export interface RedirectCatcher {
  /** `http://127.0.0.1:<port>/callback` */
  redirectUrl: string;
  port: number;
  /** The next code whose state is `state()`; rejects when the server redirects with an error, or on `signal`. */
  code(state: () => string | undefined, signal?: AbortSignal): Promise<string>;
  close(): Promise<void>;
}

const PAGE = (title: string, text: string) =>
  `<!doctype html><meta charset="utf-8"><title>${title}</title><body style="font-family:sans-serif;margin:3em"><h1>${title}</h1><p>${text}</p></body>\n`;

export async function catchRedirect(port = 0): Promise<RedirectCatcher> {
  let waiting: { state: () => string | undefined; resolve: (code: string) => void; reject: (error: Error) => void } | undefined;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const answer = (status: number, title: string, text: string) =>
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(PAGE(title, text));
    if (url.pathname !== '/callback' || req.method !== 'GET') return answer(404, 'Not found', 'This address only takes the authorization redirect for acx.');
    const expected = waiting?.state();
    const state = url.searchParams.get('state') ?? '';
    if (!waiting || expected === undefined || !tokenMatches(state, expected)) {
      return answer(400, 'Not this login', 'This redirect does not belong to the login acx is waiting for; it was ignored.');
    }
    const settle = waiting;
    waiting = undefined;
    const error = url.searchParams.get('error');
    if (error) {
      const description = url.searchParams.get('error_description');
      answer(200, 'Authorization refused', 'acx was not authorized. You can close this tab; the terminal says what happened.');
      settle.reject(
        new AcxError('mcp-auth-failed', `The authorization server refused the login: ${error}${description ? ` (${description})` : ''}`, {
          hint: 'Run the login again and approve the access on the authorization page.',
        }),
      );
      return;
    }
    const code = url.searchParams.get('code');
    if (!code) {
      answer(400, 'No code', 'The redirect carried no authorization code.');
      settle.reject(new AcxError('mcp-auth-failed', 'The authorization server redirected back without a code'));
      return;
    }
    answer(200, 'acx is authorized', 'You can close this tab and go back to the terminal.');
    settle.resolve(code);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    redirectUrl: `http://127.0.0.1:${bound}/callback`,
    port: bound,
    code(state, signal) {
      return new Promise<string>((resolve, reject) => {
        if (signal?.aborted) return reject(signal.reason as Error);
        const onAbort = () => {
          waiting = undefined;
          reject(signal!.reason as Error);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        const done = <T>(settle: (value: T) => void) => (value: T) => {
          signal?.removeEventListener('abort', onAbort);
          settle(value);
        };
        waiting = { state, resolve: done(resolve), reject: done(reject) };
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
