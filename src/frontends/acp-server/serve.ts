import * as acp from '@agentclientprotocol/sdk';
import { type PreparedAgent, prepareAgent } from '../../app/prepare.ts';
import { agentMcpDir } from '../../app/toolset.ts';
import { type RunFlags, resolveSettings } from '../../app/settings.ts';
import { connectMcpServers, type McpConnection } from '../../mcp/client.ts';
import { loadMcpConfigs } from '../../mcp/config.ts';
import { ConfigError } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';
import { createAcpServer } from './server.ts';
import { createUnconfiguredAcpServer } from './unconfigured.ts';

/**
 * `acx acp`: resolve the agent exactly as `acx run` does, connect its MCP drop-ins (the agent
 * directory's mcp/ and `--mcp`), then serve ACP on the given streams until the client hangs up.
 */
export interface ServeAcpOptions {
  flags: RunFlags;
  /** ACP messages from the client (stdin). */
  input: ReadableStream<Uint8Array>;
  /** ACP messages to the client (stdout): nothing else may be written there. */
  output: WritableStream<Uint8Array>;
  logger: Logger;
  env?: NodeJS.ProcessEnv;
}

export async function serveAcp(options: ServeAcpOptions): Promise<void> {
  const { flags, logger } = options;
  const env = options.env ?? process.env;
  const settings = resolveSettings(flags, { logger, env });
  const configs = loadMcpConfigs({
    ...(agentMcpDir(settings) ? { dir: agentMcpDir(settings)! } : {}),
    ...(flags.mcp ? { specs: flags.mcp } : {}),
  });
  let prepared: PreparedAgent;
  try {
    prepared = await prepareAgent(settings, { logger });
  } catch (error) {
    // A configuration the user must fix (a missing key, no model) still answers initialize.
    if (!ConfigError.isInstance(error)) throw error;
    const server = createUnconfiguredAcpServer({ problem: error, agentName: settings.agent.name, logger });
    await server.app.connect(acp.ndJsonStream(options.output, options.input)).closed;
    logger.info('acp connection closed');
    return;
  }
  let dropIns: McpConnection | undefined;
  try {
    if (configs.length > 0) dropIns = await connectMcpServers(configs, { logger, env });
    const server = createAcpServer({ prepared, logger, extraTools: dropIns?.tools ?? [], env });
    const connection = server.app.connect(acp.ndJsonStream(options.output, options.input));
    logger.info('acp ready', {
      agent: settings.agent.id,
      provider: prepared.model.provider,
      model: prepared.model.modelId,
      mode: settings.permissionMode,
      journal: settings.journalPath,
    });
    await connection.closed;
    logger.info('acp connection closed');
    await server.close();
  } finally {
    await dropIns?.close();
    await prepared.close();
  }
}
