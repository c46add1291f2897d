// The client under test for the MCP conformance suite's client scenarios: acx's own MCP client
// (src/mcp/client.ts), configured as a user's drop-in would configure it. The suite runs
// `node mcp-conformance-client.ts <server-url>` with MCP_CONFORMANCE_SCENARIO set (and, for some,
// MCP_CONFORMANCE_CONTEXT: the credentials the scenario's authorization server knows). This
// plays the user: for a server that asks for OAuth it runs `acx mcp login` (loginMcpServer; the
// browser is a fetch that follows the authorization server's redirect to acx's loopback
// listener), then connects as a run does (initialize, tools/list) and calls the scenario's tool
// through the bridged acx Tool the engine would call; when that call says to log in again (a
// step-up), it logs in again and calls once more, as the message tells a user to. Exit 0 when
// every step succeeded, 1 otherwise.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ElicitationResult } from '../../src/core/elicitation.ts';
import { connectMcpServers, type McpConnection } from '../../src/mcp/client.ts';
import { parseMcpServerEntry } from '../../src/mcp/config.ts';
import { loginMcpServer } from '../../src/mcp/oauth/login.ts';
import { McpCredentialStore } from '../../src/mcp/oauth/store.ts';
import { createLogger } from '../../src/util/logger.ts';

const url = process.argv[2];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
if (!url) {
  process.stderr.write('usage: mcp-conformance-client.ts <server-url> (MCP_CONFORMANCE_SCENARIO names the scenario)\n');
  process.exit(2);
}
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}') as Record<string, string | undefined>;

/** What each scenario's server offers and this client calls (bridged names are `<server>__<tool>`). */
function callFor(name: string): { tool: string; input: Record<string, unknown> } | undefined {
  if (name.startsWith('auth/')) return { tool: 'test-tool', input: {} };
  return {
    tools_call: { tool: 'add_numbers', input: { a: 2, b: 3 } },
    'sse-retry': { tool: 'test_reconnection', input: {} },
    'elicitation-sep1034-client-defaults': { tool: 'test_client_elicitation_defaults', input: {} },
  }[name];
}

/** The drop-in a user would write for the scenario's server: the URL, and the credentials the scenario hands out. */
function dropIn(): Record<string, unknown> {
  if (context.idp_id_token) {
    const idp = { tokenEndpoint: context.idp_token_endpoint, clientId: context.idp_client_id, idToken: context.idp_id_token };
    return { url, oauth: { grant: 'cross-app-access', clientId: context.client_id, clientSecret: context.client_secret, idp } };
  }
  if (context.private_key_pem) {
    return { url, oauth: { grant: 'client_credentials', clientId: context.client_id, privateKey: context.private_key_pem, algorithm: context.signing_algorithm ?? 'ES256' } };
  }
  if (scenario === 'auth/client-credentials-basic') return { url, oauth: { grant: 'client_credentials', clientId: context.client_id, clientSecret: context.client_secret } };
  if (context.client_id) return { url, oauth: { clientId: context.client_id, ...(context.client_secret ? { clientSecret: context.client_secret } : {}) } };
  // The client ID metadata document this scenario's authorization server expects acx to publish.
  if (scenario === 'auth/basic-cimd') return { url, oauth: { clientMetadataUrl: 'https://conformance-test.local/client-metadata.json' } };
  return { url };
}

const logger = createLogger({ level: 'info' });
const config = parseMcpServerEntry('conformance', dropIn(), 'conformance drop-in', process.cwd());
const credentials = McpCredentialStore.inConfigHome(mkdtempSync(join(tmpdir(), 'acx-conformance-login-')));
const usesLogin = scenario.startsWith('auth/') && !(config.transport !== 'stdio' && config.oauth && config.oauth.grant !== 'authorization_code');

/** `acx mcp login`, with the browser played by fetching the authorization URL (the suite's server approves at once). */
async function login(): Promise<boolean> {
  try {
    const result = await loginMcpServer({ config, credentials, logger, waitMs: 20_000, open: async (authorization) => void (await fetch(authorization)).body?.cancel() });
    process.stderr.write(`login: ${JSON.stringify(result)}\n`);
    return true;
  } catch (error) {
    process.stderr.write(`login failed: ${(error as Error).message}\n`);
    return false;
  }
}

/** The user's answer to a server's question: accept, leaving every field to its default. */
const acceptDefaults = async (): Promise<ElicitationResult> => ({ action: 'accept', content: {} });

async function connectAndCall(): Promise<{ ok: boolean; again: boolean }> {
  const connection: McpConnection = await connectMcpServers([config], { logger, timeoutMs: 10_000, credentials });
  try {
    const status = connection.servers[0]!;
    if (status.status !== 'ok') {
      process.stderr.write(`not connected: ${status.reason}\n`);
      return { ok: false, again: false };
    }
    const call = callFor(scenario);
    if (!call) return { ok: true, again: false };
    const tool = connection.tools.find((t) => t.name === `conformance__${call.tool}`);
    if (!tool?.execute) {
      process.stderr.write(`no tool ${call.tool} (listed: ${connection.tools.map((t) => t.name).join(', ')})\n`);
      return { ok: false, again: false };
    }
    try {
      const output = await tool.execute(call.input, {
        toolCallId: 'conformance-call',
        sessionId: 'conformance',
        idempotencyKey: 'conformance-call',
        abortSignal: AbortSignal.timeout(10_000),
        logger,
        elicit: acceptDefaults,
      });
      process.stdout.write(`${JSON.stringify(output)}\n`);
      return { ok: true, again: false };
    } catch (error) {
      const message = (error as Error).message;
      process.stderr.write(`${call.tool} failed: ${message}\n`);
      return { ok: false, again: /acx mcp login/.test(message) };
    }
  } finally {
    await connection.close();
  }
}

let ok = !usesLogin || (await login());
if (ok) {
  let outcome = await connectAndCall();
  // A step-up: the call said to log in again for more access. One more login, one more call.
  if (!outcome.ok && outcome.again && usesLogin && (await login())) outcome = await connectAndCall();
  ok = outcome.ok;
}
process.exit(ok ? 0 : 1);
