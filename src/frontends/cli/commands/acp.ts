import type { Command } from 'commander';
import { serveAcp } from '../../acp-server/serve.ts';
import { takeStdio } from '../../acp-server/stdio.ts';
import { addRunOptions, runFlags } from '../run-options.ts';
import { commandLogger } from '../command-logger.ts';

/**
 * `acx acp [agent]`: serve an agent over stdio as an ACP agent, for editors (Zed, JetBrains,
 * any ACP client). stdout carries only ACP JSON-RPC; every log line goes to stderr.
 */
export function register(program: Command): void {
  addRunOptions(
    program
      .command('acp')
      .description('serve an agent over stdio as an Agent Client Protocol (ACP) agent, e.g. for Zed')
      .argument('[agent]', 'agent directory, .acx cartridge, or "default" for the config home\'s own agent (default "default")'),
    // The client names each session; there is no session to give here.
    ['--session'],
  ).action(async (agent: string | undefined, options: Record<string, unknown>) => {
    const logger = commandLogger('answer');
    const stdio = takeStdio();
    try {
      await serveAcp({ flags: runFlags(agent, options), input: stdio.input, output: stdio.output, logger });
    } finally {
      stdio.restore();
    }
  });
}
