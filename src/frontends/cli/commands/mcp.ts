import fs from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import type { Command } from 'commander';
import { openAgentToolHost } from '../../../app/tool-host.ts';
import { createHostToolServer, type HostToolServerOptions } from '../../../mcp/host-server.ts';
import { normalizedOrigin, serveHttp, type ServeHttpOptions, serveStdio } from '../../../mcp/serve.ts';
import { DEFAULT_SESSION_LIMITS } from '../../../mcp/http-sessions.ts';
import { numberSetting } from '../../number-setting.ts';
import type { Tool } from '../../../tools/tool.ts';
import { AcxError } from '../../../core/errors.ts';
import { createLogger, type Logger } from '../../../util/logger.ts';
import { addRunOptions, runFlags } from '../run-options.ts';
import { ACX_VERSION } from '../../../util/version.ts';
import { commandLogger } from '../command-logger.ts';
import { registerMcpLoginCommands } from './mcp-login.ts';

/**
 * `acx mcp [agent] [--http] [--port N] [--token-file PATH]`: serve an agent's host tools (what
 * `acx resolved-config` lists as `tools`) as an MCP server. stdio by default (stdout carries the
 * protocol, logs go to stderr). With --http it listens on 127.0.0.1 and prints one JSON line
 * `{"url", "token"}` for the client to use (`Authorization: Bearer <token>`); --token-file
 * writes the token to a 0600 file instead. The token is ACX_MCP_TOKEN when set, otherwise
 * random per run.
 */
export interface ServedTools {
  tools: readonly Tool[];
  /** Asked before a `needsApproval` tool runs (see HostToolServerOptions.approve). */
  approve?: HostToolServerOptions['approve'];
  close?(): Promise<void>;
}

export interface McpCommandDeps {
  /** The host tools to serve. */
  openTools(): Promise<ServedTools> | ServedTools;
  logger?: Logger;
  stdin?: Readable;
  stdout?: Writable;
  env?: NodeJS.ProcessEnv;
}

export interface McpCommandOptions {
  http?: boolean;
  port?: string | number;
  tokenFile?: string;
  /** The most MCP sessions at once (env ACX_MCP_MAX_SESSIONS). */
  maxSessions?: string | number;
  /** Seconds a session may sit idle before it is closed, 0 never (env ACX_MCP_SESSION_IDLE). */
  sessionIdle?: string | number;
  /** Browser origins allowed besides loopback ones (env ACX_MCP_ALLOW_ORIGINS, comma-separated). */
  allowOrigin?: string[];
}

export interface RunningMcpCommand {
  url?: string;
  token?: string;
  /** Resolves when serving ends (client gone, or close()). */
  done: Promise<void>;
  close(): Promise<void>;
}

function parsePort(value: string | number | undefined): number {
  if (value === undefined) return 0;
  const port = typeof value === 'number' ? value : Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new AcxError('usage', `--port must be an integer from 0 to 65535, got "${value}"`, { hint: 'Use --port 0 (the default) to pick a free port.' });
  }
  return port;
}

/** The HTTP server's session limits and allowed origins, from flags, else ACX_MCP_* variables. */
function httpLimits(options: McpCommandOptions, env: NodeJS.ProcessEnv): Pick<ServeHttpOptions, 'maxSessions' | 'sessionIdleMs' | 'allowedOrigins'> {
  const { maxSessions, idleMs } = DEFAULT_SESSION_LIMITS;
  const origins = options.allowOrigin ?? (env.ACX_MCP_ALLOW_ORIGINS ?? '').split(',').map((o) => o.trim()).filter(Boolean);
  return {
    maxSessions: numberSetting(options.maxSessions, env, 'ACX_MCP_MAX_SESSIONS', '--max-sessions', maxSessions, 'positive integer'),
    sessionIdleMs: numberSetting(options.sessionIdle, env, 'ACX_MCP_SESSION_IDLE', '--session-idle', idleMs / 1000, 'non-negative seconds') * 1000,
    allowedOrigins: origins.map(normalizedOrigin),
  };
}

export async function startMcpCommand(options: McpCommandOptions, deps: McpCommandDeps): Promise<RunningMcpCommand> {
  const logger = deps.logger ?? createLogger();
  const env = deps.env ?? process.env;
  const httpOnly = { port: '--port', tokenFile: '--token-file', maxSessions: '--max-sessions', sessionIdle: '--session-idle', allowOrigin: '--allow-origin' } as const;
  const misplaced = Object.entries(httpOnly).filter(([key]) => options[key as keyof typeof httpOnly] !== undefined);
  if (!options.http && misplaced.length > 0) {
    throw new AcxError('usage', `${misplaced.map(([, flag]) => flag).join(', ')} only apply with --http`, { hint: 'Add --http to serve over Streamable HTTP.' });
  }
  const port = parsePort(options.port);
  const limits = options.http ? httpLimits(options, env) : {};
  const envToken = env.ACX_MCP_TOKEN?.trim();
  if (options.http && envToken !== undefined && envToken !== '' && envToken.length < 16) {
    throw new AcxError('config', 'ACX_MCP_TOKEN must be at least 16 characters', { hint: 'Unset it to get a random token per run.' });
  }
  const served = await deps.openTools();
  const { tools } = served;
  const host = createHostToolServer(tools, { name: 'acx', version: ACX_VERSION, logger, ...(served.approve ? { approve: served.approve } : {}) });
  const stdout = deps.stdout ?? process.stdout;

  if (!options.http) {
    const serving = await serveStdio(host, { stdin: deps.stdin, stdout });
    logger.info('mcp stdio serving', { tools: tools.length });
    const done = serving.closed.then(() => served.close?.());
    return { done, close: () => serving.close() };
  }

  const serving = await serveHttp(host, { port, token: envToken || undefined, logger, ...limits }).catch(async (error: unknown) => {
    await served.close?.();
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new AcxError('usage', `Port ${port} on 127.0.0.1 is already in use`, { hint: 'Pick another --port, or --port 0 for a free one.' });
    }
    throw error;
  });
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      await serving.close();
      await host.close();
      await served.close?.();
      finish();
    })());
  try {
    if (options.tokenFile) {
      fs.writeFileSync(options.tokenFile, `${serving.token}\n`, { mode: 0o600 });
      fs.chmodSync(options.tokenFile, 0o600);
      stdout.write(`${JSON.stringify({ url: serving.url, tokenFile: options.tokenFile })}\n`);
    } else {
      stdout.write(`${JSON.stringify({ url: serving.url, token: serving.token })}\n`);
    }
  } catch (error) {
    await close();
    throw new AcxError('config', `Cannot write the token file ${options.tokenFile}: ${(error as Error).message}`, { cause: error });
  }
  logger.info('mcp http ready', { url: serving.url, tools: tools.length });
  return { url: serving.url, token: serving.token, done, close };
}

export function registerMcpCommand(program: Command, deps: (agent: string | undefined, options: Record<string, unknown>) => McpCommandDeps): Command {
  return addRunOptions(
    program
      .command('mcp')
      .description("Serve an agent's host tools as an MCP server (stdio by default, or Streamable HTTP on 127.0.0.1).")
      .argument('[agent]', 'agent directory, .acx cartridge, or default (the config home agent; the default)'),
  )
    .option('--http', 'serve Streamable HTTP on 127.0.0.1 with a bearer token instead of stdio')
    .option('--port <n>', 'HTTP port (0 = pick a free one)')
    .option('--token-file <path>', 'write the bearer token to this file (mode 0600) instead of printing it')
    .option('--max-sessions <n>', 'with --http: the most MCP sessions at once; at the cap the longest idle one is closed, or a new one refused when all are busy (env ACX_MCP_MAX_SESSIONS, default 32)')
    .option('--session-idle <seconds>', 'with --http: close a session idle this long, with no request or stream open; 0 never (env ACX_MCP_SESSION_IDLE, default 3600)')
    .option('--allow-origin <origin>', 'with --http: a browser origin allowed besides loopback ones, e.g. https://app.example (repeatable; env ACX_MCP_ALLOW_ORIGINS, comma-separated)', (value: string, previous: string[] = []) => [...previous, value])
    .addHelpText(
      'after',
      '\nThe tools are what `acx resolved-config [agent]` lists as "tools", under the same policy. A call the permission\n' +
        'mode would ask about is refused (nobody can be asked over MCP): --permission-mode allow-all leaves it to the client.\n' +
        'With --http, one JSON line {"url","token"} is printed; send "Authorization: Bearer <token>" on every request.\n' +
        'ACX_MCP_TOKEN (>= 16 characters) fixes the token; otherwise it is random per run. A request from a browser page\n' +
        'whose Origin is not loopback (nor --allow-origin) is refused with 403 (DNS-rebinding protection).',
    )
    .action(async (agent: string | undefined, options: Record<string, unknown>) => {
      const running = await startMcpCommand(options as McpCommandOptions, deps(agent, options));
      const stop = () => void running.close();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      try {
        await running.done;
      } finally {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
      }
    });
}

/** The agent's own tools, assembled as for a run of it (`openAgentToolHost`). */
export function agentToolsDeps(agent: string | undefined, options: Record<string, unknown>): McpCommandDeps {
  const logger = commandLogger('answer');
  const { http: _http, port: _port, tokenFile: _tokenFile, ...run } = options;
  return { logger, openTools: () => openAgentToolHost(runFlags(agent, run), { logger }) };
}

export function register(program: Command): void {
  registerMcpLoginCommands(registerMcpCommand(program, agentToolsDeps));
}
