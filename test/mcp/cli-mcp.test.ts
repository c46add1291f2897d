import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Command } from 'commander';
import { register, startMcpCommand } from '../../src/frontends/cli/commands/mcp.ts';
import { createMemoryLogger, silentLogger } from '../../src/util/logger.ts';
import { sampleHostTools } from '../fixtures/mcp/host-tools.ts';
import { scaled } from '../support/time-scale.ts';

function capture(): PassThrough & { text(): string } {
  const out = new PassThrough();
  let text = '';
  out.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return Object.assign(out, { text: () => text });
}

describe('acx mcp (core)', () => {
  it('--http prints the url and token, and a client reaches the host tools with them', async () => {
    const stdout = capture();
    let released = 0;
    const running = await startMcpCommand({ http: true }, { openTools: () => ({ tools: sampleHostTools(), close: async () => void released++ }), stdout, logger: silentLogger, env: {} });
    try {
      const printed = JSON.parse(stdout.text().trim()) as { url: string; token: string };
      expect(printed).toEqual({ url: running.url, token: running.token });
      const client = new Client({ name: 't', version: '1' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(printed.url), { requestInit: { headers: { Authorization: `Bearer ${printed.token}` } } }),
      );
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('greet');
      await client.close();
    } finally {
      await running.close();
    }
    await running.done;
    expect(released, 'what the tools hold (memory, sub-agents) is released when serving ends').toBe(1);
  });

  it('--token-file writes the token (0600) instead of printing it; ACX_MCP_TOKEN fixes it', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'acx-mcp-cli-'));
    const tokenFile = path.join(dir, 'token');
    const stdout = capture();
    const token = 'a-fixed-token-of-some-length';
    const running = await startMcpCommand({ http: true, port: '0', tokenFile }, { openTools: () => ({ tools: sampleHostTools() }), stdout, logger: silentLogger, env: { ACX_MCP_TOKEN: token } });
    try {
      expect(stdout.text()).not.toContain(token);
      expect(fs.readFileSync(tokenFile, 'utf8').trim()).toBe(token);
      expect(fs.statSync(tokenFile).mode & 0o777).toBe(0o600);
    } finally {
      await running.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('--max-sessions, --session-idle and --allow-origin (or their ACX_MCP_* variables) reach the server', async () => {
    const logger = createMemoryLogger('debug');
    const env = { ACX_MCP_MAX_SESSIONS: '1', ACX_MCP_ALLOW_ORIGINS: 'https://a.example, https://b.example' };
    const running = await startMcpCommand({ http: true, sessionIdle: '0.2' }, { openTools: () => ({ tools: sampleHostTools() }), stdout: capture(), logger, env });
    try {
      const initialize = (origin?: string) =>
        fetch(running.url!, {
          method: 'POST',
          headers: { authorization: `Bearer ${running.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(origin ? { origin } : {}) },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
        }).then(async (response) => ({ status: response.status, session: response.headers.get('mcp-session-id'), text: await response.text() }));
      expect((await initialize('https://b.example')).status).toBe(200);
      expect((await initialize('https://c.example')).status).toBe(403);
      const first = await initialize('https://a.example');
      // One session at most: the idle one before it was closed to make room.
      expect(logger.lines.filter((line) => line.includes('reason="the session cap (1) was reached'))).toHaveLength(1);
      // And it expires 0.2 s after its last request (waited for by the log line, not a sleep).
      while (!logger.lines.some((line) => line.includes(`session=${first.session} reason="idle for 0.2 s"`))) await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      await running.close();
    }
  });

  it('serves stdio by default', async () => {
    const stdin = new PassThrough();
    const stdout = capture();
    let released = 0;
    const running = await startMcpCommand({}, { openTools: () => ({ tools: sampleHostTools(), close: async () => void released++ }), stdin, stdout, logger: silentLogger });
    stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } })}\n`);
    stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'greet', arguments: { who: 'stdio' } } })}\n`);
    for (let i = 0; i < scaled(200) && !stdout.text().includes('"id":2'); i++) await new Promise((r) => setTimeout(r, 10));
    const replies = stdout.text().trim().split('\n').map((line) => JSON.parse(line));
    expect(replies[0].result.protocolVersion).toBe('2025-06-18');
    expect(replies[1].result.content).toEqual([{ type: 'text', text: 'hello, stdio' }]);
    stdin.end();
    await running.done;
    expect(released).toBe(1);
  });

  it('rejects bad flags with usage errors', async () => {
    const deps = { openTools: () => ({ tools: sampleHostTools() }), logger: silentLogger, env: {} };
    await expect(startMcpCommand({ http: true, port: '70000' }, deps)).rejects.toMatchObject({ code: 'usage' });
    await expect(startMcpCommand({ port: '8080' }, deps)).rejects.toMatchObject({ code: 'usage', message: expect.stringMatching(/only apply with --http/) });
    await expect(startMcpCommand({ maxSessions: '4', allowOrigin: ['https://a.example'] }, deps)).rejects.toMatchObject({ code: 'usage', message: '--max-sessions, --allow-origin only apply with --http' });
    await expect(startMcpCommand({ http: true, maxSessions: '0' }, deps)).rejects.toMatchObject({ code: 'usage', message: '--max-sessions must be a whole number of at least 1, not "0".' });
    await expect(startMcpCommand({ http: true }, { ...deps, env: { ACX_MCP_SESSION_IDLE: 'soon' } })).rejects.toMatchObject({ code: 'usage', message: 'ACX_MCP_SESSION_IDLE must be zero or more seconds, not "soon".' });
    await expect(startMcpCommand({ http: true, allowOrigin: ['https://a.example/app'] }, deps)).rejects.toMatchObject({ code: 'usage', message: '"https://a.example/app" is not a web origin' });
    await expect(startMcpCommand({ http: true }, { ...deps, env: { ACX_MCP_TOKEN: 'short' } })).rejects.toThrow(/at least 16/);
  });

  it('registers `mcp` with its flags on the acx program', () => {
    const program = new Command('acx');
    register(program);
    const mcp = program.commands.find((c) => c.name() === 'mcp')!;
    const flags = mcp.options.map((o) => o.long);
    expect(flags).toEqual(expect.arrayContaining(['--http', '--port', '--token-file', '--permission-mode', '--home', '--config-home', '--workspace', '--model']));
    expect(mcp.registeredArguments.map((a) => a.name())).toEqual(['agent']);
  });
});
