import { setTimeout as delay } from 'node:timers/promises';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Tool } from '../tools/tool.ts';
import { ACX_VERSION } from '../util/version.ts';
import { AcxError, errorMessage } from '../core/errors.ts';
import { silentLogger, type Logger } from '../util/logger.ts';
import { processRunning } from '../util/process-exists.ts';
import { scrubSecrets } from '../util/scrub.ts';
import { bridgeMcpTool, type McpToolDescriptor } from './bridge.ts';
import type { McpOrigin, McpServerConfig } from './config.ts';
import { ELICITATION_CAPABILITY, ElicitationRouter } from './elicitation.ts';
import { bridgedToolName } from './names.ts';
import { type LoginCommand, StoredOAuthProvider } from './oauth/provider.ts';
import type { McpCredentialStore } from './oauth/store.ts';
import { ServerLink } from './server-link.ts';
import { answersLikeLegacyServer, openTransport, SkipServer, type OpenedTransport, type TransportKind, type TransportOptions } from './transport.ts';

/**
 * Connects the MCP drop-in servers and bridges their tools. A server that cannot be spawned,
 * initialized or listed is skipped with its reason and a WARNING line: the caller always gets
 * a result, never an exception. Whether the turn may go ahead without a skipped server is the
 * caller's decision (a required one stops it: requiredServersDown in ./required.ts).
 */
export const DEFAULT_MCP_TIMEOUT_MS = 20_000;

export interface McpServerStatus {
  name: string;
  /** The transport it was reached over: an `http` server that only speaks the legacy transport says `sse`. */
  transport: TransportKind;
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
  /**
   * Whether every server that connected is still the one that connected, and connected (a stdio
   * server that exited is not; nor one started again since, which has used some of its restarts,
   * so a worker keeps no such connection for later events: they connect afresh).
   */
  alive(): boolean;
  /**
   * Whether every server that connected still answers (within `timeoutMs`) with the tools it
   * offered when it connected: a server that died a moment ago, before its transport said so, one
   * that hangs, or one whose tools changed, does not.
   */
  unchanged(timeoutMs: number): Promise<boolean>;
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
  /**
   * Where `acx mcp login` keeps logins (McpCredentialStore.inConfigHome): an HTTP server that
   * asks for OAuth is authorized with what is stored there. Absent: such a server is skipped.
   */
  credentials?: McpCredentialStore;
  /** The command that logs in to a server, for the message when a login is missing (default `acx mcp login <server>`). */
  loginCommand?: LoginCommand;
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

export interface Connected {
  client: Client;
  /** `endSession: false` leaves an HTTP server's session alone (one it has already forgotten). */
  close(options?: { endSession?: boolean }): Promise<void>;
  /** Whether the transport has closed since (the server exited, its session ended). */
  disconnected(): boolean;
  /** Whether the server gave this connection a session (Streamable HTTP's Mcp-Session-Id). */
  inSession(): boolean;
  remote: McpToolDescriptor[];
  kind: TransportKind;
  elicitations: ElicitationRouter;
  protocolVersion?: string;
  serverInfo?: { name: string; version: string };
}

/** How long closing waits for an HTTP server to acknowledge the session's end. */
const SESSION_END_WAIT_MS = 2_000;


/** How many times one login may send the user to authorize (a server that keeps refusing stops there). */
export const MAX_AUTHORIZATIONS = 3;

/**
 * Connects one server: Streamable HTTP first for an `http` server, and the legacy SSE transport
 * when the first answer says the server is of that older kind (answersLikeLegacyServer). During
 * `acx mcp login` (options.interactive), an authorization the server asks for is completed and
 * the connection made again, up to MAX_AUTHORIZATIONS times.
 */
export async function connectMcpServer(config: McpServerConfig, startTimeoutMs: number, options: TransportOptions, restart: Restart = {}): Promise<Connected> {
  let kind: TransportKind = config.transport;
  let streamableFailure: string | undefined;
  for (let authorizations = 0; ; ) {
    const opened = openTransport(config, kind, options);
    try {
      return await initialize(config, opened, startTimeoutMs, options.logger, restart);
    } catch (error) {
      const cause = error instanceof StartFailure ? error.cause : undefined;
      if (kind === 'http' && config.transport === 'http' && answersLikeLegacyServer(cause)) {
        options.logger.info('mcp server falls back to sse', { server: config.name, reason: (error as Error).message });
        streamableFailure = (error as Error).message;
        kind = 'sse';
        continue;
      }
      // The login counts the authorizations it shows (login.ts); this bound only keeps a loop finite.
      if (options.interactive && cause instanceof UnauthorizedError && authorizations < MAX_AUTHORIZATIONS) {
        authorizations += 1;
        await options.interactive.finish(opened.transport as unknown as { finishAuth(code: string): Promise<void> });
        continue;
      }
      if (streamableFailure) throw new SkipServer(`${streamableFailure}; the legacy SSE transport failed too: ${errorMessage(error)}`);
      throw error;
    }
  }
}

/** A server started again (ServerLink): its elicitations still go to the same router; `signal` gives up the start. */
interface Restart {
  elicitations?: ElicitationRouter;
  signal?: AbortSignal;
}

/** An error that says the server could not be authorized, and what to do. */
function authRefusal(error: unknown): AcxError | undefined {
  const codes = ['mcp-login-required', 'mcp-auth-failed', 'mcp-credentials'] as const;
  return AcxError.isInstance(error) && codes.some((code) => AcxError.hasCode(error, code)) ? error : undefined;
}

/** Why a server's start failed (its message for the user), with the error underneath as `cause`. */
class StartFailure extends SkipServer {}

/** Every tool a server offers, page by page (at most 100 pages). */
async function listAllTools(client: Client, timeoutMs: number, signal?: AbortSignal): Promise<McpToolDescriptor[]> {
  const remote: McpToolDescriptor[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 100; page++) {
    const listed = await client.listTools(cursor ? { cursor } : undefined, { timeout: timeoutMs, signal });
    remote.push(...(listed.tools as McpToolDescriptor[]));
    cursor = listed.nextCursor;
    if (!cursor) break;
  }
  return remote;
}

async function initialize(
  config: McpServerConfig,
  opened: OpenedTransport,
  startTimeoutMs: number,
  logger: Logger,
  { elicitations = new ElicitationRouter(config.name, logger), signal }: Restart,
): Promise<Connected> {
  const { transport } = opened;
  // The SDK tells HTTP transports the negotiated revision through this hook; catch it for every transport.
  let protocolVersion: string | undefined;
  const forward = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (version: string) => {
    protocolVersion = version;
    forward?.(version);
  };

  const client = new Client({ name: 'acx', version: ACX_VERSION }, { capabilities: { elicitation: ELICITATION_CAPABILITY } });
  // The SDK calls onclose once the transport is gone: a stdio server that exited, an HTTP session ended.
  let disconnected = false;
  client.onclose = () => {
    disconnected = true;
  };
  client.setRequestHandler(ElicitRequestSchema, (request, extra) => elicitations.answer(request.params, extra.signal));
  const withStderr = (message: string) => {
    const tail = scrubSecrets(opened.stderrTail().trim().split('\n').slice(-3).join(' | '));
    return tail ? `${message} (stderr: ${tail})` : message;
  };
  let stage = 'start';
  try {
    stage = 'initialize';
    await client.connect(transport, { timeout: startTimeoutMs, signal });
    stage = 'list tools';
    const remote = await listAllTools(client, startTimeoutMs, signal);
    const serverInfo = client.getServerVersion();
    const close = async ({ endSession = true }: { endSession?: boolean } = {}) => {
      // Tell an HTTP server the session is over (it frees its state); stdio servers see stdin end.
      // Not waited for past a moment: closing the client aborts the request.
      if (endSession && transport instanceof StreamableHTTPClientTransport) await Promise.race([transport.terminateSession().catch(() => {}), delay(SESSION_END_WAIT_MS, undefined, { ref: false })]);
      await client.close();
    };
    // A stdio server that has exited is gone before its transport says so (the pipes close a
    // moment later): a call sent in between would be lost unread, so its process is asked too.
    // A command that has already exited here only started the server (a wrapper that left it
    // running): its pid says nothing of the server, so only the pipes do.
    const started = transport instanceof StdioClientTransport ? transport.pid : null;
    const pid = started !== null && processRunning(started) ? started : null;
    return {
      client,
      close,
      inSession: () => transport instanceof StreamableHTTPClientTransport && transport.sessionId !== undefined,
      disconnected: () => disconnected || (pid !== null && !processRunning(pid)),
      remote,
      kind: opened.kind,
      elicitations,
      protocolVersion,
      serverInfo: serverInfo ? { name: serverInfo.name, version: serverInfo.version } : undefined,
    };
  } catch (error) {
    await client.close().catch(() => {});
    // A login to run, or a refused authorization, is the whole story: said as it is.
    const refusal = authRefusal(error) ?? (opened.oauth instanceof StoredOAuthProvider ? opened.oauth.refusal : undefined);
    if (refusal) throw new SkipServer(refusal.hint ? `${refusal.message}. ${refusal.hint}` : refusal.message);
    const what = stage === 'initialize' ? 'failed to start or initialize' : 'failed to list its tools';
    const timedOut = error instanceof McpError && error.code === ErrorCode.RequestTimeout;
    const answered = error instanceof StreamableHTTPError && error.code !== undefined && error.code > 0 ? `HTTP ${error.code}: ` : '';
    const why = timedOut ? `timed out after ${startTimeoutMs / 1000} s (raise ACX_MCP_START_TIMEOUT if it is only slow to start)` : `${answered}${errorMessage(error)}`;
    throw new StartFailure(withStderr(`${what}: ${why}`), { cause: error });
  }
}

export async function connectMcpServers(configs: readonly McpServerConfig[], options: ConnectMcpOptions = {}): Promise<McpConnection> {
  const logger = options.logger ?? silentLogger;
  const env = options.env ?? process.env;
  const timeoutMs = resolveMcpTimeoutMs(options.timeoutMs, env);
  const startTimeoutMs = resolveMcpStartTimeoutMs(options.startTimeoutMs, timeoutMs, env);
  const callTimeoutMs = options.callTimeoutMs !== undefined && options.callTimeoutMs > 0 ? options.callTimeoutMs : timeoutMs;
  const transportOptions: TransportOptions = {
    env,
    logger,
    ...(options.credentials ? { credentials: options.credentials } : {}),
    ...(options.loginCommand ? { loginCommand: options.loginCommand } : {}),
  };
  const settled = await Promise.allSettled(
    configs.map((config) => {
      if (config.disabled) return Promise.reject(new SkipServer('disabled in its config'));
      return connectMcpServer(config, startTimeoutMs, transportOptions);
    }),
  );

  const links: ServerLink[] = [];
  // A call given up while its server may still run it: that server is not handed to another event.
  let abandoned = false;
  const tools: Tool[] = [];
  const servers: McpServerStatus[] = [];
  // Names are reserved in config order so collisions resolve the same way on every run.
  const taken = new Set<string>();
  settled.forEach((outcome, i) => {
    const config = configs[i]!;
    if (outcome.status === 'fulfilled') {
      const { remote, protocolVersion, serverInfo, kind, elicitations } = outcome.value;
      const link = new ServerLink(config, outcome.value, (restart) => connectMcpServer(config, startTimeoutMs, transportOptions, restart), logger);
      const own: Tool[] = [];
      for (const descriptor of remote) {
        const name = bridgedToolName(config.name, descriptor.name, taken);
        try {
          own.push(bridgeMcpTool({ client: link, server: config, tool: descriptor, name, timeoutMs: callTimeoutMs, elicitations, onAbandoned: () => (abandoned = true) }).tool);
        } catch (error) {
          logger.warn('mcp tool skipped', { server: config.name, tool: descriptor.name, reason: `unusable input schema: ${errorMessage(error)}` });
        }
      }
      links.push(link);
      tools.push(...own);
      servers.push({
        name: config.name,
        transport: kind,
        status: 'ok',
        required: config.required === true,
        source: config.source,
        origin: config.origin ?? 'host',
        protocolVersion,
        serverInfo,
        toolCount: own.length,
        toolNames: own.map((t) => t.name),
      });
      logger.info('mcp server connected', { server: config.name, transport: kind, protocol: protocolVersion, tools: own.length });
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
  const alive = () => !closed && !abandoned && links.every((link) => link.untouched());
  return {
    tools,
    servers,
    alive,
    async unchanged(timeoutMs) {
      if (!alive()) return false;
      // Listing the tools again is the liveness check (every server answers it) and catches a
      // server whose tools changed since they were bridged: an event connecting afresh sees those.
      const listed = await Promise.allSettled(links.map(({ client }) => listAllTools(client, timeoutMs)));
      return alive() && listed.every((list, i) => list.status === 'fulfilled' && JSON.stringify(list.value) === JSON.stringify(links[i]!.offered));
    },
    async close() {
      if (closed) return;
      closed = true;
      await Promise.allSettled(links.map((link) => link.close()));
    },
  };
}
