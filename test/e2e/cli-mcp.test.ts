// `acx mcp [agent]` end to end, as an MCP client uses it: the MCP SDK's own Client driving a real
// `acx mcp` child process on the pinned Node, over stdio and over Streamable HTTP, with no model
// key in the environment and every state directory in a temp dir.
import { spawn } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { openMemoryStore } from '../../src/memory/store.ts';
import { startModelServer } from '../support/model-server.ts';
import { scaled } from '../support/time-scale.ts';

const ROOT = join(import.meta.dirname, '../..');
const ACX = ['--disable-warning=ExperimentalWarning', join(ROOT, 'bin/acx.js')];
const NOTES_KEEPER = join(ROOT, 'examples/notes-keeper');

/** A fresh machine: no model key or acx setting, its own HOME, state home and config home. */
function freshEnv(extra: Record<string, string> = {}): Record<string, string> {
  const home = mkdtempSync(join(tmpdir(), 'acx-mcp-e2e-'));
  return { PATH: process.env.PATH ?? '', HOME: home, ACX_HOME: join(home, 'state'), ACX_CONFIG_HOME: join(home, 'config'), ...extra };
}

function acx(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [...ACX, ...args], { env, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** What `acx resolved-config` says a run of the agent would have. */
async function resolvedConfig(args: string[], env: Record<string, string>): Promise<{ tools: string[]; memory_path: string; workspace: string; model: string | null }> {
  const resolved = await acx(['resolved-config', ...args], env);
  expect(resolved.code, resolved.stderr).toBe(0);
  return JSON.parse(resolved.stdout) as { tools: string[]; memory_path: string; workspace: string; model: string | null };
}

/** The MCP SDK's Client on `acx mcp ARGS` over stdio. */
async function stdioClient(args: string[], env: Record<string, string>): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [...ACX, 'mcp', ...args], env, cwd: ROOT, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (chunk) => (stderr += chunk));
  const client = new Client({ name: 'acx-e2e', version: '1.0.0' });
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

function textOf(result: Awaited<ReturnType<Client['callTool']>>): string {
  return (result.content as Array<{ type: string; text?: string }>).map((part) => part.text ?? '').join('\n');
}

describe.concurrent('acx mcp (e2e)', { timeout: scaled(120_000) }, () => {
  it('serves over stdio exactly the tools resolved-config lists, annotated, and a memory write lands in the agent memory DB', async () => {
    const env = freshEnv();
    const resolved = await resolvedConfig([NOTES_KEEPER], env);
    const { client } = await stdioClient([NOTES_KEEPER], env);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(resolved.tools);
      const byName = new Map(tools.map((tool) => [tool.name, tool]));
      expect(byName.get('memory_read')!.annotations).toEqual({ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
      expect(byName.get('memory_write')!.annotations).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false });
      expect(byName.get('memory_delete')!.annotations).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false });

      const written = await client.callTool({ name: 'memory_write', arguments: { key: 'release/freeze', value: 'The release freeze starts on 12 December.' } });
      expect(written.isError).toBeFalsy();
      expect(textOf(written)).toBe('Saved "release/freeze".');
      // The agent's seeded memory is there too, as a run would see it.
      expect(textOf(await client.callTool({ name: 'memory_read', arguments: { key: 'team/on-call' } }))).toContain('On-call rotates weekly');
    } finally {
      await client.close();
    }
    const store = openMemoryStore(resolved.memory_path);
    try {
      expect(store.get('release/freeze')?.value).toBe('The release freeze starts on 12 December.');
    } finally {
      store.close();
    }
  });

  it("does not re-serve the agent's MCP drop-ins, and says so at info level", async () => {
    const env = freshEnv({ ACX_LOG_LEVEL: 'info' });
    // The agent's own drop-in (acx mcp offers no --mcp: it would connect nothing).
    const agent = join(env.HOME!, 'notes-keeper');
    cpSync(NOTES_KEEPER, agent, { recursive: true });
    mkdirSync(join(agent, 'mcp'), { recursive: true });
    writeFileSync(join(agent, 'mcp/fixture.json'), JSON.stringify({ command: process.execPath, args: ['--disable-warning=ExperimentalWarning', join(ROOT, 'test/fixtures/mcp/stdio-server.ts')] }));
    const resolved = (await resolvedConfig([agent], env)) as { tools: string[]; mcp_servers?: string[] };
    expect(resolved.mcp_servers).toEqual(['fixture']);
    const { client, stderr } = await stdioClient([agent], env);
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(resolved.tools);
    } finally {
      await client.close();
    }
    expect(stderr()).toMatch(/INFO mcp drop-ins not served servers=fixture/);
  });

  it('serves a cartridge after its handshake: the tools resolved-config lists, its ROM memory loaded', async () => {
    const env = freshEnv();
    // Booting writes the compliance descriptor into the cartridge's SAVE zone: use a copy.
    const cartridge = join(env.HOME!, 'notes-keeper.acx');
    copyFileSync(join(ROOT, 'examples/cartridges/notes-keeper.acx'), cartridge);
    const trust = ['--registry', join(ROOT, 'examples/cartridges/trust-registry.json')];
    const resolved = await resolvedConfig([cartridge, ...trust], env);
    const { client } = await stdioClient([cartridge, ...trust], env);
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(resolved.tools);
      expect(resolved.tools).toEqual(expect.arrayContaining(['add_memory', 'search_memory']));
      expect(textOf(await client.callTool({ name: 'search_memory', arguments: { query: 'deploy' } }))).toMatch(/^Memories matching "deploy":\nrom\/team-deploy-policy: We deploy on Tuesdays/);
    } finally {
      await client.close();
    }
  });

  it('serves the default agent with no model configured: fs stays in the workspace, and calls the permission mode would ask about are refused', async () => {
    const env = freshEnv();
    // Neither command needs a model: resolved-config reports model null and the same tools.
    const resolved = await resolvedConfig([], env);
    expect(resolved.model).toBeNull();
    const { client } = await stdioClient([], env);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(resolved.tools);
      expect(resolved.tools).toEqual(expect.arrayContaining(['fs_read', 'fs_write', 'web_fetch', 'dispatch']));
      expect(tools.find((tool) => tool.name === 'web_fetch')!.annotations).toEqual({ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true });

      const wrote = await client.callTool({ name: 'fs_write', arguments: { path: 'notes/plan.md', content: 'ship on Thursday' } });
      expect(wrote.isError, textOf(wrote)).toBeFalsy();
      expect(readFileSync(join(resolved.workspace, 'notes/plan.md'), 'utf8')).toBe('ship on Thursday');

      const escape = await client.callTool({ name: 'fs_write', arguments: { path: '../outside.md', content: 'x' } });
      expect(escape.isError).toBe(true);
      expect(textOf(escape)).toMatch(/leave the workspace/);
      expect(existsSync(join(resolved.workspace, '../outside.md'))).toBe(false);
      const absolute = await client.callTool({ name: 'fs_read', arguments: { path: '/etc/passwd' } });
      expect(absolute.isError).toBe(true);
      expect(textOf(absolute)).not.toContain('root:');

      // allow-edits (the default) runs reads and edits; a fetch would need approval nobody can give.
      const fetched = await client.callTool({ name: 'web_fetch', arguments: { url: 'https://example.com/' } });
      expect(fetched.isError).toBe(true);
      expect(textOf(fetched)).toBe(
        'web_fetch is a "fetch" tool, which permission mode allow-edits runs only after approval, and acx mcp has nobody to ask.\n' +
          '  → Restart acx mcp with --permission-mode allow-all (or ACX_PERMISSION_MODE=allow-all) to leave that decision to the MCP client.',
      );
      const dispatched = await client.callTool({ name: 'dispatch', arguments: { task: 'count the notes' } });
      expect(dispatched.isError).toBe(true);
      expect(textOf(dispatched)).toMatch(/^dispatch is a "other" tool, which permission mode allow-edits runs only after approval/);
    } finally {
      await client.close();
    }
  });

  it('under --permission-mode allow-all, dispatch without a model fails at call time saying what to set', async () => {
    const env = freshEnv();
    const { client } = await stdioClient(['--permission-mode', 'allow-all'], env);
    try {
      const dispatched = await client.callTool({ name: 'dispatch', arguments: { task: 'count the notes' } });
      expect(dispatched.isError).toBe(true);
      expect(textOf(dispatched)).toBe(
        'dispatch runs a sub-agent, which needs a model, and acx mcp was started without one.\n' +
          '  → Restart acx mcp with --model provider:id (or ACX_MODEL, or "model" in agent.json); --replay FILE runs it offline.',
      );
    } finally {
      await client.close();
    }
  });

  it('with a model chosen, dispatch runs its sub-agent on the engine when called', async () => {
    const server = await startModelServer({ script: ['Counted: 3 notes.'] });
    const env = freshEnv({ OPENAI_API_KEY: 'sk-local-test', OPENAI_BASE_URL: server.openaiBaseURL });
    const { client } = await stdioClient(['--permission-mode', 'allow-all', '--model', 'openai:demo-model'], env);
    try {
      expect(server.requests).toHaveLength(0);
      const dispatched = await client.callTool({ name: 'dispatch', arguments: { task: 'count the notes' } });
      expect(dispatched.isError, textOf(dispatched)).toBeFalsy();
      expect(textOf(dispatched)).toBe('Sub-agent report (1 steps):\nCounted: 3 notes.');
      expect(server.requests).toHaveLength(1);
      expect(server.requests[0]!.view.model).toBe('demo-model');
      expect(server.requests[0]!.view.messages.some((m) => m.role === 'user' && m.text.includes('count the notes'))).toBe(true);
    } finally {
      await client.close();
      await server.close();
    }
  });

  it('--http serves 127.0.0.1 behind the printed bearer token: none or a wrong one is 403 (no OAuth challenge), a foreign page 403, the right one lists and calls', async () => {
    const token = 'fixed-token-for-the-e2e-test';
    const env = freshEnv({ ACX_MCP_TOKEN: token });
    const port = await freePort();
    const child = spawn(process.execPath, [...ACX, 'mcp', NOTES_KEEPER, '--http', '--port', String(port), '--allow-origin', 'https://notes.example'], { env, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let text = '';
        child.stdout.on('data', (chunk) => {
          text += chunk;
          if (text.includes('\n')) resolve(text.split('\n')[0]!);
        });
        void exited.then((code) => reject(new Error(`acx mcp --http exited ${code}: ${stderr}`)));
      });
      expect(JSON.parse(line)).toEqual({ url: `http://127.0.0.1:${port}/mcp`, token });
      const url = `http://127.0.0.1:${port}/mcp`;
      const initialize = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } });
      const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      for (const refused of [await fetch(url, { method: 'POST', headers, body: initialize }), await fetch(url, { method: 'POST', headers: { ...headers, authorization: 'Bearer not-the-token-at-all' }, body: initialize })]) {
        expect(refused.status).toBe(403);
        expect(refused.headers.get('www-authenticate')).toBeNull();
        expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/^Forbidden: this acx MCP server needs its bearer token/);
      }
      // A browser page elsewhere (DNS rebinding) is refused even with the token; one on this machine, or one --allow-origin names, is served.
      const withToken = { ...headers, authorization: `Bearer ${token}` };
      expect((await fetch(url, { method: 'POST', headers: { ...withToken, origin: 'http://rebound.example' }, body: initialize })).status).toBe(403);
      expect((await fetch(url, { method: 'POST', headers: { ...withToken, origin: 'https://notes.example' }, body: initialize })).status).toBe(200);
      expect((await fetch(url, { method: 'POST', headers: { ...withToken, origin: 'http://localhost:5173' }, body: initialize })).status).toBe(200);

      const client = new Client({ name: 'acx-e2e', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['memory_write', 'memory_read', 'memory_list', 'memory_search', 'memory_delete', 'load_skill']);
      expect(textOf(await client.callTool({ name: 'memory_read', arguments: { key: 'team/deploy-policy' } }))).toContain('We deploy on Tuesdays and Thursdays');
      await client.close();
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, stderr).toBe(0);
  });

  it('an agent that is not there is a clear error, no stack trace', async () => {
    const result = await acx(['mcp', join(ROOT, 'examples/no-such-agent')], freshEnv());
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^acx: .*no-such-agent/m);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}
