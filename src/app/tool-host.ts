import { resolveSettings, type ResolvedSettings, type RunFlags } from './settings.ts';
import { gateByPermissionMode, modeAllows, type PermissionMode } from '../tools/permission.ts';
import type { Tool } from '../tools/tool.ts';
import { AcxError, ConfigError, HarnessCapabilityUnsupportedError } from '../core/errors.ts';
import type { Logger } from '../util/logger.ts';
import { type AgentMemory, openAgentMemory } from './memory-binding.ts';
import type { ServedPrompt } from '../mcp/prompts.ts';
import type { ServedMemory } from '../mcp/resources.ts';
import { skillPrompts } from './skills.ts';
import type { Harness } from '../harness/harness.ts';
import {
  activateCartridgeTools,
  assembleAgentTools,
  buildModel,
  createSubAgentEngine,
  engineHarnessOptions,
  standingInstructions,
} from './prepare.ts';

/**
 * An agent's host tools, served to a loop that is not acx's (`acx mcp`): the same assembly,
 * policy and memory a run of that agent uses, so the list is what `acx resolved-config` reports.
 *
 * Over MCP acx has nobody to ask, so the permission mode decides alone: a call it would pause
 * for approval is refused with a tool error that names `--permission-mode allow-all` — which
 * hands that decision to the MCP client, whose user sees the tools' annotations.
 *
 * Serving needs no model. dispatch builds its sub-agent's model on its first call, and refuses
 * that call, saying what to set, when none was chosen.
 *
 * Beside the tools, what else a client may use: the agent's skills as prompts, its standing
 * instructions, and its memory records (read-only; absent for a module provider, whose records
 * are its own business).
 */
export interface AgentToolHost {
  settings: ResolvedSettings;
  /** Every tool the permission mode would ask about has `needsApproval` set. */
  tools: Tool[];
  /** The agent's skills, as prompts. */
  prompts: ServedPrompt[];
  /** The standing instructions a run of the agent starts with. */
  instructions: string;
  memory?: ServedMemory;
  /** Answers a call that needs approval: always a refusal, thrown with the reason and what to do. */
  approve(call: { tool: Tool }): Promise<boolean>;
  close(): Promise<void>;
}

export async function openAgentToolHost(flags: RunFlags, options: { logger: Logger; env?: NodeJS.ProcessEnv }): Promise<AgentToolHost> {
  const { logger } = options;
  // Serving needs no model: settings.model is null when none is chosen, and dispatch says so.
  const settings = await resolveSettings(flags, { env: options.env ?? process.env, logger });
  const memory = await openAgentMemory(settings, logger, { env: options.env ?? process.env });
  const dispatchHarness = subAgentsOnDemand(settings, memory, settings.model !== null, logger);
  const close = async () => {
    await dispatchHarness.close?.();
    await memory.close();
  };
  try {
    const instructions = standingInstructions(settings, logger);
    const toolset = await assembleAgentTools(settings, {
      memory,
      logger,
      // The agent's MCP drop-ins are not re-served: a client reaches those servers itself.
      connectMcp: false,
      createWorkspace: true,
      dispatchHarness,
      instructions: () => instructions,
    });
    if (toolset.mcpConfigured.length > 0) logger.info('mcp drop-ins not served', { servers: toolset.mcpConfigured.join(','), reason: 'a client connects to those servers itself' });
    if (settings.cartridge) await activateCartridgeTools(settings, toolset, memory.cartridge!, undefined, logger);
    const tools = gateByPermissionMode(toolset.tools, settings.permissionMode);
    const refused = tools.filter((tool) => tool.needsApproval).map((tool) => tool.name);
    if (refused.length > 0) logger.info('mcp calls refused under this permission mode', { mode: settings.permissionMode, tools: refused.join(',') });
    return {
      settings,
      tools,
      prompts: skillPrompts(settings.definition?.skills ?? []),
      instructions,
      ...(memory.sqlite ? { memory: memory.sqlite.store } : {}),
      approve: async ({ tool }) => {
        throw approvalRefusal(tool, settings.permissionMode);
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** Why a call that needs approval cannot run over MCP, and what would let it. */
export function approvalRefusal(tool: Pick<Tool, 'name' | 'kind'>, mode: PermissionMode): AcxError {
  if (modeAllows(mode, tool.kind)) {
    // The tool itself asks for approval on every call, whatever the mode.
    return new AcxError('mcp-needs-approval', `${tool.name} asks the host for approval before every call, and acx mcp has nobody to ask, so it cannot run here.`, {
      hint: 'Run the agent with acx run or acx chat, where its approvals can be answered.',
    });
  }
  return new AcxError('mcp-needs-approval', `${tool.name} is a "${tool.kind}" tool, which permission mode ${mode} runs only after approval, and acx mcp has nobody to ask.`, {
    hint: 'Restart acx mcp with --permission-mode allow-all (or ACX_PERMISSION_MODE=allow-all) to leave that decision to the MCP client.',
  });
}

/**
 * dispatch's sub-agents, on the agent's engine, built on the first call: no model is resolved
 * (and no key read) until a client actually dispatches.
 */
function subAgentsOnDemand(settings: ResolvedSettings, memory: AgentMemory, modelChosen: boolean, logger: Logger): Harness {
  let engine: Promise<Harness> | undefined;
  const build = async (): Promise<Harness> => {
    if (settings.harness !== 'engine') {
      throw new HarnessCapabilityUnsupportedError(`Under acx mcp, dispatch runs its sub-agents on acx's engine; the ${settings.harness} harness is not used here.`, {
        hint: 'Start acx mcp without ACX_HARNESS to let dispatch run.',
      });
    }
    if (!modelChosen) {
      throw new ConfigError('dispatch runs a sub-agent, which needs a model, and acx mcp was started without one.', {
        hint: 'Restart acx mcp with --model provider:id (or ACX_MODEL, or "model" in agent.json); --replay FILE runs it offline.',
      });
    }
    return createSubAgentEngine(engineHarnessOptions(settings, await buildModel(settings, logger), memory, logger), settings);
  };
  return {
    id: 'engine',
    openSession(config, options) {
      engine ??= build().catch((error: unknown) => {
        engine = undefined;
        throw error;
      });
      return engine.then((harness) => harness.openSession(config, options));
    },
    async close() {
      const built = await engine?.catch(() => undefined);
      await built?.close?.();
    },
  };
}
