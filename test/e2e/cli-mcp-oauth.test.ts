import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACX_BIN, cleanEnv, ROOT, runAcx, tempDir } from '../support/cli.ts';
import { type ModelServer, respondByTurn, startModelServer } from '../support/model-server.ts';
import { startOAuthFixture, type OAuthFixture } from '../fixtures/mcp/oauth-server.ts';
import { scaled } from '../support/time-scale.ts';

/**
 * An OAuth-protected MCP drop-in, end to end through the CLI as a user runs it: `acx mcp login`
 * (its printed URL fetched as a browser would, redirects followed to acx's loopback listener),
 * `acx run` calling the server's tool with the stored token, a token refreshed before it expires
 * (the server's access tokens live TOKEN_SECONDS), `acx mcp logout` revoking at the server, and a
 * run after it told which login to run. The authorization and MCP servers are the MCP SDK's own
 * server-side auth (test/fixtures/mcp/oauth-server.ts), on 127.0.0.1.
 */
const TOKEN_SECONDS = 4;
const KEY = 'sk-test-OAUTHE2E-4f1a2b3c';

let fixture: OAuthFixture;
let model: ModelServer;
let home: string;

beforeAll(async () => {
  fixture = await startOAuthFixture({ accessTokenSeconds: TOKEN_SECONDS });
  model = await startModelServer({
    fallback: respondByTurn(({ request }) => {
      const results = request.view.messages.flatMap((m) => m.toolResults ?? []);
      const said = request.view.messages.map((m) => (m.role === 'user' ? m.text : '')).join('\n');
      return results.length > 0 ? `The server said: ${results[0]!.output}` : { toolCalls: [{ name: 'notes__echo', input: { text: /say:(\S+)/.exec(said)?.[1] ?? '?' } }] };
    }),
  });
  home = tempDir('acx-oauth-e2e-');
  fs.mkdirSync(path.join(home, 'mcp'), { recursive: true });
  fs.writeFileSync(path.join(home, 'mcp', 'notes.json'), JSON.stringify({ url: fixture.url, required: true }));
});

afterAll(async () => {
  await fixture?.close();
  await model?.close();
});

const env = (level = 'debug') => cleanEnv({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: model.openaiBaseURL, ACX_LOG_LEVEL: level });
const run = (prompt: string) => runAcx(['run', 'default', prompt, '--model', 'openai:oauth-model', '--permission-mode', 'allow-all'], { env: env(), home });
const stored = () => JSON.parse(fs.readFileSync(path.join(home, 'mcp-auth', 'notes.json'), 'utf8')) as { tokens: { access_token: string; refresh_token: string; expires_at: number; expires_in: number } };

/** `acx mcp login notes`, with the user's browser played by fetching the URL it prints. */
async function login(): Promise<{ status: number | null; stdout: string; stderr: string; page: string }> {
  const child = spawn(process.execPath, [ACX_BIN, 'mcp', 'login', 'notes'], { cwd: ROOT, env: { ...env(), ACX_HOME: home, ACX_CONFIG_HOME: home, HOME: home } });
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const shown = new Promise<string>((resolve) =>
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const url = /^\s+(http:\/\/\S+)$/m.exec(stdout)?.[1];
      if (url) resolve(url);
    }),
  );
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  const url = await Promise.race([shown, exited.then(() => undefined)]);
  if (!url) return { status: await exited, stdout, stderr, page: '' };
  const page = await (await fetch(url)).text();
  return { status: await exited, stdout, stderr, page };
}

describe('acx mcp login, a run, a refresh, acx mcp logout (e2e)', { timeout: scaled(180_000) }, () => {
  it('logs in through the printed URL, calls the tool, refreshes before expiry, revokes on logout', async () => {
    // Before any login: the required drop-in does not start, and the run says which login to run.
    const before = await run('ping');
    expect(before.status).not.toBe(0);
    expect(before.stderr).toContain('MCP server "notes" asks for OAuth authorization, and acx holds no login for it. Run `acx mcp login notes` once');

    const first = await login();
    expect(first.stderr).toBe('');
    expect(first.status).toBe(0);
    expect(first.stdout).toContain('Open this address in a browser to authorize acx for "notes":');
    expect(first.page).toContain('acx is authorized');
    expect(first.stdout).toContain(`Logged in to "notes" with scope "notes:read": 8 tools over http. The login is kept in ${path.join(home, 'mcp-auth', 'notes.json')} (mode 0600).`);
    expect(fs.statSync(path.join(home, 'mcp-auth', 'notes.json')).mode & 0o777).toBe(0o600);

    const called = await run('say:hello-over-oauth');
    expect(called.stderr).not.toMatch(/WARNING mcp server skipped/);
    expect(called.status).toBe(0);
    expect(called.stdout).toContain('The server said: echo: hello-over-oauth');

    // Wait (on the stored expiry, not a guessed sleep) until the token is within its refresh margin.
    const expiring = stored().tokens;
    const refreshesBefore = fixture.events.filter((event) => event.type === 'refresh').length;
    const margin = Math.min(60_000, (expiring.expires_in * 1000) / 2);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiring.expires_at - margin - Date.now())));
    const refreshed = await run('say:after-a-while');
    expect(refreshed.status).toBe(0);
    expect(refreshed.stdout).toContain('The server said: echo: after-a-while');
    expect(fixture.events.filter((event) => event.type === 'refresh').length).toBeGreaterThan(refreshesBefore);
    expect(refreshed.stderr).toContain('mcp oauth token refreshed server=notes');
    // Refreshed before it was used: the old token was never sent and refused.
    expect(fixture.events.filter((event) => event.type === 'refused' && event.authorization === `Bearer ${expiring.access_token}`)).toEqual([]);
    expect(stored().tokens.access_token).not.toBe(expiring.access_token);
    for (const output of [first, called, refreshed]) {
      for (const token of [expiring.access_token, expiring.refresh_token, stored().tokens.access_token, stored().tokens.refresh_token]) {
        expect(output.stdout + output.stderr).not.toContain(token);
      }
    }

    const held = stored().tokens;
    const out = await runAcx(['mcp', 'logout', 'notes'], { env: env('warn'), home });
    expect(out.stderr).toBe('');
    expect(out.stdout).toBe('Logged out of "notes": revoked its refresh token and access token; the stored login is deleted.\n');
    expect(fixture.events.filter((event) => event.type === 'revoke').map((event) => event.type === 'revoke' && [event.token, event.hint])).toEqual([
      [held.refresh_token, 'refresh_token'],
      [held.access_token, 'access_token'],
    ]);
    expect(fixture.isLive(held.access_token) || fixture.isLive(held.refresh_token)).toBe(false);
    expect(fs.existsSync(path.join(home, 'mcp-auth', 'notes.json'))).toBe(false);

    const after = await run('once more');
    expect(after.status).not.toBe(0);
    expect(after.stderr).toContain('Run `acx mcp login notes` once');
    const again = await runAcx(['mcp', 'logout', 'notes'], { env: env(), home });
    expect(again.stdout).toBe('acx holds no login for "notes"; nothing to do.\n');
  });

  it('login names the servers it knows when asked for one it does not, and refuses a stdio server', async () => {
    fs.writeFileSync(path.join(home, 'mcp', 'local.json'), JSON.stringify({ command: process.execPath, args: ['-e', ''], optional: true }));
    const unknown = await runAcx(['mcp', 'login', 'nope'], { env: env('warn'), home });
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toBe('acx: No MCP server named "nope" among the config home\'s drop-ins\n  → HTTP servers there: notes.\n');
    const local = await runAcx(['mcp', 'login', 'local'], { env: env('warn'), home });
    expect(local.status).toBe(2);
    expect(local.stderr).toContain(`acx: MCP server "local" runs as a local command (${path.join(home, 'mcp', 'local.json')}); there is nothing to log in to`);
    fs.rmSync(path.join(home, 'mcp', 'local.json'));
  });
});
