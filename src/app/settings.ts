import { storeKindOf } from '../store/store-url.ts';
import { join, resolve } from 'node:path';
import { type MemoryProviderSpec, parseMemoryProviderSpec } from '../memory/choice.ts';
import type { CartridgeRom, LoadedCartridge } from './load-cartridge.ts';
import { type AgentDefinition, readAgentDirectory } from '../agent-def/definition.ts';
import { speechModeOf } from '../agent-def/manifest.ts';
import { type AppliedLoopPolicy, applyLoopPolicy } from '../agent-def/policy.ts';
import type { VerifyResult } from '../cartridge/verify.ts';
import type { SpeechMode } from '../engine/brief.ts';
import { DEFAULT_MAX_STEPS, DEFAULT_RETRIES } from '../engine/caps.ts';
import { ENV_NAME } from '../mcp/config.ts';
import { readCassette } from '../model/cassette.ts';
import { loadModelParams, type ModelParams } from '../model/params.ts';
import { describeModel, type CacheMode, PROVIDERS, type ModelSurface } from '../model/providers.ts';
import { isPermissionMode, type PermissionMode } from '../tools/permission.ts';
import { resolveHarnessName, type HarnessName } from '../harness/acp/profiles/names.ts';
import { ConfigError } from '../core/errors.ts';
import type { Logger } from '../util/logger.ts';
import { agentStateDir, cartridgeStateDir, isCartridgePath, modelParamsPath, resolveConfigHome, resolveStateHome } from './paths.ts';
import { isSwitchedOff } from './switches.ts';

/**
 * Every knob a run has, resolved once from flags, then environment, then the agent's own
 * defaults. `acx run` and `acx resolved-config` both go through here, so what resolved-config
 * reports is what a run does.
 */
export interface RunFlags {
  agent?: string;
  model?: string;
  surface?: string;
  baseUrl?: string;
  /** false for --no-vision. */
  vision?: boolean;
  param?: string[];
  modelParams?: string;
  maxSteps?: string | number;
  contextTokens?: string | number;
  retries?: string | number;
  /** A postgres:// URL for the journal (env ACX_STORE); absent: the SQLite files under the home. */
  store?: string;
  home?: string;
  configHome?: string;
  session?: string;
  record?: string;
  replay?: string;
  permissionMode?: string;
  mcp?: string[];
  workspace?: string;
  harness?: string;
  /** Cartridges: run a `portable` (or unsigned `legacy`) one (env ACX_ALLOW_PORTABLE=1). */
  allowPortable?: boolean;
  /**
   * Cartridges: the acx.trust-registry/1 file the verdict is judged against (env ACX_TRUST_REGISTRY;
   * default the config home's trust-registry.json when it exists).
   */
  registry?: string;
  /** Cartridges: also show SAVE memory this installation did not write, marked so (env ACX_ALLOW_FOREIGN_SAVE=1). */
  allowForeignSave?: boolean;
  /** Cartridges: host variables its MCP drop-ins may expand, e.g. ["OPENAI_API_KEY"] (env ACX_CARTRIDGE_ENV=A,B). */
  allowCartridgeEnv?: string[];
}

/** What a run knows about the cartridge it boots (absent for directories and the config home). */
export interface CartridgeSettings {
  path: string;
  verify: VerifyResult;
  rom: CartridgeRom;
  /** The context ceiling the host set (flag/env), before the cartridge's policy; null when unset. */
  hostContextTokens: number | null;
  /** Per-installation salt for SAVE codebase fingerprints. */
  saltPath: string;
  /** Whether ROM-declared MCP drop-ins may start (only for trusted/local cartridges). */
  romMcpAllowed: boolean;
  /** Whether SAVE memory this installation did not write is shown (marked) instead of quarantined. */
  includeForeignSave: boolean;
  /** Host variables the operator granted to the ROM's MCP drop-ins (none unless granted). */
  envGrant: string[];
}

export interface ResolvedModelSettings {
  source: 'flag' | 'env' | 'agent' | 'replay';
  spec: string | null;
  provider: string;
  modelId: string;
  surface: ModelSurface | null;
  baseURL: string | null;
  cacheMode: CacheMode | null;
  /** Whether the model reads images; false describes tool images to it as text (--no-vision, ACX_MODEL_VISION=0). */
  vision: boolean;
}

export interface ResolvedSettings {
  agent: { id: string; name: string; source: 'directory' | 'cartridge' | 'config-home'; path: string | null };
  /** The agent definition (a directory's or a cartridge's ROM); absent for the config home's agent. */
  definition: AgentDefinition | undefined;
  cartridge: CartridgeSettings | undefined;
  /** The definition's loop-context policy as applied to this run (host limits win); null for the config home's agent. */
  loopPolicy: AppliedLoopPolicy | null;
  /**
   * The model a run would call, or null when none is selected (no --model, ACX_MODEL, agent.json
   * model or --replay). Only what calls a model needs one (src/app/prepare.ts buildModel);
   * resolved-config, cleanup and handshake work without.
   */
  model: ResolvedModelSettings | null;
  record: string | null;
  replay: string | null;
  configHome: string;
  /** ACX_SYSTEM_PROMPT: the system prompt of a config home that was never installed, in place of the packaged one. */
  systemPromptFallback: string | null;
  stateDir: string;
  journalPath: string;
  /** The journal's store when it is not the SQLite file: a postgres:// URL (--store / ACX_STORE). */
  store: string | null;
  /** Whose rows this agent's are on a shared store (see AgentLocation.storeScope). */
  storeScope: string;
  memoryPath: string;
  /** The memory provider to bind (ACX_MEMORY_PROVIDER, else agent.json memory.provider, else sqlite). */
  memoryProvider: MemoryProviderSpec;
  /** The semantic provider's embedding: ACX_MEMORY_EMBEDDING, else agent.json memory.embedding; null chooses by provider and key. */
  memoryEmbedding: string | null;
  permissionMode: PermissionMode;
  speech: SpeechMode;
  maxSteps: number;
  contextTokens: number | null;
  retries: number;
  modelParams: ModelParams;
  /** model_params.json as written ({} without one), for resolved-config. */
  modelParamsVerbatim: Record<string, unknown>;
  modelParamsStripped: string[];
  modelParamsFile: string | null;
  sessionId: string | null;
  /** Where fs and execute work; default <stateDir>/workspace. */
  workspace: string | null;
  mcp: string[];
  /** What runs the turns: acx's engine or an ACP profile (--harness / ACX_HARNESS). */
  harness: HarnessName;
}

/** ACX_MEMORY_PROVIDER wins over agent.json; each relative module path starts where it was written. */
function memoryProviderSpec(env: NodeJS.ProcessEnv, fromAgent: string | undefined, dirs: { configHome: string; agentDir: string }): MemoryProviderSpec {
  const fromEnv = env.ACX_MEMORY_PROVIDER?.trim();
  if (fromEnv) return parseMemoryProviderSpec(fromEnv, 'env', dirs.configHome);
  if (fromAgent) return parseMemoryProviderSpec(fromAgent, 'agent.json', dirs.agentDir);
  return { kind: 'sqlite', text: 'sqlite', source: 'default' };
}

function isTruthy(value: string | undefined): boolean {
  return value !== undefined && /^(1|true|yes|on)$/i.test(value.trim());
}

function positiveInt(value: string | number | undefined, name: string, allowZero = false): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isInteger(n) || n < 0 || (!allowZero && n === 0)) {
    throw new ConfigError(`${name} must be a ${allowZero ? 'non-negative' : 'positive'} whole number (got "${value}").`);
  }
  return n;
}

/** The agent argument that selects the config home's own agent instead of a directory or cartridge. */
export const DEFAULT_AGENT = 'default';

/**
 * Which agent a command names and where its state lives: what every command that reads it shares,
 * and what a wake must know before it records anything.
 */
export interface AgentLocation {
  loaded: LoadedCartridge | undefined;
  definition: AgentDefinition | undefined;
  agentId: string;
  /**
   * The agent's rows on a store many agents share (PostgreSQL's `agent_id` column): its state
   * directory under the state home — `<id>` for a directory agent (`agents/<id>/`),
   * `cartridges/<state key>` for a cartridge — so two cartridges with one manifest id, which keep
   * separate files on SQLite, keep separate rows there too.
   */
  storeScope: string;
  configHome: string;
  stateHome: string;
  stateDir: string;
}

export async function locateAgent(
  flags: Pick<RunFlags, 'agent' | 'home' | 'configHome' | 'allowPortable' | 'registry'>,
  options: { env?: NodeJS.ProcessEnv; logger?: Logger } = {},
): Promise<AgentLocation> {
  const env = options.env ?? process.env;
  const configHome = resolveConfigHome(flags.configHome, env);
  const loaded = flags.agent !== undefined && isCartridgePath(flags.agent) ? await loadNamedCartridge(flags.agent, flags, configHome, env, options.logger) : undefined;
  // `default` names the config home's own agent: its prompts/ compose the instructions.
  const definition = loaded
    ? loaded.rom.definition
    : flags.agent && flags.agent !== DEFAULT_AGENT
      ? readAgentDirectory(flags.agent)
      : undefined;
  const agentId = definition?.manifest.id ?? 'default';
  const stateHome = resolveStateHome(flags.home, env);
  return {
    loaded,
    definition,
    agentId,
    storeScope: loaded ? `cartridges/${loaded.stateKey}` : agentId,
    configHome,
    stateHome,
    stateDir: loaded ? cartridgeStateDir(stateHome, loaded.stateKey) : agentStateDir(stateHome, agentId),
  };
}

/**
 * A cartridge is verified and trust-gated before anything in its ROM is read. Its container,
 * signature and trust code load only here: a directory agent, or a wake answering from its store,
 * never pays for them.
 */
async function loadNamedCartridge(
  path: string,
  flags: Pick<RunFlags, 'allowPortable' | 'registry'>,
  configHome: string,
  env: NodeJS.ProcessEnv,
  logger: Logger | undefined,
): Promise<LoadedCartridge> {
  const [{ loadCartridge }, { resolveTrustFiles, verifyOptionsOf }] = await Promise.all([import('./load-cartridge.ts'), import('./trust.ts')]);
  return loadCartridge(path, {
    allowPortable: flags.allowPortable === true || isTruthy(env.ACX_ALLOW_PORTABLE),
    ...verifyOptionsOf(resolveTrustFiles({ registry: flags.registry, configHome }, env)),
    ...(logger ? { logger } : {}),
  });
}

/** `options.location`: the agent already located for these flags (it is not read again). */
export async function resolveSettings(
  flags: RunFlags,
  options: { env?: NodeJS.ProcessEnv; logger?: Logger; location?: AgentLocation } = {},
): Promise<ResolvedSettings> {
  const env = options.env ?? process.env;
  const { loaded, definition, agentId, storeScope, configHome, stateHome, stateDir } = options.location ?? (await locateAgent(flags, { ...options, env }));
  const manifest = definition?.manifest;

  const vision = flags.vision !== false && !isSwitchedOff(env.ACX_MODEL_VISION);
  let model: ResolvedModelSettings | null = null;
  const spec = flags.model || env.ACX_MODEL || manifest?.model;
  if (flags.replay) {
    const cassette = readCassette(flags.replay);
    model = {
      source: 'replay',
      spec: null,
      provider: cassette.provider,
      modelId: cassette.modelId,
      surface: null,
      baseURL: null,
      cacheMode: PROVIDERS[cassette.provider.split('.')[0]!]?.cacheMode ?? null,
      vision,
    };
  } else if (spec) {
    const source = flags.model ? 'flag' : env.ACX_MODEL ? 'env' : 'agent';
    const described = describeModel({
      spec,
      ...(flags.surface ? { surface: flags.surface as ModelSurface } : {}),
      ...(flags.baseUrl ? { baseURL: flags.baseUrl } : {}),
      env,
    });
    model = {
      source,
      spec,
      provider: described.provider,
      modelId: described.modelId,
      surface: described.surface,
      baseURL: described.baseURL ?? null,
      cacheMode: described.definition.cacheMode,
      vision,
    };
  }

  const modeText = flags.permissionMode ?? env.ACX_PERMISSION_MODE ?? manifest?.permissionMode ?? 'allow-edits';
  if (!isPermissionMode(modeText)) {
    throw new ConfigError(`Unknown permission mode "${modeText}".`, { hint: 'Use allow-reads, allow-edits or allow-all.' });
  }
  const speech = speechModeOf(manifest?.speech);
  const hostMaxSteps = positiveInt(flags.maxSteps ?? env.ACX_MAX_STEPS, 'The step budget (--max-steps / ACX_MAX_STEPS)');
  const hostContextTokens = positiveInt(
    flags.contextTokens ?? env.ACX_MAX_CONTEXT_TOKENS,
    'The context budget (--context-tokens / ACX_MAX_CONTEXT_TOKENS)',
    true,
  );
  // The definition's loop-context policy (a directory's own or default one, the very document its
  // cartridge packs) sets the step budget and context ceiling; host limits win.
  const policy = definition
    ? applyLoopPolicy({
        policy: definition.policy.intent,
        hostMaxSteps,
        agentMaxSteps: manifest?.stepBudget,
        defaultMaxSteps: DEFAULT_MAX_STEPS,
        hostContextTokens,
      })
    : undefined;
  const maxSteps = policy?.maxSteps ?? hostMaxSteps ?? DEFAULT_MAX_STEPS;
  const contextTokens = policy ? (policy.contextTokens ?? undefined) : hostContextTokens;
  const retries = positiveInt(flags.retries ?? env.ACX_RESPONSE_RETRIES, 'ACX_RESPONSE_RETRIES', true) ?? DEFAULT_RETRIES;
  const paramsFile = flags.modelParams ?? modelParamsPath(configHome);
  const params = loadModelParams({
    file: paramsFile,
    ...(flags.param ? { overrides: flags.param } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
  });

  return {
    agent: definition
      ? { id: agentId, name: manifest!.name, source: loaded ? 'cartridge' : 'directory', path: definition.path }
      : { id: agentId, name: 'default', source: 'config-home', path: null },
    definition,
    loopPolicy: policy ?? null,
    cartridge: loaded
      ? {
          path: loaded.rom.path,
          verify: loaded.verify,
          rom: loaded.rom,
          hostContextTokens: hostContextTokens ?? null,
          saltPath: join(stateHome, 'installation.salt'),
          romMcpAllowed: loaded.verify.verdict === 'trusted' || loaded.verify.verdict === 'local',
          includeForeignSave: flags.allowForeignSave === true || isTruthy(env.ACX_ALLOW_FOREIGN_SAVE),
          envGrant: cartridgeEnvGrant(flags.allowCartridgeEnv, env.ACX_CARTRIDGE_ENV),
        }
      : undefined,
    model,
    record: flags.record ?? null,
    replay: flags.replay ?? null,
    configHome,
    systemPromptFallback: env.ACX_SYSTEM_PROMPT?.trim() || null,
    stateDir,
    journalPath: join(stateDir, 'journal.db'),
    store: resolveStoreUrl(flags, env),
    storeScope,
    memoryPath: join(stateDir, 'memory.db'),
    memoryProvider: memoryProviderSpec(env, manifest?.memory?.provider, { configHome, agentDir: definition?.path ?? configHome }),
    memoryEmbedding: env.ACX_MEMORY_EMBEDDING?.trim() || manifest?.memory?.embedding || null,
    permissionMode: modeText,
    speech,
    maxSteps,
    contextTokens: contextTokens ?? null,
    retries,
    modelParams: params.params,
    modelParamsVerbatim: params.verbatim,
    modelParamsStripped: params.stripped,
    modelParamsFile: params.source ?? null,
    sessionId: flags.session ?? env.ACX_SESSION ?? null,
    workspace: flags.workspace ?? env.ACX_WORKSPACE ?? null,
    mcp: flags.mcp ?? [],
    harness: resolveHarnessName(flags.harness, env),
  };
}

/**
 * The host variables granted to a cartridge's MCP drop-ins: each --allow-cartridge-env value and
 * ACX_CARTRIDGE_ENV, comma- or space-separated. A name that cannot be a variable is a typo.
 */
export function cartridgeEnvGrant(flags: readonly string[] | undefined, env: string | undefined): string[] {
  const names = [...(flags ?? []), env ?? ''].flatMap((value) => value.split(/[\s,]+/)).filter(Boolean);
  for (const name of names) {
    if (!ENV_NAME.test(name)) {
      throw new ConfigError(`"${name}" is not an environment variable name (--allow-cartridge-env / ACX_CARTRIDGE_ENV).`, {
        hint: 'Give variable names such as OPENAI_API_KEY, separated by commas.',
      });
    }
  }
  return [...new Set(names)].sort();
}


/** A directory agent's own MCP drop-in directory (a cartridge's come from its ROM, started only when trusted). */
export function agentMcpDir(settings: Pick<ResolvedSettings, 'definition'>): string | undefined {
  const definition = settings.definition;
  return definition?.kind === 'directory' && definition.mcp.length > 0 ? join(definition.path, 'mcp') : undefined;
}

/**
 * --store / ACX_STORE: a postgres:// URL, or null for the SQLite files under the home. Checked
 * now so a wrong value fails before anything runs; a wake reads it before the rest of the
 * settings, since its event is recorded in that store first.
 */
export function resolveStoreUrl(flags: Pick<RunFlags, 'store'>, env: NodeJS.ProcessEnv = process.env): string | null {
  const url = flags.store ?? env.ACX_STORE;
  return storeKindOf(url) === 'postgres' ? url! : null;
}
