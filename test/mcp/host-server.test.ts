import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { connectMcpServers } from '../../src/mcp/client.ts';
import { parseMcpServerEntry } from '../../src/mcp/config.ts';
import { annotationsFor, createHostToolServer, type HostToolCall } from '../../src/mcp/host-server.ts';
import { AcxError } from '../../src/core/errors.ts';
import { serveHttp, TOKEN_REQUIRED, type HttpServing } from '../../src/mcp/serve.ts';
import type { ToolOutput } from '../../src/tools/tool.ts';
import { sampleHostTools, TREE_SCHEMA } from '../fixtures/mcp/host-tools.ts';
import { byName, context, fixtureCommand } from './helpers.ts';
import { scaled } from '../support/time-scale.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function startHost(options: Partial<Parameters<typeof createHostToolServer>[1]> = {}) {
  const host = createHostToolServer(sampleHostTools(), { name: 'acx-host', version: '0.0.1', ...options });
  const serving = await serveHttp(host, { port: 0 });
  cleanups.push(() => serving.close());
  return { host, serving };
}

async function clientFor(serving: HttpServing, token = serving.token): Promise<Client> {
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(serving.url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  cleanups.push(() => client.close());
  return client;
}

describe('host tool server over Streamable HTTP', () => {
  it('listens on 127.0.0.1 with a random token', async () => {
    const { serving } = await startHost();
    expect(serving.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(serving.token.length).toBeGreaterThanOrEqual(32);
  });

  it('refuses a missing or wrong token with 403, saying which token, with no OAuth challenge', async () => {
    const { serving } = await startHost();
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
    const post = (headers: Record<string, string>) =>
      fetch(serving.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify(init),
      });
    for (const headers of [{}, { Authorization: `Bearer ${serving.token}x` }, { Authorization: 'Bearer short' }] as Record<string, string>[]) {
      const refused = await post(headers);
      expect(refused.status).toBe(403);
      expect(refused.headers.get('www-authenticate')).toBeNull();
      expect(await refused.json()).toEqual({ jsonrpc: '2.0', error: { code: -32000, message: TOKEN_REQUIRED }, id: null });
    }
    expect((await post({ Authorization: `Bearer ${serving.token}` })).status).toBe(200);
    await expect(clientFor(serving, 'not-the-token-at-all')).rejects.toThrow(TOKEN_REQUIRED);
  });

  it('lists tools with their JSON Schemas preserved exactly, recursive $defs/$ref included', async () => {
    const { serving } = await startHost();
    const client = await clientFor(serving);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['count_tree', 'greet', 'call_key', 'explode', 'picture', 'ask_user', 'delete_all']);
    expect(tools[0]!.inputSchema).toEqual(TREE_SCHEMA);
    expect(tools[0]!.annotations).toMatchObject({ readOnlyHint: true });
    expect(tools[1]!.inputSchema).toMatchObject({ type: 'object', properties: { who: { type: 'string' } }, required: ['who'] });
  });

  it('runs calls in the host with validation; errors come back as isError results', async () => {
    const { serving } = await startHost();
    const client = await clientFor(serving);
    const tree = { name: 'root', children: [{ name: 'a', children: [{ name: 'b' }] }, { name: 'c' }] };
    const counted = await client.callTool({ name: 'count_tree', arguments: { tree } });
    // Text stays in content even when structuredContent is returned.
    expect(counted).toMatchObject({ content: [{ type: 'text', text: '{"nodes":4}' }], structuredContent: { nodes: 4 } });
    expect(counted.isError).toBeFalsy();

    const invalid = await client.callTool({ name: 'count_tree', arguments: { tree: { name: 'root', children: [{ name: '' }] } } });
    expect(invalid.isError).toBe(true);
    expect(JSON.stringify(invalid.content)).toMatch(/children\/0\/name/);

    expect(await client.callTool({ name: 'greet', arguments: { who: 'Ada' } })).toMatchObject({ content: [{ type: 'text', text: 'hello, Ada' }] });
    expect(await client.callTool({ name: 'explode', arguments: {} })).toMatchObject({ isError: true, content: [{ type: 'text', text: 'kaboom' }] });
    expect(await client.callTool({ name: 'picture', arguments: {} })).toMatchObject({
      content: [{ type: 'text', text: 'a pixel' }, { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' }],
    });
    // One "MCP error <code>: " prefix (the client's), and the tools there are.
    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(
      /^MCP error -32602: There is no tool "no_such_tool" here\. The tools: count_tree, greet, call_key, explode, picture, ask_user, delete_all\.$/,
    );
  });

  it('defers a tool without execute to the host, which resolves it later', async () => {
    const calls: Array<{ call: HostToolCall; resolve: (output: ToolOutput) => void }> = [];
    let announce!: () => void;
    const called = new Promise<void>((resolve) => (announce = resolve));
    const { serving } = await startHost({
      onCall: (call) =>
        new Promise<ToolOutput>((resolve) => {
          calls.push({ call, resolve });
          announce();
        }),
    });
    const client = await clientFor(serving);
    const result = client.callTool({ name: 'ask_user', arguments: { question: 'proceed?' } });
    await called;
    expect(calls[0]!.call.tool.name).toBe('ask_user');
    expect(calls[0]!.call.input).toEqual({ question: 'proceed?' });
    calls[0]!.resolve('yes, go ahead');
    expect(await result).toMatchObject({ content: [{ type: 'text', text: 'yes, go ahead' }] });
  });

  it('refuses a needsApproval tool unless the host approves it', async () => {
    const refused = await clientFor((await startHost()).serving);
    expect(await refused.callTool({ name: 'delete_all', arguments: {} })).toMatchObject({ isError: true, content: [{ text: expect.stringMatching(/did not approve/) }] });
    const approvals: string[] = [];
    const allowed = await clientFor((await startHost({ approve: async (call) => (approvals.push(call.tool.name), true) })).serving);
    expect(await allowed.callTool({ name: 'delete_all', arguments: {} })).toMatchObject({ content: [{ text: 'deleted' }] });
    expect(approvals).toEqual(['delete_all']);
  });

  it('a host that refuses by throwing sends its reason and hint as the tool error', async () => {
    const refusing = async () => {
      throw new AcxError('mcp-needs-approval', 'delete_all needs approval here.', { hint: 'Ask someone who can give it.' });
    };
    const client = await clientFor((await startHost({ approve: refusing })).serving);
    expect(await client.callTool({ name: 'delete_all', arguments: {} })).toEqual({
      isError: true,
      content: [{ type: 'text', text: 'delete_all needs approval here.\n  → Ask someone who can give it.' }],
    });
  });

  it('sends notifications/tools/list_changed to connected clients when the tool set changes', async () => {
    const { host, serving } = await startHost();
    const client = await clientFor(serving);
    let changed = false;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changed = true;
    });
    // The client opens its standalone SSE stream (where notifications travel) just after
    // initialize; until it is open a notification has nowhere to go, so change until one lands.
    for (let attempt = 0; attempt < 50 && !changed; attempt++) {
      host.setTools(sampleHostTools().filter((t) => t.name === 'greet'));
      await waitFor(() => changed, 20);
    }
    expect(changed).toBe(true);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['greet']);
  });

  it('refuses tools it cannot serve', () => {
    const host = createHostToolServer([], { name: 'h', version: '1' });
    const [greet] = sampleHostTools().filter((t) => t.name === 'greet');
    expect(() => host.setTools([{ ...greet!, name: 'bad name' }])).toThrow(/cannot be served over MCP/);
    expect(() => host.setTools([greet!, greet!])).toThrow(/listed twice/);
    expect(() => host.setTools([{ ...greet!, inputSchema: { type: 'string' } }])).toThrow(/"type": "object"/);
  });
});

describe('host tool server over stdio, reached by acx’s own drop-in client', () => {
  it('serves the host tools to a child-process client round trip', async () => {
    const connection = await connectMcpServers([parseMcpServerEntry('acx', fixtureCommand('host-stdio.ts'), 'test', process.cwd())]);
    cleanups.push(() => connection.close());
    expect(connection.servers[0]).toMatchObject({ status: 'ok', protocolVersion: '2025-11-25', toolCount: 7 });
    expect(connection.tools.map((t) => t.name)).toContain('acx__count_tree');
    expect(byName(connection.tools, 'acx__count_tree').inputSchema).toEqual(TREE_SCHEMA);
    const tree = { name: 'r', children: [{ name: 'x' }] };
    expect(await byName(connection.tools, 'acx__count_tree').execute!({ tree }, context())).toEqual({
      content: [{ type: 'text', text: '{"nodes":2}' }],
      structuredContent: { nodes: 2 },
    });
  });

  it("carries the caller's idempotency key to the tool on the other side", async () => {
    const connection = await connectMcpServers([parseMcpServerEntry('acx', fixtureCommand('host-stdio.ts'), 'test', process.cwd())]);
    cleanups.push(() => connection.close());
    const callKey = byName(connection.tools, 'acx__call_key');
    expect(await callKey.execute!({}, context({ idempotencyKey: 'turn-7/step-2/call-0' }))).toBe('turn-7/step-2/call-0');
  });
});

async function waitFor(check: () => boolean, rounds = 200): Promise<void> {
  for (let i = 0; i < scaled(rounds) && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe('MCP annotations from kind and effect', () => {
  it('reads are read-only; anything else may overwrite (destructive); only unsafe effects are not idempotent; fetch is open-world', () => {
    const table = (['read', 'edit', 'execute', 'fetch', 'other'] as const).flatMap((kind) =>
      (['read-only', 'idempotent', 'unsafe'] as const).map((effect) => {
        const a = annotationsFor({ kind, effect });
        return `${kind}/${effect}: ${a.readOnlyHint ? 'R' : '-'}${a.destructiveHint ? 'D' : '-'}${a.idempotentHint ? 'I' : '-'}${a.openWorldHint ? 'O' : '-'}`;
      }),
    );
    expect(table).toEqual([
      'read/read-only: R-I-',
      'read/idempotent: R-I-',
      'read/unsafe: -D--',
      'edit/read-only: R-I-',
      'edit/idempotent: -DI-',
      'edit/unsafe: -D--',
      'execute/read-only: R-I-',
      'execute/idempotent: -DI-',
      'execute/unsafe: -D--',
      'fetch/read-only: R-IO',
      'fetch/idempotent: -DIO',
      'fetch/unsafe: -D-O',
      'other/read-only: R-I-',
      'other/idempotent: -DI-',
      'other/unsafe: -D--',
    ]);
  });
});
