import fs from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import type { Command } from 'commander';
import { createHostToolServer } from '../../mcp/host-server.ts';
import { serveHttp, serveStdio } from '../../mcp/serve.ts';
import type { Tool } from '../../tools/tool.ts';
import { AcxError } from '../../util/errors.ts';
import { createLogger, type Logger } from '../../util/logger.ts';
import { ACX_VERSION } from '../version.ts';

/**
 * `acx mcp [--http] [--port N] [--token-file PATH]`: serve the host's built-in tools as an MCP
 * server. stdio by default (stdout carries the protocol, logs go to stderr). With --http it
 * listens on 127.0.0.1 and prints one JSON line `{"url", "token"}` for the client to use
 * (`Authorization: Bearer <token>`); --token-file writes the token to a 0600 file instead.
 * The token is ACX_MCP_TOKEN when set, otherwise random per run.
 */
export interface McpCommandDeps {
  /** The built-in host tools to serve. */
  loadTools(): Promise<readonly Tool[]> | readonly Tool[];
  logger?: Logger;
  stdin?: Readable;
  stdout?: Writable;
  env?: NodeJS.ProcessEnv;
}

export interface McpCommandOptions {
  http?: boolean;
  port?: string | number;
  tokenFile?: string;
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

export async function startMcpCommand(options: McpCommandOptions, deps: McpCommandDeps): Promise<RunningMcpCommand> {
  const logger = deps.logger ?? createLogger();
  const env = deps.env ?? process.env;
  if (!options.http && (options.port !== undefined || options.tokenFile !== undefined)) {
    throw new AcxError('usage', '--port and --token-file only apply with --http', { hint: 'Add --http to serve over Streamable HTTP.' });
  }
  const port = parsePort(options.port);
  const tools = await deps.loadTools();
  const host = createHostToolServer(tools, { name: 'acx', version: ACX_VERSION, logger });
  const stdout = deps.stdout ?? process.stdout;

  if (!options.http) {
    const serving = await serveStdio(host, { stdin: deps.stdin, stdout });
    logger.info('mcp stdio serving', { tools: tools.length });
    return { done: serving.closed, close: () => serving.close() };
  }

  const envToken = env.ACX_MCP_TOKEN?.trim();
  if (envToken !== undefined && envToken !== '' && envToken.length < 16) {
    throw new AcxError('config', 'ACX_MCP_TOKEN must be at least 16 characters', { hint: 'Unset it to get a random token per run.' });
  }
  const serving = await serveHttp(host, { port, token: envToken || undefined, logger });
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  const close = async () => {
    await serving.close();
    await host.close();
    finish();
  };
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

/**
 * Where `acx mcp` gets its tools. The built-in tool registry lives in src/tools (another
 * area); until the lead wires it here, the command explains that instead of serving nothing.
 */
export const defaultMcpCommandDeps: McpCommandDeps = {
  loadTools() {
    throw new AcxError('not-wired', 'acx mcp has no built-in tool registry wired in yet', {
      hint: 'This build of acx cannot serve host tools; wire the built-in tools into src/cli/commands/mcp.ts.',
    });
  },
};

export function registerMcpCommand(program: Command, deps: McpCommandDeps): void {
  program
    .command('mcp')
    .description('Serve the host tools as an MCP server (stdio by default, or Streamable HTTP on 127.0.0.1).')
    .option('--http', 'serve Streamable HTTP on 127.0.0.1 with a bearer token instead of stdio')
    .option('--port <n>', 'HTTP port (0 = pick a free one)')
    .option('--token-file <path>', 'write the bearer token to this file (mode 0600) instead of printing it')
    .addHelpText(
      'after',
      '\nWith --http, one JSON line {"url","token"} is printed; send "Authorization: Bearer <token>" on every request.\n' +
        'ACX_MCP_TOKEN (>= 16 characters) fixes the token; otherwise it is random per run.',
    )
    .action(async (options: McpCommandOptions) => {
      const running = await startMcpCommand(options, deps);
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

export function register(program: Command): void {
  registerMcpCommand(program, defaultMcpCommandDeps);
}
