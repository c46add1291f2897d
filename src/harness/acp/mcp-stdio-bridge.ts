// A tiny stdio MCP server that relays every JSON-RPC message to acx's in-process host-tool
// server over Streamable HTTP (bearer token from the environment). ACP agents that accept only
// stdio MCP servers launch this; the tools still run in the acx host.
//   env: ACX_MCP_URL (http://127.0.0.1:PORT/mcp), ACX_MCP_TOKEN
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

const url = process.env.ACX_MCP_URL;
const token = process.env.ACX_MCP_TOKEN;
if (!url || !token) {
  process.stderr.write('acx mcp bridge: ACX_MCP_URL and ACX_MCP_TOKEN must be set\n');
  process.exit(2);
}

const upstream = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
const local = new StdioServerTransport();
const initializeIds = new Set<string | number>();

local.onmessage = (message: JSONRPCMessage) => {
  const m = message as { id?: string | number; method?: string };
  if (m.method === 'initialize' && m.id !== undefined) initializeIds.add(m.id);
  upstream.send(message).catch((error: unknown) => {
    if (m.id !== undefined && m.method !== undefined) {
      void local.send({ jsonrpc: '2.0', id: m.id, error: { code: -32603, message: `acx host unreachable: ${error instanceof Error ? error.message : String(error)}` } });
    }
  });
};
upstream.onmessage = (message: JSONRPCMessage) => {
  const m = message as { id?: string | number; result?: { protocolVersion?: string } };
  if (m.id !== undefined && initializeIds.has(m.id) && typeof m.result?.protocolVersion === 'string') {
    initializeIds.delete(m.id);
    upstream.setProtocolVersion(m.result.protocolVersion);
  }
  void local.send(message);
};
upstream.onerror = (error) => process.stderr.write(`acx mcp bridge: ${error.message}\n`);
const shutdown = () => {
  void upstream.close().finally(() => process.exit(0));
};
local.onclose = shutdown;
process.stdin.once('end', shutdown);

await upstream.start();
await local.start();
