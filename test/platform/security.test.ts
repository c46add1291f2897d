// What the platform guards: credentials kept only as hashes and never logged, tokens that stop
// working when revoked or suspended, rate limits, the Host check, bounded bodies, asset files
// that cannot act as pages of the platform's origin, and a server on loopback by default.
import { readdirSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { hashPassword, suspendUser } from '../../src/platform/index.ts';
import { filesHolding } from '../support/files.ts';
import { call, sharedTimeline, startTestPlatform, type TestPlatform, violations } from '../support/platform.ts';

let p: TestPlatform | undefined;
afterEach(async () => {
  await p?.close();
  p = undefined;
  expect(violations).toEqual([]);
});

describe('credentials', () => {
  it('a token and a password exist nowhere in the home or the log; only their hashes are kept', async () => {
    p = await startTestPlatform();
    const ada = p.user('ada', 'human', { email: 'ada@example.com', passwordHash: await hashPassword('a long passphrase') });
    const minted = await p.api('POST', '/session', { json: { email_address: 'ada@example.com', password: 'a long passphrase', name: 'x' } });
    await p.api('GET', '/users/dashboard', { token: minted.body.token });
    await p.api('GET', '/users/dashboard', { token: ada.token });
    await p.close();
    for (const secret of [ada.token, minted.body.token, 'a long passphrase']) {
      expect(filesHolding(p.home, secret)).toEqual([]);
      expect(p.logs.join('\n')).not.toContain(secret);
    }
  });

  it('a missing, wrong or revoked token is 401 with a Bearer challenge; a suspended account is 403', async () => {
    p = await startTestPlatform();
    const ada = p.user('ada');
    const missing = await p.api('GET', '/timelines');
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer');
    // One character off (never the character it already ends with, or the "wrong" token is right).
    const wrong = `${ada.token.slice(0, -1)}${ada.token.endsWith('x') ? 'y' : 'x'}`;
    expect((await p.api('GET', '/timelines', { token: wrong })).body.code).toBe('unauthorized');
    expect((await p.api('GET', '/timelines', { headers: { authorization: `Basic ${ada.token}` } })).body.code).toBe('unauthorized');
    suspendUser(p.home, 'ada');
    expect((await p.api('GET', '/timelines', { token: ada.token })).body.code).toBe('account_suspended');
    suspendUser(p.home, 'ada', false);
    expect((await p.api('GET', '/timelines', { token: ada.token })).status).toBe(200);
    await p.api('DELETE', '/session', { token: ada.token });
    expect((await p.api('GET', '/timelines', { token: ada.token })).body.code).toBe('unauthorized');
  });

  it('a rate limit answers 429 rate_limited with Retry-After', async () => {
    p = await startTestPlatform({ rateLimitPerMinute: 3 });
    const ada = p.user('ada');
    for (let i = 0; i < 3; i++) expect((await p.api('GET', '/users', { token: ada.token })).status).toBe(200);
    const limited = await p.api('GET', '/users', { token: ada.token });
    expect(limited.body.code).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });
});

describe('the HTTP surface', () => {
  it('listens on 127.0.0.1 by default and answers no other Host', async () => {
    p = await startTestPlatform();
    expect(new URL(p.url).hostname).toBe('127.0.0.1');
    const port = new URL(p.url).port;
    // fetch will not send another Host, so this one request goes through node:http.
    const refused = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      request({ host: '127.0.0.1', port, path: '/', headers: { host: `attacker.example:${port}` } }, (res) => {
        let body = '';
        res.on('data', (chunk) => (body += chunk)).on('end', () => resolve({ status: res.statusCode!, body }));
      }).on('error', reject).end();
    });
    expect(refused.status).toBe(404);
    expect(JSON.parse(refused.body).detail).toBe(`This platform does not answer for host "attacker.example:${port}".`);
    expect((await call(p.url.replace('127.0.0.1', 'localhost'), 'GET', '/')).status).toBe(200);
  });

  it('bad input is a problem document that says what was wrong, never a 500', async () => {
    p = await startTestPlatform({ maxBodyBytes: 1024 });
    const ada = p.user('ada');
    const notJson = await p.api('POST', '/timelines', { token: ada.token, body: '{oops', headers: { 'content-type': 'application/json' } });
    expect(notJson.body).toMatchObject({ code: 'validation_failed', errors: { name: ["can't be blank (the request body is not JSON)"] } });
    const wrongShape = await p.api('POST', '/timelines', { token: ada.token, json: { name: 'flat' } });
    expect(wrongShape.body.errors).toEqual({ name: ['can\'t be blank (send the fields inside {"timeline": {...}})'] });
    const big = await p.api('POST', '/timelines', { token: ada.token, json: { timeline: { name: 'x'.repeat(2000) } } });
    expect(big.status).toBe(413);
    expect(big.body.code).toBe('payload_too_large');
    expect((await p.api('GET', '/timelines', { token: ada.token })).body.timelines).toEqual([]);
  });

  it('an upload over the asset limit is 413 and leaves no file behind', async () => {
    p = await startTestPlatform({ maxAssetBytes: 1000 });
    const ada = p.user('ada');
    const timeline = (await p.api('POST', '/timelines', { token: ada.token, json: { timeline: { name: 'x' } } })).body.timeline.uuid;
    const upload = async (bytes: number) => {
      const form = new FormData();
      form.append('asset[file]', new Blob([new Uint8Array(bytes)]), 'blob.bin');
      return p!.api('POST', `/timelines/${timeline}/assets`, { token: ada.token, form });
    };
    expect((await upload(1001)).body.code).toBe('payload_too_large');
    expect((await upload(200_000)).body.code).toBe('payload_too_large');
    expect(readdirSync(join(p.home, 'assets'))).toEqual([]);
    expect((await upload(1000)).status).toBe(201);
  });

  it("asset files are served so they cannot run as the platform's pages", async () => {
    p = await startTestPlatform();
    const ada = p.user('ada');
    const nova = p.user('nova', 'ai', { trust: ['ada'] });
    const timeline = await sharedTimeline(p, ada, nova);
    const upload = async (name: string, type: string, content: string | Buffer) => {
      const form = new FormData();
      form.append('asset[file]', new Blob([content], { type }), name);
      form.append('asset[description]', name);
      return (await p!.api('POST', `/timelines/${timeline}/assets`, { token: nova.token, form })).body.asset.content.file;
    };
    const page = await upload('../../evil.html', 'text/html', '<script>alert(1)</script>');
    expect(page.filename).toBe('evil.html');
    const served = await fetch(page.url);
    expect(served.headers.get('content-disposition')).toMatch(/^attachment;/);
    expect(served.headers.get('x-content-type-options')).toBe('nosniff');
    expect(served.headers.get('content-security-policy')).toMatch(/^sandbox;/);
    const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
    const image = await upload('dot.png', 'image/png', png);
    const shown = await fetch(image.url);
    expect(shown.headers.get('content-disposition')).toMatch(/^inline;/);
    expect(Buffer.from(await shown.arrayBuffer()).equals(png)).toBe(true);
    // The URL is the capability: its token is long and random, and a guess finds nothing.
    const token = new URL(image.url).pathname.split('/')[2]!;
    expect(token).toMatch(/^[A-Za-z0-9]{40}$/);
    expect((await fetch(image.url.replace(token, 'A'.repeat(40)))).status).toBe(404);
  });

  it('the log names routes, never the secret in an ingest URL', async () => {
    p = await startTestPlatform();
    const ada = p.user('ada');
    const timeline = (await p.api('POST', '/timelines', { token: ada.token, json: { timeline: { name: 'x' } } })).body.timeline.uuid;
    const endpoint = (await p.api('POST', `/timelines/${timeline}/webhook_endpoints`, { token: ada.token, json: { webhook_endpoint: { description: 'x' } } })).body.webhook_endpoint;
    const ingest = new URL(endpoint.content.ingest_url).pathname;
    await p.api('POST', ingest, { json: { event: 'x', status: 'y' } });
    await p.api('POST', `${ingest}x`, { json: { event: 'x', status: 'y' } });
    const log = p.logs.join('\n');
    expect(log).toContain('route=/webhooks/:ingest_token');
    expect(log).not.toContain(ingest.split('/')[2]);
  });

  it('the page forbids every script but its own', async () => {
    p = await startTestPlatform();
    const page = await fetch(`${p.url}/`);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    // Its scripts render peer content as text: none ever assigns markup.
    const web = join(import.meta.dirname, '../../src/platform/web');
    const scripts = readdirSync(web).filter((name) => name.endsWith('.js'));
    expect(scripts).toContain('app.js');
    for (const name of scripts) expect({ name, markup: /innerHTML|outerHTML|insertAdjacentHTML|document\.write/.test(readFileSync(join(web, name), 'utf8')) }).toEqual({ name, markup: false });
  });
});
