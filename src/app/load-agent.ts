import type { RunFlags } from './settings.ts';
import { resolveSettings } from './settings.ts';
import { createLogger, type Logger } from '../util/logger.ts';
import { prepareAgent, type PreparedAgent, type PrepareOptions } from './prepare.ts';

/** What `acx run` takes as flags, as options: model, home, replay, permission mode, harness, trust. */
export type LoadAgentOptions = Omit<RunFlags, 'agent' | 'param' | 'mcp' | 'allowCartridgeEnv'> & {
  /** Model parameters as `name=value` (as `--param`). */
  params?: string[];
  /** Extra MCP servers (as `--mcp`). */
  mcp?: string[];
  /** Cartridges: host variables its MCP drop-ins may expand. */
  allowCartridgeEnv?: string[];
  /** Where settings (ACX_*, keys) are read; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Default: logfmt to stderr at the library's level (ACX_LOG_LEVEL, else warnings and errors). */
  logger?: Logger;
} & Pick<PrepareOptions, 'hooks' | 'guardrails'>;

/**
 * An agent directory, a `.acx` cartridge or "default" (the config home's own agent), ready to
 * run from a library exactly as `acx run` runs it: the same settings, trust verdict and contract
 * negotiation (a refused cartridge throws before anything is written), memory, tools and harness.
 * `close()` ends the agent's MCP servers and sessions and writes the cartridge's SAVE zone.
 * `hooks` and `guardrails` go on the agent; a cartridge's guardrail roles are bound to the
 * guardrails given (by name and kind) in its negotiation.
 */
export async function loadAgent(agent: string, options: LoadAgentOptions = {}): Promise<PreparedAgent> {
  const { env, logger = createLogger(), params, hooks, guardrails, ...flags } = options;
  const settings = await resolveSettings({ ...flags, agent, ...(params ? { param: params } : {}) }, { logger, ...(env ? { env } : {}) });
  // A library's agent may serve a chat, whose resume GET reads its kept streams.
  return prepareAgent(settings, { logger, keepStreams: true, ...(env ? { env } : {}), ...(hooks ? { hooks } : {}), ...(guardrails ? { guardrails } : {}) });
}
