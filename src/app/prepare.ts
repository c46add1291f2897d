import type { LanguageModelV4 } from '@ai-sdk/provider';
import { type ACPHarnessName, type HarnessName, resolveHarnessName } from '../harness/acp/profiles/names.ts';
import type { Sandbox } from '../harness/acp/sandbox.ts';
import { composeCharter } from './charter.ts';
import { resolveSettings, type ResolvedSettings, type RunFlags } from './settings.ts';
import { createRecordingModel, createReplayModel } from '../model/cassette.ts';
import { fromLanguageModel, noModelSelected, parseModelSpec, PROVIDERS, type ResolvedModel, resolveModel } from '../model/providers.ts';
import type { ReasoningEffort } from '../model/reasoning.ts';
import type { Tool } from '../tools/tool.ts';
import { AcxError, ConfigError, HarnessCapabilityUnsupportedError } from '../core/errors.ts';
import type { Logger } from '../util/logger.ts';
import type { Activation } from './boot-cartridge.ts';
import type { CartridgeMemoryProvider } from './cartridge-memory.ts';
import { type AgentMemory, openAgentMemory } from './memory-binding.ts';
import { agentWorkspace } from './workspace.ts';
import { createEngineHarness, type EngineHarnessOptions } from '../harness/engine-harness.ts';
import { openJournalStore } from '../store/open-journal.ts';
import { HarnessAgent, type HarnessAgentSettings } from '../harness/harness-agent.ts';
import type { AgentGuardrails } from '../harness/guards.ts';
import type { Harness, HarnessSession } from '../harness/harness.ts';
import { composeInstructions } from './skills.ts';
import type { OutputSink } from './builtins.ts';
import { type AgentPlatform, assembleToolset, type Toolset, type ToolsetOptions } from './toolset.ts';
import { guardedDirectories } from './guarded.ts';
import { requiredServersDown } from '../mcp/required.ts';

/**
 * Turns resolved settings into a running agent: the model (real, recorded or replayed), the
 * memory provider, the tools (policy-checked), the standing instructions, and the harness that
 * runs the turns — acx's native engine, or an ACP coding agent (`--harness NAME`) that gets the
 * same instructions, skills and host tools (served to it over MCP).
 */
export interface PreparedAgent {
  agent: HarnessAgent;
  settings: ResolvedSettings;
  /** Which harness runs the turns: `engine` or an ACP profile name (`claude-code`, `codex`, …). */
  harness: HarnessName;
  /** The engine's model; for an ACP harness, a stand-in naming the agent's model (never called). */
  model: ResolvedModel;
  toolset: Toolset;
  instructions: string;
  /** For a cartridge: the accepted handshake (descriptor, whether it was persisted). */
  activation?: Activation;
  /**
   * The agent's native engine on another model (`provider:model-id`), or on its own model with
   * another reasoning effort, for a front end that lets the user switch them. Absent on an ACP
   * harness and with --replay/--record (a cassette holds one model). The caller closes each
   * harness it gets.
   */
  engineOn?: (spec: string, tuning?: { reasoning?: ReasoningEffort }) => Promise<{ harness: Harness; model: ResolvedModel }>;
  close(): Promise<void>;
}

/** `env`: where the provider's key is read (default process.env), as the settings were resolved from it. */
export async function buildModel(settings: ResolvedSettings, logger?: Logger, env?: NodeJS.ProcessEnv): Promise<ResolvedModel> {
  const chosen = settings.model;
  if (!chosen) throw noModelSelected();
  if (settings.replay) {
    return fromLanguageModel(createReplayModel(settings.replay), {
      provider: chosen.provider.split('.')[0]!,
      vision: chosen.vision,
      ...(chosen.cacheMode ? { cacheMode: chosen.cacheMode } : {}),
    });
  }
  const resolved = await resolveModel({
    spec: chosen.spec!,
    ...(chosen.surface ? { surface: chosen.surface } : {}),
    ...(chosen.baseURL ? { baseURL: chosen.baseURL } : {}),
    vision: chosen.vision,
    ...(env ? { env } : {}),
    // No configured ceiling: ask the provider (those that say), before the engine's floor.
    ...(settings.contextTokens === null ? { discoverContextWindow: { ...(logger ? { logger } : {}) } } : {}),
  });
  if (!settings.record) return resolved;
  return { ...resolved, model: createRecordingModel(resolved.model, settings.record) };
}

/** The standing instructions: the agent directory's prompts, else the config home's charter. */
export function standingInstructions(settings: ResolvedSettings, logger: Logger, sections: readonly string[] = []): string {
  const definition = settings.definition;
  if (definition && sections.length === 0) return composeInstructions({ systemPrompt: definition.systemPrompt, initialize: definition.initialize, skills: definition.skills });
  // A front end's sections go after initialize.md and before the system prompt (the seed's timeline brief order).
  if (definition) return composeInstructions({ initialize: definition.initialize, skills: definition.skills, extra: [...sections, definition.systemPrompt ?? ''] });
  return [...sections, composeCharter(settings.configHome, { logger, fallbackSystemPrompt: settings.systemPromptFallback }).text].filter(Boolean).join('\n\n');
}

export interface PrepareOptions {
  logger: Logger;
  /** The harness to run on; default `settings.harness` when present, else ACX_HARNESS, else `engine`. */
  harness?: HarnessName;
  /** Where ACX_HARNESS and the ACP profile's credentials are read; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** ACP harnesses: where the agent process runs; default a local sandbox working in the agent's workspace. */
  sandbox?: Sandbox;
  /** Tools the front end adds on top of what agent.json lists (a timeline wake's platform tools), through the same policy. */
  extraTools?: readonly Tool[];
  /**
   * Sections the front end adds to the standing instructions, before the system prompt (a timeline
   * wake's tool manifest and dashboard). A function is given the agent's tools once the tool set is
   * assembled (every active tool: built-ins, memory, media, plugins, MCP), so a manifest names them all.
   */
  briefSections?: readonly string[] | ((tools: readonly Tool[]) => readonly string[] | Promise<readonly string[]>);
  /** Where code_execution's outputs go (a timeline wake: assets on the timeline); default the workspace. */
  keepOutput?: OutputSink;
  /** The platform a timeline wake runs on: its media tools read assets by uuid, its plugins get it in their context. */
  platform?: AgentPlatform;
  /** MCP connections kept between a long-lived process's events (see ToolsetOptions.keptMcp). */
  keptMcp?: ToolsetOptions['keptMcp'];
  /**
   * Keep streamed turns for readers that resume them (a chat server's resume GET: see
   * HarnessAgentSettings.streams). Default false: the CLI's own front ends have no such reader.
   */
  keepStreams?: boolean;
  /** The agent's hooks (docs/hooks.md). */
  hooks?: HarnessAgentSettings['hooks'];
  /** The agent's guardrails; a cartridge's guardrail roles are bound to them by name and kind. */
  guardrails?: AgentGuardrails;
}

/** The harness a run asked for: an explicit option, a `harness` the settings carry, ACX_HARNESS. */
export function chosenHarness(settings: ResolvedSettings, options: Pick<PrepareOptions, 'harness' | 'env'> = {}): HarnessName {
  if (options.harness) return resolveHarnessName(options.harness, {});
  const carried = settings.harness;
  return resolveHarnessName(carried, options.env ?? process.env);
}

export async function prepareAgent(settings: ResolvedSettings, options: PrepareOptions): Promise<PreparedAgent> {
  return (await prepareUnbriefedAgent(settings, options)).brief(options.briefSections);
}

/**
 * An agent prepared but for its standing instructions: its model, memory, tools and harness are
 * ready, and `brief` composes the instructions with the front end's sections and makes the agent.
 * A front end that learns its sections later than it could prepare (a warm timeline wake: the
 * platform's dashboard, read once its event arrives) prepares first and briefs then.
 */
export interface UnbriefedAgent {
  /** Every active tool (built-ins, memory, media, plugins, MCP, the front end's): what a brief may list. */
  readonly tools: readonly Tool[];
  /** The agent, its instructions composed with `sections` (PrepareOptions.briefSections). Once. */
  brief(sections?: PrepareOptions['briefSections']): Promise<PreparedAgent>;
  /** Closes what was opened, for an agent that is never briefed. */
  close(): Promise<void>;
}

/** prepareAgent without its brief (`options.briefSections` is not read): see UnbriefedAgent. */
export async function prepareUnbriefedAgent(settings: ResolvedSettings, options: Omit<PrepareOptions, 'briefSections'>): Promise<UnbriefedAgent> {
  const { logger } = options;
  const env = options.env ?? process.env;
  const harnessName = chosenHarness(settings, options);
  const onACP = harnessName !== 'engine';
  // The ACP client (profiles, sandbox, process launch) loads only for a run that uses it: a wake
  // pays its start-up on every event.
  const acp = onACP ? await loadACP() : undefined;
  if (acp) checkACPRun(settings, harnessName, env, acp.checkProfileCredentials);
  const acpModel = onACP ? acpModelId(settings) : undefined;
  const model = onACP ? harnessModelStandIn(harnessName, acpModel) : await buildModel(settings, logger, env);
  const cartridge = settings.cartridge;
  const memory = await openAgentMemory(settings, logger, { env });
  // Composed once the tools are known (a brief may list them); dispatch's sub-agents read it when they start.
  let instructions = '';
  const harnessOptions = engineHarnessOptions(settings, model, memory, logger);
  // On an ACP harness the agent process runs its own loop and model: sub-agents (dispatch) are
  // further sessions of the same agent. A session named with --session is kept (the agent's own
  // history lives in its sandbox home) and reopened by the next run; the others end with the run.
  const acpHarness = acp
    ? closingSessions(
        await acp.createProfileHarness(harnessName as ACPHarnessName, {
          hostEnv: env,
          logger,
          // Its turns are journaled with the agent's others: one interrupted by a crash is taken up by the next run of the session.
          journal: openJournalStore({ journalPath: settings.journalPath, ...(settings.store ? { store: settings.store, agentId: settings.storeScope } : {}) }),
          sandbox:
            options.sandbox ??
            acp.createLocalSandbox({
              workdir: agentWorkspace(settings),
              guarded: guardedDirectories(settings),
              env, // ACX_ACP_SANDBOX=none turns the bubblewrap sandbox off
              ...(settings.sessionId ? { sessionsRoot: acp.acpSessionsRoot(settings.stateDir) } : {}),
            }),
        }),
        settings.sessionId ?? undefined,
      )
    : undefined;
  const dispatchHarness = acpHarness ?? createSubAgentEngine(harnessOptions, settings);
  const toolset = await assembleAgentTools(settings, {
    memory,
    logger,
    connectMcp: true,
    dispatchHarness,
    instructions: () => instructions,
    ...(options.extraTools ? { extraTools: options.extraTools } : {}),
    ...(options.keepOutput ? { keepOutput: options.keepOutput } : {}),
    ...(options.platform ? { platform: options.platform } : {}),
    ...(options.keptMcp ? { keptMcp: options.keptMcp } : {}),
  });
  // Nothing is started after a failure here: what was opened is closed again before the error goes up.
  const giveUp = async (error: unknown): Promise<never> => {
    await toolset.close();
    await memory.close();
    await dispatchHarness.close?.();
    throw error;
  };
  const serversDown = requiredServersDown(toolset.mcpServers);
  if (serversDown) await giveUp(serversDown);
  let activation: Activation | undefined;
  if (cartridge) activation = await activateCartridgeTools(settings, toolset, memory.cartridge!, model.contextWindowTokens, logger, options.guardrails).catch(giveUp);
  for (const note of settings.loopPolicy?.notApplied ?? []) logger.info('loop policy not applied', { note });
  // The provider's server-side built-ins run inside the agent's own model calls (not its sub-agents').
  const builtins = toolset.builtins.builtins;
  const harness = acpHarness ?? createEngineHarness({ ...harnessOptions, maxSteps: settings.maxSteps, ...(builtins ? { builtins } : {}) });
  if (onACP) {
    logger.info('harness', { harness: harnessName, model: acpModel ?? 'agent default', tools: toolset.tools.length });
    logger.info('harness settings not applied', { harness: harnessName, note: 'max_steps and context_tokens govern the native engine; the ACP agent runs its own loop' });
  }
  const chosen = settings.model;
  const engineOn =
    onACP || !chosen || settings.replay || settings.record
      ? undefined
      : async (spec: string, tuning: { reasoning?: ReasoningEffort } = {}): Promise<{ harness: Harness; model: ResolvedModel }> => {
          const next = parseModelSpec(spec);
          // The surface and endpoint chosen for the current provider carry over to its other models.
          const sameProvider = next.provider === chosen.provider;
          const other = await buildModel({
            ...settings,
            model: { ...chosen, source: 'flag', spec, ...next, surface: sameProvider ? chosen.surface : null, baseURL: sameProvider ? chosen.baseURL : null, cacheMode: PROVIDERS[next.provider]!.cacheMode },
          }, logger, env);
          const tuned = tuning.reasoning ? { ...settings, modelParams: { ...settings.modelParams, reasoning: tuning.reasoning } } : settings;
          const harness = createEngineHarness({ ...engineHarnessOptions(tuned, other, memory, logger), maxSteps: settings.maxSteps, warnHeadroom: false });
          return { harness, model: other };
        };
  const close = async (): Promise<void> => {
    // Each part closed whatever the one before did: an MCP connection left open is a process.
    const closed = await Promise.allSettled([
      (async () => {
        await harness.close?.();
        if (dispatchHarness !== harness) await dispatchHarness.close?.();
      })(),
      toolset.close(),
      memory.close(),
    ]);
    const failed = closed.find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
  };
  let briefed = false;
  return {
    tools: toolset.tools,
    close,
    async brief(sections) {
      if (briefed) throw new TypeError('An unbriefed agent is briefed once.');
      briefed = true;
      // A brief that fails leaves nothing open: the harness too, made before it.
      const briefSections =
        typeof sections === 'function'
          ? await (async () => sections(toolset.tools))().catch(async (error: unknown) => {
              await close().catch(() => {});
              throw error;
            })
          : sections;
      instructions = standingInstructions(settings, logger, briefSections);
      if (activation?.notice) instructions = `${instructions}\n\n${activation.notice}`;
      const agent = new HarnessAgent({
        harness,
        id: settings.agent.id,
        instructions: [instructions, ...toolset.notices].join('\n\n'),
        tools: toolset.tools,
        permissionMode: settings.permissionMode,
        speech: settings.speech,
        ...(acpModel ? { model: acpModel } : {}),
        skills: (settings.definition?.skills ?? []).map(({ name, description, body }) => ({ name, description, body })),
        ...(options.keepStreams ? {} : { streams: false }),
        ...(options.hooks ? { hooks: options.hooks } : {}),
        ...(options.guardrails ? { guardrails: options.guardrails } : {}),
      });
      return {
        agent,
        settings,
        harness: harnessName,
        model,
        toolset,
        instructions,
        ...(activation ? { activation } : {}),
        ...(engineOn ? { engineOn } : {}),
        close,
      };
    },
  };
}

export { agentWorkspace };

/** What every engine harness of this agent shares: model, journal, limits, params, memory. */
export function engineHarnessOptions(settings: ResolvedSettings, model: ResolvedModel, memory: AgentMemory, logger: Logger): EngineHarnessOptions {
  return {
    model,
    journalPath: settings.journalPath,
    ...(settings.store ? { store: settings.store, agentId: settings.storeScope } : {}),
    ...(settings.contextTokens !== null ? { contextTokens: settings.contextTokens } : {}),
    ...(settings.loopPolicy?.stepResultBudget != null ? { stepResultBudget: settings.loopPolicy.stepResultBudget } : {}),
    params: settings.modelParams,
    retries: settings.retries,
    memory,
    logger,
  };
}

/** The engine dispatch's sub-agents run on: the agent's own engine with half its step budget. */
/** A sub-agent's step budget is half the parent's, so the parent's headroom check covers it. */
export function createSubAgentEngine(options: EngineHarnessOptions, settings: ResolvedSettings): Harness {
  return createEngineHarness({ ...options, maxSteps: Math.max(1, Math.floor(settings.maxSteps / 2)), warnHeadroom: false });
}

export interface AgentToolsOptions {
  memory: AgentMemory;
  logger: Logger;
  /** Connect the MCP drop-ins and offer their tools (false: report their names only). */
  connectMcp: boolean;
  /** Create the workspace the fs and execute tools work in; default `connectMcp`. */
  createWorkspace?: boolean;
  /** Runs dispatch's sub-agents; default a harness that refuses (the tool is only listed). */
  dispatchHarness?: Harness;
  /** The standing instructions dispatch's sub-agents start from (read when one starts). */
  instructions?: () => string;
  /** Tools the front end adds (see PrepareOptions.extraTools). */
  extraTools?: readonly Tool[];
  /** See PrepareOptions.keepOutput. */
  keepOutput?: OutputSink;
  /** See PrepareOptions.platform. */
  platform?: AgentPlatform;
  /** See PrepareOptions.keptMcp. */
  keptMcp?: ToolsetOptions['keptMcp'];
}

/**
 * The tools an agent gets — its built-ins under the policy, skills, a cartridge's role tools and
 * ROM drop-ins, MCP drop-ins (when connected), dispatch. The one assembly `acx run`, `chat`,
 * `wake`, `acp`, `mcp`, `handshake` and `resolved-config` share, so each lists the same tools.
 */
export async function assembleAgentTools(settings: ResolvedSettings, options: AgentToolsOptions): Promise<Toolset> {
  const { memory, logger } = options;
  const cartridgeOptions = settings.cartridge ? await cartridgeToolsetOptions(settings, memory, logger) : {};
  return assembleToolset({
    settings,
    memory,
    logger,
    connectMcp: options.connectMcp,
    createWorkspace: options.createWorkspace ?? options.connectMcp,
    ...(options.keepOutput ? { keepOutput: options.keepOutput } : {}),
    ...(options.platform ? { platform: options.platform } : {}),
    ...(options.keptMcp ? { keptMcp: options.keptMcp } : {}),
    dispatch: async () => {
      const [{ createDispatchTool }, { listingHarness }] = await Promise.all([import('./dispatch.ts'), import('./listing-harness.ts')]);
      return (tools: () => readonly Tool[]) =>
        createDispatchTool({ harness: options.dispatchHarness ?? listingHarness, tools, instructions: options.instructions ?? (() => ''), agentId: settings.agent.id });
    },
    ...mergeExtraTools(cartridgeOptions, options.extraTools),
  });
}

/** The cartridge's role tools and the front end's tools, both offered. */
function mergeExtraTools<T extends { extraTools?: readonly Tool[] }>(base: T, extra: readonly Tool[] | undefined): T {
  if (!extra || extra.length === 0) return base;
  return { ...base, extraTools: [...(base.extraTools ?? []), ...extra] };
}

/**
 * A cartridge's handshake over the assembled tools: refusal (or a failed preflight) throws with
 * nothing activated; on accept the ROM's memory records are loaded into the agent's memory.
 */
export async function activateCartridgeTools(
  settings: ResolvedSettings,
  toolset: Toolset,
  memory: CartridgeMemoryProvider,
  modelContextWindow: number | undefined,
  logger: Logger,
  guardrails?: AgentGuardrails,
): Promise<Activation> {
  const cartridge = settings.cartridge!;
  // The handshake (the contract's negotiation, its ajv) loads only for a cartridge.
  const { activateCartridge, modelFacts } = await import('./boot-cartridge.ts');
  const activation = activateCartridge({
    rom: cartridge.rom,
    tools: toolset.tools,
    mcpServers: toolset.mcpServers,
    model: modelFacts({ modelContextWindow, hostContextTokens: cartridge.hostContextTokens }),
    guardrails,
    logger,
  });
  await memory.load(cartridge.rom.memory);
  return activation;
}

/** What an ACP run cannot do, refused before anything starts. */
async function loadACP() {
  const [profiles, sandbox] = await Promise.all([import('../harness/acp/profiles/by-name.ts'), import('../harness/acp/sandbox.ts')]);
  return {
    checkProfileCredentials: profiles.checkProfileCredentials,
    createProfileHarness: profiles.createProfileHarness,
    createLocalSandbox: sandbox.createLocalSandbox,
    acpSessionsRoot: sandbox.acpSessionsRoot,
  };
}

function checkACPRun(
  settings: ResolvedSettings,
  name: HarnessName,
  env: NodeJS.ProcessEnv,
  checkProfileCredentials: (name: ACPHarnessName, env: NodeJS.ProcessEnv) => void,
): void {
  if (settings.replay || settings.record) {
    throw new HarnessCapabilityUnsupportedError(`--${settings.replay ? 'replay' : 'record'} works with the native engine only: the ${name} harness calls its own model.`, {
      hint: 'Drop --harness (or ACX_HARNESS) to replay a cassette, or point the agent at a local model server through its base-URL variable.',
    });
  }
  checkProfileCredentials(name as ACPHarnessName, env);
}

/**
 * The model to ask the ACP agent for: only one the user chose for this run (--model / ACX_MODEL),
 * as its model id without the provider prefix. agent.json's model is the engine's default and is
 * not forced on another agent, which then keeps its own default.
 */
function acpModelId(settings: ResolvedSettings): string | undefined {
  return settings.model?.source === 'flag' || settings.model?.source === 'env' ? settings.model.modelId : undefined;
}

/** A ResolvedModel naming the ACP agent's model for reports; acx never calls it. */
function harnessModelStandIn(name: HarnessName, modelId: string | undefined): ResolvedModel {
  const refuse = () => {
    throw new AcxError('harness-model', `The ${name} harness calls its own model; acx does not call it directly.`);
  };
  const id = modelId ?? 'default';
  const model = { specificationVersion: 'v4', provider: `acp.${name}`, modelId: id, supportedUrls: {}, doGenerate: refuse, doStream: refuse } as unknown as LanguageModelV4;
  return { model, provider: `acp:${name}`, modelId: id, surface: 'native', cacheMode: 'none', baseURL: undefined, contextWindowTokens: undefined, vision: true };
}

/**
 * When a run closes, its ACP sessions end: the agent process stops and, except for the session the
 * user named (kept to be reopened), the sandbox home goes. The working directory (the agent's
 * workspace) always stays.
 */
function closingSessions(harness: Harness, keptSessionId: string | undefined): Harness {
  const sessions = new Set<HarnessSession>();
  return {
    id: harness.id,
    async openSession(config, options) {
      const session = await harness.openSession(config, options);
      sessions.add(session);
      return session;
    },
    ...(harness.hasSession ? { hasSession: (sessionId: string) => harness.hasSession!(sessionId) } : {}),
    ...(harness.listSuspended ? { listSuspended: () => harness.listSuspended!() } : {}),
    async close() {
      await Promise.allSettled([...sessions].map((session) => (session.id === keptSessionId ? session.detach() : session.destroy())));
      sessions.clear();
      await harness.close?.();
    },
  };
}

/**
 * What a cartridge adds to the host tool set: the role tools (add_memory, search_memory), built-ins
 * in their contract-facing shape, and the ROM's MCP drop-ins when the cartridge is trusted.
 */
async function cartridgeToolsetOptions(settings: ResolvedSettings, memory: AgentMemory, logger: Logger) {
  const cartridge = settings.cartridge!;
  const { contractFacing } = await import('./boot-cartridge.ts');
  const wanted = settings.definition?.manifest.tools;
  const roles = memory.cartridge!.roleTools();
  if (cartridge.rom.mcp.length > 0 && !cartridge.romMcpAllowed) {
    logger.warn('cartridge mcp drop-ins not started', {
      servers: cartridge.rom.mcp.map((c) => c.name).join(','),
      reason: `the cartridge is ${cartridge.verify.verdict}; ROM-declared servers start only for trusted cartridges (add its key to the trust registry)`,
    });
  }
  return {
    extraTools: !wanted || wanted.includes('memory') ? [roles['acx:memory.write'], roles['acx:search']] : [],
    adaptBuiltin: contractFacing,
  };
}


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
  // The tool set does not depend on the model, and no model is built: none need be selected.
  const settings = await resolveSettings({ ...flags, allowPortable: true }, { env, logger: options.logger });
  const cartridge = settings.cartridge;
  if (!cartridge) throw new ConfigError(`${flags.agent} is not a cartridge.`);
  const memory = await openAgentMemory(settings, options.logger, { env });
  const toolset = await assembleAgentTools(settings, { memory, logger: options.logger, connectMcp: true });
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
