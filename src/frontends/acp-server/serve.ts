import * as acp from '@agentclientprotocol/sdk';
import type { PreparedAgent } from '../../app/prepare.ts';
import { type ResolvedSettings, type RunFlags, resolveSettings } from '../../app/settings.ts';
import { noModelSelected, providerApiKey } from '../../model/providers.ts';
import { AcxError, ConfigError } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';
import { scrubSecrets } from '../../util/scrub.ts';
import { acpAgentApp, type AcpHandlers } from './agent-app.ts';
import { createUnconfiguredAcpServer, unconfiguredHandlers } from './unconfigured.ts';

/**
 * `acx acp`: resolve the agent exactly as `acx run` does (its MCP drop-ins — the agent
 * directory's mcp/ and `--mcp` — are connected once, by preparing it), then serve ACP on the
 * given streams until the client hangs up.
 *
 * An editor waits for the answer to `initialize` before it shows the agent, so on acx's engine
 * that answer comes from the settings alone; the agent (engine, model client, tools, memory, MCP
 * servers) is prepared right after it, in the background, and every session method waits for it.
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
  const settings = await resolveSettings(flags, { logger, env });
  // What preparing would refuse for lack of configuration (no model, no key), known now: such an
  // agent answers initialize with what to set and loads nothing more.
  const problem = unpreparedProblem(settings, env);
  if (problem) {
    await serveUnconfigured(problem, settings, options);
    return;
  }
  if (settings.harness !== 'engine') {
    // An ACP harness checks its profile's credentials while preparing; prepared first, so a
    // missing one is still what initialize reports.
    const { prepareAgent } = await import('../../app/prepare.ts');
    (await import('../../app/upgrade-on-run.ts')).reconcileBeforeRun(settings, logger);
    let prepared: PreparedAgent;
    try {
      prepared = await prepareAgent(settings, { logger });
    } catch (error) {
      if (!ConfigError.isInstance(error)) throw error;
      await serveUnconfigured(error, settings, options);
      return;
    }
    const { initializeFacts } = await import('./server.ts');
    const agent = preparedHandlers(settings, options, prepared);
    await serveHandlers(acpAgentApp({ facts: initializeFacts(prepared), logger, handlers: agent.handlers }), agent, options);
    return;
  }
  const agent = preparedHandlers(settings, options);
  const facts = { agentName: settings.agent.name, journal: true, images: settings.model?.vision ?? true };
  const app = acpAgentApp({ facts, logger, handlers: agent.handlers, onInitialized: () => setImmediate(() => void agent.handlers().catch(() => {})) });
  await serveHandlers(app, agent, options);
}

/** The configuration problems prepareAgent would throw for acx's engine, found without loading it. */
function unpreparedProblem(settings: ResolvedSettings, env: NodeJS.ProcessEnv): ConfigError | undefined {
  if (settings.harness !== 'engine') return undefined;
  if (!settings.model) return noModelSelected();
  if (settings.replay) return undefined;
  try {
    providerApiKey(settings.model.provider, env);
    return undefined;
  } catch (error) {
    if (ConfigError.isInstance(error)) return error;
    throw error;
  }
}

async function serveUnconfigured(problem: ConfigError, settings: ResolvedSettings, options: ServeAcpOptions): Promise<void> {
  const server = createUnconfiguredAcpServer({ problem, agentName: settings.agent.name, logger: options.logger });
  await server.app.connect(acp.ndJsonStream(options.output, options.input)).closed;
  options.logger.info('acp connection closed');
}

interface PreparingAgent {
  /** The session handlers, prepared on the first call (the same promise after it, until a preparation fails). */
  handlers(): Promise<AcpHandlers>;
  /** Refuses any later preparation, then closes what was prepared once one still running has settled. */
  close(): Promise<void>;
}

function preparedHandlers(settings: ResolvedSettings, options: ServeAcpOptions, given?: PreparedAgent): PreparingAgent {
  const { logger } = options;
  const env = options.env ?? process.env;
  let prepared: PreparedAgent | undefined = given;
  let handlers: Promise<AcpHandlers> | undefined;
  // Set by close(): stdin may end in the same read as initialize, before the background
  // preparation starts; started then, it would spawn MCP servers nothing closes.
  let closed = false;
  let failed = false;
  const prepare = async (): Promise<AcpHandlers> => {
    if (!prepared) {
      // After a failure the agent's files are read again: the settings hold their bytes.
      if (failed) settings = await resolveSettings(options.flags, { logger, env });
      const { prepareAgent } = await import('../../app/prepare.ts');
      (await import('../../app/upgrade-on-run.ts')).reconcileBeforeRun(settings, logger);
      prepared = await prepareAgent(settings, { logger });
    }
    const { createAcpHandlers } = await import('./server.ts');
    const ready = createAcpHandlers({ prepared, logger, env });
    logger.info('acp ready', {
      agent: settings.agent.id,
      provider: prepared.model.provider,
      model: prepared.model.modelId,
      mode: settings.permissionMode,
      journal: settings.journalPath,
    });
    return ready;
  };
  // A failed preparation is not kept: the next session method tries again, so a file the user
  // fixes (or a transient file-system error) recovers without restarting the editor's agent.
  const attempt = (): Promise<AcpHandlers> =>
    prepare().catch((error: unknown) => {
      handlers = undefined;
      failed = true;
      // Something the user must fix (a key, a skill, a memory provider module): initialize was
      // answered, so the session method says what, instead of the process ending under the editor.
      if (AcxError.isInstance(error)) return unconfiguredHandlers(error, logger);
      logger.error('acp agent not prepared', { error: scrubSecrets(error instanceof Error ? (error.stack ?? error.message) : String(error)) });
      throw error;
    });
  return {
    handlers: () => (closed ? Promise.reject(new Error('acx acp is closing')) : (handlers ??= attempt())),
    async close() {
      closed = true;
      try {
        await (await handlers?.catch(() => undefined))?.close();
      } finally {
        // The prepared agent owns its MCP connections (the agent's mcp/ drop-ins and --mcp).
        await prepared?.close();
      }
    },
  };
}

async function serveHandlers(app: acp.AgentApp, agent: PreparingAgent, options: ServeAcpOptions): Promise<void> {
  try {
    await app.connect(acp.ndJsonStream(options.output, options.input)).closed;
    options.logger.info('acp connection closed');
  } finally {
    await agent.close();
  }
}
