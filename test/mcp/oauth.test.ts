import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { connectMcpServers } from '../../src/mcp/client.ts';
import { parseMcpServerEntry, type McpServerConfig } from '../../src/mcp/config.ts';
import { loginMcpServer, logoutMcpServer } from '../../src/mcp/oauth/login.ts';
import { McpCredentialStore } from '../../src/mcp/oauth/store.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { startOAuthFixture, type OAuthFixture } from '../fixtures/mcp/oauth-server.ts';
import { byName, context } from './helpers.ts';

/**
 * acx's OAuth client against an OAuth-protected MCP server built from the SDK's own server-side
 * auth, all on loopback. The browser is played by fetching the authorization URL and following
 * its redirects to acx's loopback listener.
 */
let fixture: OAuthFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

function tempStore(): McpCredentialStore {
  return McpCredentialStore.inConfigHome(fs.mkdtempSync(path.join(os.tmpdir(), 'acx-oauth-')));
}

function server(url: string, extra: Record<string, unknown> = {}): McpServerConfig {
  return parseMcpServerEntry('notes', { url, ...extra }, 'test:notes', process.cwd());
}

/** The user's browser: opens the authorization URL and follows the redirects back to acx. */
async function browse(url: URL): Promise<void> {
  const page = await fetch(url);
  expect(page.status).toBe(200);
  expect(await page.text()).toContain('acx is authorized');
}

describe('an MCP server that asks for OAuth', () => {
  it('is skipped by a run with no login, naming the acx mcp login to run, and nothing is registered', async () => {
    fixture = await startOAuthFixture();
    const logger = createMemoryLogger('debug');
    const connection = await connectMcpServers([server(fixture.url)], { logger, timeoutMs: 10_000, credentials: tempStore() });
    expect(connection.servers[0]).toMatchObject({
      status: 'skipped',
      reason: 'MCP server "notes" asks for OAuth authorization, and acx holds no login for it. Run `acx mcp login notes` once: it opens the server\'s authorization page and keeps the tokens in the config home.',
    });
    expect(fixture.events.filter((event) => event.type === 'register' || event.type === 'authorize')).toEqual([]);
    await connection.close();
  });

  it('after a login, connects with the stored token and calls a tool; the store is one 0600 file', async () => {
    fixture = await startOAuthFixture();
    const credentials = tempStore();
    const logger = createMemoryLogger('debug');
    const shown: URL[] = [];
    const login = await loginMcpServer({ config: server(fixture.url), credentials, logger, open: async (url) => (shown.push(url), browse(url)) });
    expect(login).toMatchObject({ server: 'notes', transport: 'http', authorizations: 1, scope: 'notes:read' });
    expect(shown).toHaveLength(1);
    // PKCE and the resource indicator, as the SDK sends them.
    expect(shown[0]!.searchParams.get('code_challenge_method')).toBe('S256');
    expect(shown[0]!.searchParams.get('resource')).toBe(fixture.url);
    expect(shown[0]!.searchParams.get('redirect_uri')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);

    const file = credentials.fileOf({ name: 'notes', url: fixture.url });
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    const granted = fixture.events.find((event) => event.type === 'code');
    expect(fs.readFileSync(file, 'utf8')).toContain(granted!.type === 'code' ? granted!.accessToken : '?');

    const connection = await connectMcpServers([server(fixture.url)], { logger, timeoutMs: 10_000, credentials });
    try {
      expect(connection.servers[0]).toMatchObject({ status: 'ok', transport: 'http' });
      expect(await byName(connection.tools, 'notes__echo').execute!({ text: 'hi' }, context())).toBe('echo: hi');
    } finally {
      await connection.close();
    }
    // Tokens never reach a log line.
    expect(logger.lines.join('\n')).not.toMatch(/at-[0-9a-f-]{36}|rt-[0-9a-f-]{36}/);
  });

  it('a call refused for want of scope says to log in again; that login asks for the scope, and the call then works', async () => {
    fixture = await startOAuthFixture({ callScopes: ['notes:write'] });
    const credentials = tempStore();
    const logger = createMemoryLogger('debug');
    const shown: URL[] = [];
    const open = async (url: URL) => (shown.push(url), browse(url));
    await loginMcpServer({ config: server(fixture.url), credentials, logger, open });
    expect(shown[0]!.searchParams.get('scope')).toBe('notes:read');

    const first = await connectMcpServers([server(fixture.url)], { logger, timeoutMs: 10_000, credentials });
    try {
      await expect(byName(first.tools, 'notes__echo').execute!({ text: 'hi' }, context())).rejects.toThrow(
        'notes__echo failed: MCP server "notes" needs more access than its login granted (scope "notes:write"). Run `acx mcp login notes` once',
      );
    } finally {
      await first.close();
    }
    // Nothing was authorized behind the user's back: one authorization so far.
    expect(fixture.events.filter((event) => event.type === 'authorize')).toHaveLength(1);

    const again = await loginMcpServer({ config: server(fixture.url), credentials, logger, open });
    expect(shown[1]!.searchParams.get('scope')).toBe('notes:read notes:write');
    expect(again.scope).toBe('notes:read notes:write');
    const second = await connectMcpServers([server(fixture.url)], { logger, timeoutMs: 10_000, credentials });
    try {
      expect(await byName(second.tools, 'notes__echo').execute!({ text: 'now' }, context())).toBe('echo: now');
    } finally {
      await second.close();
    }
  });
});
