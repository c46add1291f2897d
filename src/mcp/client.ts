import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Tool } from '../tools/tool.ts';
import { ACX_VERSION } from '../util/version.ts';
import { errorMessage } from '../core/errors.ts';
import { silentLogger, type Logger } from '../util/logger.ts';
import { scrubSecrets } from '../util/scrub.ts';
import { bridgeMcpTool, type McpToolDescriptor } from './bridge.ts';
import { expandEnvReferences, type McpOrigin, type McpServerConfig } from './config.ts';
import { bridgedToolName } from './names.ts';

/**
 * Connects the MCP drop-in servers and bridges their tools. A server that cannot be spawned,
 * initialized or listed is skipped with its reason and a WARNING line: the caller always gets
 * a result, never an exception. Whether the turn may go ahead without a skipped server is the
 * caller's decision (a required one stops it: requiredServersDown in ./required.ts).
 */
export const DEFAULT_MCP_TIMEOUT_MS = 20_000;

export interface McpServerStatus {
  name: string;
  transport: 'stdio' | 'http';
  status: 'ok' | 'skipped';
  reason?: string;
  /** Whether a turn may not start without it (McpServerConfig.required). */
  required: boolean;
  /** Where its config came from (a file path, `--mcp ...`) and what kind of place that is, for messages. */
  source: string;
  origin: McpOrigin;
  /** The protocol revision the server agreed to during initialize (e.g. "2025-06-18"). */
  protocolVersion?: string;
  serverInfo?: { name: string; version: string };
  toolCount: number;
  /** Bridged names of this server's tools. */
  toolNames: string[];
}

export interface McpConnection {
  tools: Tool[];
  servers: McpServerStatus[];
  close(): Promise<void>;
}

export interface ConnectMcpOptions {
  /** Per-request timeout (initialize, tools/list, each tools/call). Default: `ACX_MCP_TIMEOUT` seconds, else 20 s. */
  timeoutMs?: number;
  /** Timeout for each start-up request (initialize, tools/list). Default: `ACX_MCP_START_TIMEOUT` seconds, else `timeoutMs`. */
  startTimeoutMs?: number;
  /** Timeout for each tools/call only; defaults to `timeoutMs`. */
  callTimeoutMs?: number;
  logger?: Logger;
  /** Where `${VAR}` references are read from. Default: process.env. */
  env?: NodeJS.ProcessEnv;
}


/** `ACX_MCP_TIMEOUT` is in seconds (as an operator types it); invalid values fall back to the default. */
export function resolveMcpTimeoutMs(explicit: number | undefined, env: NodeJS.ProcessEnv = process.env): number {
  return millisecondsSetting(explicit, env, 'ACX_MCP_TIMEOUT', DEFAULT_MCP_TIMEOUT_MS);
}

/** `ACX_MCP_START_TIMEOUT` (seconds) bounds a server's start-up alone; unset or invalid, the request timeout does. */
export function resolveMcpStartTimeoutMs(explicit: number | undefined, requestTimeoutMs: number, env: NodeJS.ProcessEnv = process.env): number {
  return millisecondsSetting(explicit, env, 'ACX_MCP_START_TIMEOUT', requestTimeoutMs);
}

function millisecondsSetting(explicitMs: number | undefined, env: NodeJS.ProcessEnv, variable: string, fallbackMs: number): number {
  if (explicitMs !== undefined && Number.isFinite(explicitMs) && explicitMs > 0) return explicitMs;
  const seconds = Number(env[variable]);
  if (env[variable] && Number.isFinite(seconds) && seconds > 0) return seconds * 1000;
  return fallbackMs;
}

const STDERR_TAIL = 600;

interface Connected {
  client: Client;
  close(): Promise<void>;
  remote: McpToolDescriptor[];
  protocolVersion?: string;
  serverInfo?: { name: string; version: string };
}

class SkipServer extends Error {}

async function connectOne(
  config: McpServerConfig,
  startTimeoutMs: number,
  env: NodeJS.ProcessEnv,
  logger: Logger,
): Promise<Connected> {
  const log = logger.child({ server: config.name });
  let transport: Transport;
  let stderrTail = '';
  if (config.transport === 'stdio') {
    const expanded = expandEnvReferences(config.env, env, config.envGrant);
    assertExpanded(expanded, 'env');
    const stdio = new StdioClientTransport({
      command: config.command,
      args: config.args,
      // The SDK merges a minimal safe environment (PATH, HOME...) under these; host secrets stay out.
      env: expanded.values,
      cwd: config.cwd,
      stderr: 'pipe',
    });
    stdio.stderr?.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      stderrTail = (stderrTail + text).slice(-STDERR_TAIL);
      log.debug('mcp server stderr', { text: text.trimEnd() });
    });
    transport = stdio;
  } else {
    const expanded = expandEnvReferences(config.headers, env, config.envGrant);
    assertExpanded(expanded, 'headers');
    transport = new StreamableHTTPClientTransport(new URL(config.url), { requestInit: { headers: expanded.values } });
  }

  // The SDK tells HTTP transports the negotiated revision through this hook; catch it for every transport.
  let protocolVersion: string | undefined;
  const forward = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (version: string) => {
    protocolVersion = version;
    forward?.(version);
  };

  const client = new Client({ name: 'acx', version: ACX_VERSION }, { capabilities: {} });
  const withStderr = (message: string) => {
    const tail = scrubSecrets(stderrTail.trim().split('\n').slice(-3).join(' | '));
    return tail ? `${message} (stderr: ${tail})` : message;
  };
  let stage = 'start';
  try {
    stage = 'initialize';
    await client.connect(transport, { timeout: startTimeoutMs });
    stage = 'list tools';
    const remote: McpToolDescriptor[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 100; page++) {
      const listed = await client.listTools(cursor ? { cursor } : undefined, { timeout: startTimeoutMs });
      remote.push(...(listed.tools as McpToolDescriptor[]));
      cursor = listed.nextCursor;
      if (!cursor) break;
    }
    const serverInfo = client.getServerVersion();
    const close = async () => {
      // Tell an HTTP server the session is over (it frees its state); stdio servers see stdin end.
      if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession().catch(() => {});
      await client.close();
    };
    return {
      client,
      close,
      remote,
      protocolVersion,
      serverInfo: serverInfo ? { name: serverInfo.name, version: serverInfo.version } : undefined,
    };
  } catch (error) {
    await client.close().catch(() => {});
    const what = stage === 'initialize' ? 'failed to start or initialize' : 'failed to list its tools';
    const timedOut = error instanceof McpError && error.code === ErrorCode.RequestTimeout;
    const why = timedOut ? `timed out after ${startTimeoutMs / 1000} s (raise ACX_MCP_START_TIMEOUT if it is only slow to start)` : errorMessage(error);
    throw new SkipServer(withStderr(`${what}: ${why}`));
  }
}

/** A server whose `${VAR}` references did not all expand is skipped, with the names and what to do. */
function assertExpanded(expanded: { missing: string[]; refused: string[] }, field: 'env' | 'headers'): void {
  if (expanded.refused.length) {
    const names = expanded.refused.join(',');
    throw new SkipServer(
      `it is a cartridge's server and asks for host variable ${expanded.refused.join(', ')} in "${field}", which the host has not granted to cartridges; ` +
        `grant it with --allow-cartridge-env ${names} (or ACX_CARTRIDGE_ENV=${names}) if this server should have it`,
    );
  }
  if (expanded.missing.length) {
    throw new SkipServer(`environment variable ${expanded.missing.join(', ')} is not set (referenced in "${field}")`);
  }
}

export async function connectMcpServers(configs: readonly McpServerConfig[], options: ConnectMcpOptions = {}): Promise<McpConnection> {
  const logger = options.logger ?? silentLogger;
  const env = options.env ?? process.env;
  const timeoutMs = resolveMcpTimeoutMs(options.timeoutMs, env);
  const startTimeoutMs = resolveMcpStartTimeoutMs(options.startTimeoutMs, timeoutMs, env);
  const callTimeoutMs = options.callTimeoutMs !== undefined && options.callTimeoutMs > 0 ? options.callTimeoutMs : timeoutMs;
  const settled = await Promise.allSettled(
    configs.map((config) => {
      if (config.disabled) return Promise.reject(new SkipServer('disabled in its config'));
      return connectOne(config, startTimeoutMs, env, logger);
    }),
  );

  const closers: Array<() => Promise<void>> = [];
  const tools: Tool[] = [];
  const servers: McpServerStatus[] = [];
  // Names are reserved in config order so collisions resolve the same way on every run.
  const taken = new Set<string>();
  settled.forEach((outcome, i) => {
    const config = configs[i]!;
    if (outcome.status === 'fulfilled') {
      const { client, remote, protocolVersion, serverInfo } = outcome.value;
      const own: Tool[] = [];
      for (const descriptor of remote) {
        const name = bridgedToolName(config.name, descriptor.name, taken);
        try {
          own.push(bridgeMcpTool({ client, server: config, tool: descriptor, name, timeoutMs: callTimeoutMs }).tool);
        } catch (error) {
          logger.warn('mcp tool skipped', { server: config.name, tool: descriptor.name, reason: `unusable input schema: ${errorMessage(error)}` });
        }
      }
      closers.push(outcome.value.close);
      tools.push(...own);
      servers.push({
        name: config.name,
        transport: config.transport,
        status: 'ok',
        required: config.required === true,
        source: config.source,
        origin: config.origin ?? 'host',
        protocolVersion,
        serverInfo,
        toolCount: own.length,
        toolNames: own.map((t) => t.name),
      });
      logger.info('mcp server connected', { server: config.name, transport: config.transport, protocol: protocolVersion, tools: own.length });
      return;
    }
    const reason = outcome.reason instanceof SkipServer ? outcome.reason.message : `unexpected failure: ${errorMessage(outcome.reason)}`;
    // A server switched off in its config is not missing: only one that should have started is.
    const required = config.required === true && !config.disabled;
    servers.push({ name: config.name, transport: config.transport, status: 'skipped', reason, required, source: config.source, origin: config.origin ?? 'host', toolCount: 0, toolNames: [] });
    if (config.disabled) logger.info('mcp server skipped', { server: config.name, reason });
    else logger.warn('mcp server skipped', { server: config.name, source: config.source, required, reason });
  });

  let closed = false;
  return {
    tools,
    servers,
    async close() {
      if (closed) return;
      closed = true;
      await Promise.allSettled(closers.map((close) => close()));
    },
  };
}
