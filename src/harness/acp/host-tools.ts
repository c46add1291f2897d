import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as acp from '@agentclientprotocol/sdk';
import type { ApprovalRequest } from '../../engine/events.ts';
import { createHostToolServer } from '../../mcp/host-server.ts';
import { type HttpServing, serveHttp } from '../../mcp/serve.ts';
import { gateByPermissionMode, type PermissionMode } from '../../tools/permission.ts';
import type { Tool, ToolEffect, ToolOutput } from '../../tools/tool.ts';
import { AcxError, ConfigError, HarnessCapabilityUnsupportedError, errorMessage } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';
import type { ACPMcpServer, ACPSettings } from './settings.ts';
import type { GuardedCalls } from './guarded-calls.ts';
import { createToolCatalog, type ToolCatalog } from './tool-catalog.ts';

/**
 * acx's host tools for an ACP agent: an in-process MCP server served over Streamable HTTP on the
 * bridge port with a bearer token, offered to the agent as the `acx` MCP server (directly over
 * http, or through the stdio bridge script), plus the profile's own MCP servers passed through.
 */

export const HOST_MCP_SERVER_NAME = 'acx';
// The bridge beside this module: .ts in a checkout, .js in the built package.
const BRIDGE_SCRIPT = fileURLToPath(new URL(`./mcp-stdio-bridge${extname(fileURLToPath(import.meta.url))}`, import.meta.url));

export interface HostCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
}

/** A host tool call acx runs (its tool has `execute`), as the turn journals it. */
export interface HostRun extends HostCall {
  idempotencyKey: string;
  effect: ToolEffect;
}

export interface HostTools {
  /** The tools' catalog, absent when the session was opened without host tools. */
  readonly catalog: ToolCatalog | undefined;
  readonly serving: HttpServing | undefined;
  /** The names of the host tools offered now (the translator reports their calls under these). */
  readonly names: Set<string>;
  /** Replaces the tools (gated by the permission mode) and tells connected agents. */
  setTools(next: readonly Tool[]): void;
  close(): Promise<void>;
}

export interface HostToolsInput {
  settings: ACPSettings;
  tools: readonly Tool[];
  permissionMode: PermissionMode;
  port: number;
  sandboxId: string;
  log: Logger;
  /** Asks the current turn's approval handler; false when no turn can ask. */
  approve(request: Omit<ApprovalRequest, 'approvalId'>): Promise<boolean>;
  /** A host tool without `execute`: its result comes from the caller (continue()). */
  hold(call: HostCall, signal: AbortSignal | undefined): Promise<ToolOutput>;
  /** Runs a host tool that has `execute` (`execute(key)` runs it, under `key` as its idempotency key when given): journaled by the current turn. */
  run(call: HostRun, execute: (idempotencyKey?: string) => Promise<ToolOutput>): Promise<ToolOutput>;
  /** The session's hooks and tool guardrails on each call (guarded-calls.ts); absent when none is set. */
  guarded?: () => Pick<GuardedCalls, 'decideHostCall' | 'settleHostCall'> | undefined;
}

export async function serveHostTools(input: HostToolsInput): Promise<HostTools> {
  const { settings, log } = input;
  // Gated by the permission mode, and each run goes through the turn (its journal, its spans).
  const gate = (list: readonly Tool[]): Tool[] => gateByPermissionMode(list, input.permissionMode).map((tool) => throughTurn(tool, input.run));
  const tools = gate(input.tools);
  const names = new Set(tools.map((t) => t.name));
  if (tools.length === 0) {
    return {
      catalog: undefined,
      serving: undefined,
      names,
      setTools() {
        throw new HarnessCapabilityUnsupportedError(`This ${settings.harnessId} session was opened without host tools, so the agent has no acx MCP server to refresh.`, {
          hint: 'Open a new session with the tools instead.',
        });
      },
      close: async () => {},
    };
  }
  const host = createHostToolServer(tools, {
    name: HOST_MCP_SERVER_NAME,
    version: '1',
    logger: log,
    approve: (call) => input.approve({ toolCallId: call.toolCallId, toolName: call.tool.name, input: call.input }),
    // Held open while the turn pauses; the ACP session/prompt stays in flight meanwhile.
    onCall: (call) => input.hold({ toolCallId: call.toolCallId, toolName: call.tool.name, input: call.input }, call.signal),
    decide: async (call) => input.guarded?.()?.decideHostCall(call) ?? { run: true, input: call.input, approved: false },
    settle: async (call, outcome) => input.guarded?.()?.settleHostCall(call, outcome) ?? outcome,
  });
  let serving: HttpServing | undefined;
  try {
    const catalog = createToolCatalog(host);
    const token = settings.mintBridgeToken ? settings.mintBridgeToken(input.sandboxId) : undefined;
    if (token !== undefined && (typeof token !== 'string' || token.length < 16)) {
      // The bridge token is the only thing between the agent's sandbox and acx's host tools.
      throw new ConfigError(`${settings.harnessId}: mintBridgeToken must return a string of at least 16 characters; it returned ${typeof token === 'string' ? `${token.length} characters` : `a ${typeof token}`}.`, {
        hint: 'Return a random token, e.g. randomBytes(32).toString("base64url"), or leave mintBridgeToken out for a generated one.',
      });
    }
    // One client, the ACP agent's bridge, which does not initialize again after a 404: its session never expires.
    serving = await serveHttp(catalog.host, { port: input.port, ...(token !== undefined ? { token } : {}), logger: log, sessionIdleMs: 0 }).catch((error: unknown) => {
      throw listenError(error, input.port);
    });
    const s = serving;
    return {
      catalog,
      serving,
      names,
      setTools(next) {
        const gated = gate(next);
        catalog.setTools(gated);
        names.clear();
        for (const t of gated) names.add(t.name);
        log.info('acp host tools changed', { tools: gated.length, catalog: catalog.version });
      },
      async close() {
        await s.close().catch(() => {});
        await host.close();
      },
    };
  } catch (error) {
    await host.close().catch(() => {});
    throw error;
  }
}

function throughTurn(tool: Tool, run: HostToolsInput['run']): Tool {
  const execute = tool.execute;
  if (!execute) return tool;
  return {
    ...tool,
    execute: (input, context) =>
      run({ toolCallId: context.toolCallId, idempotencyKey: context.idempotencyKey, toolName: tool.name, input, effect: tool.effect }, async (key) =>
        execute(input, key === undefined ? context : { ...context, idempotencyKey: key }),
      ),
  };
}

/** The MCP servers of session/new: acx's host server, then the profile's, each checked against the agent's capabilities. */
export function agentMcpServers(settings: ACPSettings, serving: HttpServing | undefined, init: acp.InitializeResponse): acp.McpServer[] {
  const mcpServers: acp.McpServer[] = [];
  const caps = init.agentCapabilities?.mcpCapabilities;
  if (serving) {
    if (settings.hostToolMcpTransport === 'http') {
      if (!caps?.http) {
        throw new HarnessCapabilityUnsupportedError(`${settings.harnessId} does not advertise mcpCapabilities.http, so hostToolMcpTransport 'http' cannot be used.`, { hint: "Use hostToolMcpTransport: 'stdio'." });
      }
      mcpServers.push({ type: 'http', name: HOST_MCP_SERVER_NAME, url: serving.url, headers: [{ name: 'Authorization', value: `Bearer ${serving.token}` }] });
    } else {
      mcpServers.push({
        name: HOST_MCP_SERVER_NAME,
        command: process.execPath,
        args: [BRIDGE_SCRIPT],
        env: [
          { name: 'ACX_MCP_URL', value: serving.url },
          { name: 'ACX_MCP_TOKEN', value: serving.token },
        ],
      });
    }
  }
  for (const [name, server] of Object.entries(settings.mcpServers ?? {})) {
    if ((server.type === 'http' && !caps?.http) || (server.type === 'sse' && !caps?.sse)) {
      throw new HarnessCapabilityUnsupportedError(`${settings.harnessId} does not accept ${server.type} MCP servers (mcpServers.${name}).`);
    }
    mcpServers.push(toMcpServer(name, server));
  }
  return mcpServers;
}

function toMcpServer(name: string, server: ACPMcpServer): acp.McpServer {
  if (!('command' in server)) {
    return { type: server.type, name, url: server.url, headers: Object.entries(server.headers ?? {}).map(([n, value]) => ({ name: n, value })) };
  }
  return { name, command: server.command, args: [...(server.args ?? [])], env: Object.entries(server.env ?? {}).map(([n, value]) => ({ name: n, value })) };
}

function listenError(error: unknown, port: number): AcxError {
  const code = (error as NodeJS.ErrnoException)?.code;
  if (code === 'EADDRINUSE' || code === 'EACCES') {
    return new AcxError('acp-port-unavailable', `The bridge port ${port} on 127.0.0.1 is not available (${code}).`, {
      hint: 'Free the port, or configure another exposed port (createACP port, or the sandbox ports).',
      cause: error,
    });
  }
  return new AcxError('acp-port-unavailable', `Could not listen on 127.0.0.1:${port}: ${errorMessage(error)}`, { cause: error });
}
