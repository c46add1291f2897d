import fs from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import type { Command } from 'commander';
import { openAgentToolHost } from '../../../app/tool-host.ts';
import { createHostToolServer, type HostToolServerOptions } from '../../../mcp/host-server.ts';
import { createClientLogFeed } from '../../../mcp/client-log.ts';
import type { ServedPrompt } from '../../../mcp/prompts.ts';
import { INSTRUCTIONS_URI, MEMORY_KEY_TEMPLATE, MEMORY_SEARCH_TEMPLATE, type ServedMemory } from '../../../mcp/resources.ts';
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
 * `acx mcp [agent] [--http] [--port N] [--token-file PATH]`: serve an agent as an MCP server:
 * its host tools (what `acx resolved-config` lists as `tools`), its skills as prompts, its
 * standing instructions and memory as read-only resources, and the host's log lines. stdio by
 * default (stdout carries the protocol, logs go to stderr). With --http it listens on 127.0.0.1
 * and prints one JSON line `{"url", "token"}` for the client to use (`Authorization: Bearer
 * <token>`); --token-file writes the token to a 0600 file instead. The token is ACX_MCP_TOKEN
 * when set, otherwise random per run.
 */
export interface ServedTools {
  tools: readonly Tool[];
  /** Asked before a `needsApproval` tool runs (see HostToolServerOptions.approve). */
  approve?: HostToolServerOptions['approve'];
  /** The agent's name, for serverInfo.title and the resources' titles (default "default"). */
  agentName?: string;
  prompts?: readonly ServedPrompt[];
  /** The agent's standing instructions, served as acx://instructions. */
  instructions?: string;
  /** The agent's memory, served read-only as acx://memory/{key} and acx://memory{?q}. */
  memory?: ServedMemory;
  close?(): Promise<void>;
}

export interface McpCommandDeps {
  /** What to serve; `logger` is the one whose lines reach the clients (pass it to the tools). */
  openTools(logger: Logger): Promise<ServedTools> | ServedTools;
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
  const feed = createClientLogFeed(logger);
  const served = await deps.openTools(feed.logger);
  const { tools } = served;
  const agentName = served.agentName ?? 'default';
  const host = createHostToolServer(tools, {
    name: 'acx',
    title: `acx: ${agentName}`,
    version: ACX_VERSION,
    instructions: serverGuide(agentName, served),
    logger: feed.logger,
    clientLog: feed,
    ...(served.prompts ? { prompts: served.prompts } : {}),
    resources: { agentName, instructions: served.instructions, memory: served.memory },
    ...(served.approve ? { approve: served.approve } : {}),
  });
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

/** `instructions` in initialize: what this server is and how to use it. */
export function serverGuide(agentName: string, served: Pick<ServedTools, 'prompts' | 'instructions' | 'memory'>): string {
  const lines = [
    `acx serves the agent "${agentName}" over MCP.`,
    "Tools are the agent's host tools. They run in the acx host under its permission mode; a call that mode would ask about is refused, with the reason.",
  ];
  if (served.prompts && served.prompts.length > 0) lines.push("Prompts are the agent's skills: get one for its instructions, with its arguments filled in.");
  const resources = [
    ...(served.instructions !== undefined ? [`${INSTRUCTIONS_URI} is the system prompt the agent runs with`] : []),
    ...(served.memory ? [`${MEMORY_KEY_TEMPLATE} reads one of its memories and ${MEMORY_SEARCH_TEMPLATE} searches them (read-only; subscribe to a memory to be told when it changes)`] : []),
  ];
  if (resources.length > 0) lines.push(`Resources: ${resources.join('; ')}.`);
  lines.push("logging/setLevel chooses which of the host's log lines are sent.");
  return lines.join('\n');
}

export function registerMcpCommand(program: Command, deps: (agent: string | undefined, options: Record<string, unknown>) => McpCommandDeps): Command {
  return addRunOptions(
    program
      .command('mcp')
      .description("serve an agent as an MCP server: its host tools, skills (as prompts), instructions and memory (as resources); stdio by default, or Streamable HTTP on 127.0.0.1")
      .argument('[agent]', 'agent directory, .acx cartridge, or "default" for the config home\'s own agent (default "default")'),
    // The client names no acx session, the agent's MCP servers are not re-served, and dispatch runs on acx's engine.
    ['--session', '--mcp', '--harness'],
  )
    .option('--http', 'serve Streamable HTTP on 127.0.0.1 with a bearer token instead of stdio')
    .option('--port <n>', 'with --http: the port; 0 picks a free one (default 0)')
    .option('--token-file <path>', 'with --http: write the bearer token to this file (mode 0600) instead of printing it')
    .option('--max-sessions <n>', 'with --http: the most MCP sessions at once; at the cap the longest idle one is closed, or a new one refused when all are busy (env ACX_MCP_MAX_SESSIONS; default 32)')
    .option('--session-idle <seconds>', 'with --http: close a session idle this long, with no request or stream open; 0 never (env ACX_MCP_SESSION_IDLE; default 3600)')
    .option('--allow-origin <origin>', 'with --http: a browser origin allowed besides loopback ones, e.g. https://app.example; repeatable (env ACX_MCP_ALLOW_ORIGINS, comma-separated)', (value: string, previous: string[] = []) => [...previous, value])
    .addHelpText(
      'after',
      [
        '',
        'The tools are what `acx resolved-config [agent]` lists as "tools", under the same policy. The model options',
        "set up dispatch's sub-agents (on half the --max-steps budget): the only model calls acx mcp makes.",
        'A call the permission mode would ask about is refused (nobody can be asked over MCP): --permission-mode',
        'allow-all leaves it to the client.',
        'With --http, one JSON line {"url","token"} is printed; send "Authorization: Bearer <token>" on every request.',
        'ACX_MCP_TOKEN (>= 16 characters) fixes the token; otherwise it is random per run. A request from a browser page',
        'whose Origin is not loopback (nor --allow-origin) is refused with 403 (DNS-rebinding protection).',
        'Also served: the skills as prompts, acx://instructions and acx://memory/{+key}, acx://memory{?q} as resources',
        "(read-only, subscribable), and the host's log lines at the level the client sets (docs/mcp.md).",
      ].join('\n'),
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
  return {
    logger,
    openTools: async (served) => {
      const host = await openAgentToolHost(runFlags(agent, run), { logger: served });
      return { ...host, agentName: host.settings.agent.name };
    },
  };
}

export function register(program: Command): void {
  registerMcpLoginCommands(registerMcpCommand(program, agentToolsDeps));
}
