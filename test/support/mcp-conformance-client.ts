// The client under test for the MCP conformance suite's client scenarios: acx's own MCP client
// (src/mcp/client.ts), configured as a user's `--mcp name=URL` would configure it. The suite
// runs `node mcp-conformance-client.ts <server-url>` with MCP_CONFORMANCE_SCENARIO set; this
// connects (initialize, tools/list), calls the scenario's tool through the bridged acx Tool the
// engine would call, and closes. Exit 0 when acx's client reported success, 1 otherwise.
import { connectMcpServers } from '../../src/mcp/client.ts';
import { parseMcpSpec } from '../../src/mcp/config.ts';
import { createLogger } from '../../src/util/logger.ts';

/** What each scenario's server offers and this client calls (bridged names are `<server>__<tool>`). */
const CALLS: Record<string, { tool: string; input: Record<string, unknown> } | undefined> = {
  initialize: undefined,
  tools_call: { tool: 'add_numbers', input: { a: 2, b: 3 } },
  'sse-retry': { tool: 'test_reconnection', input: {} },
};

const url = process.argv[2];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
if (!url) {
  process.stderr.write('usage: mcp-conformance-client.ts <server-url> (MCP_CONFORMANCE_SCENARIO names the scenario)\n');
  process.exit(2);
}

const logger = createLogger({ level: 'info' });
const connection = await connectMcpServers([parseMcpSpec(`conformance=${url}`)], { logger, timeoutMs: 10_000 });
let ok = connection.servers[0]?.status === 'ok';
const call = CALLS[scenario];
if (ok && call) {
  const tool = connection.tools.find((t) => t.name === `conformance__${call.tool}`);
  if (!tool?.execute) {
    process.stderr.write(`no tool ${call.tool} (listed: ${connection.tools.map((t) => t.name).join(', ')})\n`);
    ok = false;
  } else {
    try {
      const output = await tool.execute(call.input, {
        toolCallId: 'conformance-call',
        sessionId: 'conformance',
        idempotencyKey: 'conformance-call',
        abortSignal: AbortSignal.timeout(10_000),
        logger,
      });
      process.stdout.write(`${JSON.stringify(output)}\n`);
    } catch (error) {
      process.stderr.write(`${call.tool} failed: ${(error as Error).message}\n`);
      ok = false;
    }
  }
}
await connection.close();
process.exit(ok ? 0 : 1);
