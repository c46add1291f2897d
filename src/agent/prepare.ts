import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { composeCharter } from '../config/charter.ts';
import { reconcileIfUpgraded } from '../config/install.ts';
import { resolveSettings, type ResolvedSettings, type RunFlags } from '../config/settings.ts';
import { createSqliteMemoryProvider } from '../memory/provider.ts';
import { createRecordingModel, createReplayModel } from '../model/cassette.ts';
import { fromLanguageModel, type ResolvedModel, resolveModel } from '../model/providers.ts';
import type { Tool } from '../tools/tool.ts';
import { ACX_VERSION } from '../cli/version.ts';
import { AcxError, ConfigError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { type Activation, activateCartridge, contractFacing, modelFacts } from './boot-cartridge.ts';
import { type CartridgeMemoryProvider, createCartridgeMemoryProvider } from './cartridge-memory.ts';
import { createDispatchTool } from './dispatch.ts';
import { createEngineHarness } from './engine-harness.ts';
import { HarnessAgent } from './harness-agent.ts';
import type { Harness } from './harness.ts';
import { composeInstructions } from './skills.ts';
import { assembleToolset, type Toolset } from './toolset.ts';

/**
 * Turns resolved settings into a running agent: the model (real, recorded or replayed), the
 * memory provider, the tools (policy-checked), the standing instructions, and the native
 * engine harness.
 */
export interface PreparedAgent {
  agent: HarnessAgent;
  settings: ResolvedSettings;
  model: ResolvedModel;
  toolset: Toolset;
  instructions: string;
  /** For a cartridge: the accepted handshake (descriptor, whether it was persisted). */
  activation?: Activation;
  close(): Promise<void>;
}

export async function buildModel(settings: ResolvedSettings): Promise<ResolvedModel> {
  if (settings.replay) {
    return fromLanguageModel(createReplayModel(settings.replay), {
      provider: settings.model.provider.split('.')[0]!,
      ...(settings.model.cacheMode ? { cacheMode: settings.model.cacheMode } : {}),
    });
  }
  const resolved = await resolveModel({
    spec: settings.model.spec!,
    ...(settings.model.surface ? { surface: settings.model.surface } : {}),
    ...(settings.model.baseURL ? { baseURL: settings.model.baseURL } : {}),
  });
  if (!settings.record) return resolved;
  return { ...resolved, model: createRecordingModel(resolved.model, settings.record) };
}

/** Seed memory records from the agent directory: memory/*.json holding {key, value} or arrays of them. */
export function seedRecords(memoryDir: string | undefined): Array<{ key: string; value: string }> {
  if (!memoryDir || !existsSync(memoryDir)) return [];
  const records: Array<{ key: string; value: string }> = [];
  for (const file of readdirSync(memoryDir).filter((f) => f.endsWith('.json')).sort()) {
    const path = join(memoryDir, file);
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(path, 'utf8'));
    } catch (error) {
      throw new ConfigError(`${path} is not valid JSON: ${(error as Error).message}`);
    }
    for (const item of Array.isArray(parsed) ? parsed : [parsed]) {
      const record = item as { key?: unknown; value?: unknown };
      if (typeof record.key !== 'string' || typeof record.value !== 'string') {
        throw new ConfigError(`${path}: each memory record needs string "key" and "value".`);
      }
      records.push({ key: record.key, value: record.value });
    }
  }
  return records;
}

/** The standing instructions: the agent directory's prompts, else the config home's charter. */
export function standingInstructions(settings: ResolvedSettings, logger: Logger): string {
  const dir = settings.agentDir;
  if (dir) return composeInstructions({ systemPrompt: dir.systemPrompt, initialize: dir.initialize, skills: dir.skills });
  return composeCharter(settings.configHome, { logger }).text;
}

export async function prepareAgent(settings: ResolvedSettings, options: { logger: Logger }): Promise<PreparedAgent> {
  const { logger } = options;
  reconcileIfUpgraded({ configHome: settings.configHome, version: ACX_VERSION, logger });
  const model = await buildModel(settings);
  const cartridge = settings.cartridge;
  const workspace = resolve(settings.workspace ?? join(settings.stateDir, 'workspace'));
  const memory = cartridge
    ? createCartridgeMemoryProvider({
        cartridgePath: cartridge.path,
        indexPath: settings.memoryPath,
        saltPath: cartridge.saltPath,
        codebaseDir: workspace,
        logger,
      })
    : createSqliteMemoryProvider({ path: settings.memoryPath, logger });
  if (!cartridge) {
    for (const record of seedRecords(settings.agentDir?.memoryDir)) {
      if (!memory.store.get(record.key)) memory.store.write(record.key, record.value, { source: 'agent-seed' });
    }
  }
  let instructions = standingInstructions(settings, logger);
  const harnessOptions = {
    model,
    journalPath: settings.journalPath,
    ...(settings.contextTokens !== null ? { contextTokens: settings.contextTokens } : {}),
    params: settings.modelParams,
    retries: settings.retries,
    memory,
    logger,
  };
  const dispatchHarness = createEngineHarness({ ...harnessOptions, maxSteps: Math.max(1, Math.floor(settings.maxSteps / 2)) });
  const toolset = await assembleToolset({
    settings,
    memory,
    logger,
    connectMcp: true,
    dispatch: (tools: () => readonly Tool[]) =>
      createDispatchTool({
        harness: dispatchHarness,
        tools,
        instructions,
        agentId: settings.agent.id,
      }),
    ...(cartridge ? cartridgeToolsetOptions(settings, memory as CartridgeMemoryProvider, logger) : {}),
  });
  let activation: Activation | undefined;
  if (cartridge) {
    // The handshake: refusal (or a failed preflight) stops here with nothing activated.
    try {
      activation = activateCartridge({
        rom: cartridge.rom,
        tools: toolset.tools,
        mcpServers: toolset.mcpServers,
        model: modelFacts({ modelContextWindow: model.contextWindowTokens, hostContextTokens: cartridge.hostContextTokens }),
        logger,
      });
    } catch (error) {
      await toolset.close();
      await memory.close();
      throw error;
    }
    (memory as CartridgeMemoryProvider).load(cartridge.rom.memory);
    if (activation.notice) instructions = `${instructions}\n\n${activation.notice}`;
    for (const note of cartridge.policy.notApplied) logger.info('cartridge policy not applied', { note });
  }
  const harness = createEngineHarness({ ...harnessOptions, maxSteps: settings.maxSteps });
  const agent = new HarnessAgent({
    harness,
    id: settings.agent.id,
    instructions: [instructions, ...toolset.notices].join('\n\n'),
    tools: toolset.tools,
    permissionMode: settings.permissionMode,
    speech: settings.speech,
  });
  return {
    agent,
    settings,
    model,
    toolset,
    instructions,
    ...(activation ? { activation } : {}),
    async close() {
      await toolset.close();
      await harness.close?.();
      await dispatchHarness.close?.();
      await memory.close();
    },
  };
}

/**
 * What a cartridge adds to the host tool set: the role tools (add_memory, search_memory), built-ins
 * in their contract-facing shape, and the ROM's MCP drop-ins when the cartridge is trusted.
 */
function cartridgeToolsetOptions(settings: ResolvedSettings, memory: CartridgeMemoryProvider, logger: Logger) {
  const cartridge = settings.cartridge!;
  const wanted = settings.agentDir?.manifest.tools;
  const roles = memory.roleTools();
  if (cartridge.rom.mcp.length > 0 && !cartridge.romMcpAllowed) {
    logger.warn('cartridge mcp drop-ins not started', {
      servers: cartridge.rom.mcp.map((c) => c.name).join(','),
      reason: `the cartridge is ${cartridge.verify.verdict}; ROM-declared servers start only for trusted cartridges (add its key to the trust registry)`,
    });
  }
  return {
    extraTools: !wanted || wanted.includes('memory') ? [roles['acx:memory.write'], roles['acx:search']] : [],
    extraMcpConfigs: cartridge.romMcpAllowed ? cartridge.rom.mcp : [],
    adaptBuiltin: contractFacing,
  };
}

/** A harness that is never asked to run: the dispatch tool only needs to be listed. */
const listingHarness: Harness = {
  id: 'handshake',
  openSession: async () => {
    throw new AcxError('not-running', 'This tool set was assembled for a handshake and cannot run turns.');
  },
};

export interface CartridgeHost {
  settings: ResolvedSettings;
  /** What `acx run` would offer the cartridge: built-ins (contract-facing), role tools, MCP drop-ins. */
  tools: Tool[];
  mcpServers: Toolset['mcpServers'];
  close(): Promise<void>;
}

/**
 * The host `acx run` would boot a cartridge on, assembled the same way but without a model, a
 * journal or memory writes: for `acx handshake FILE.acx`. Trust is checked (tampered refused);
 * portable cartridges may be negotiated since nothing is activated.
 */
export async function describeCartridgeHost(flags: RunFlags, options: { logger: Logger; env?: NodeJS.ProcessEnv }): Promise<CartridgeHost> {
  const env = options.env ?? process.env;
  // The model is irrelevant to the tool set; a placeholder keeps resolveSettings from asking for one.
  const settings = resolveSettings({ ...flags, allowPortable: true, model: flags.model ?? env.ACX_MODEL ?? 'openai:handshake' }, { env, logger: options.logger });
  const cartridge = settings.cartridge;
  if (!cartridge) throw new ConfigError(`${flags.agent} is not a cartridge.`);
  const memory = createCartridgeMemoryProvider({
    cartridgePath: cartridge.path,
    indexPath: settings.memoryPath,
    saltPath: cartridge.saltPath,
    codebaseDir: resolve(settings.workspace ?? join(settings.stateDir, 'workspace')),
    logger: options.logger,
  });
  const toolset = await assembleToolset({
    settings,
    memory,
    logger: options.logger,
    connectMcp: true,
    dispatch: (tools) => createDispatchTool({ harness: listingHarness, tools, instructions: '', agentId: settings.agent.id }),
    ...cartridgeToolsetOptions(settings, memory, options.logger),
  });
  return {
    settings,
    tools: toolset.tools,
    mcpServers: toolset.mcpServers,
    async close() {
      await toolset.close();
      await memory.close();
    },
  };
}
