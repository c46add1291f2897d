import { redactUrl, storeKindOf } from '../../../store/store-url.ts';
import type { Command } from 'commander';
import { isUuid } from '../../../channel/ids.ts';
import { assembleAgentTools, standingInstructions } from '../../../app/prepare.ts';
import { openAgentMemory } from '../../../app/memory-binding.ts';
import type { Toolset } from '../../../app/toolset.ts';
import { BaseCradleClient } from '../../../channel/client.ts';
import { createPlatformTools } from '../../../channel/tools/index.ts';
import { isInstalled, readVersionStamp } from '../../../app/install.ts';
import { resolveSettings } from '../../../app/settings.ts';
import { resolveWakeSettings, type WakeSettings } from '../../wake/settings.ts';
import { OPT_IN_TOOLS } from '../../../app/opt-in.ts';
import { resolveMcpTimeoutMs } from '../../../mcp/client.ts';
import type { AgentDefinition } from '../../../agent-def/definition.ts';
import { sha256Hex } from '../../../util/jcs.ts';
import { scrubSecrets } from '../../../util/scrub.ts';
import { CliExit } from '../output.ts';
import { addRunOptions, runFlags } from '../run-options.ts';
import { ACX_VERSION } from '../../../util/version.ts';
import { detectConfinement } from '../../../harness/acp/confinement.ts';
import { describeNetworkPolicy, resolveNetworkPolicy } from '../../../harness/acp/network-policy.ts';
import { commandLogger } from '../command-logger.ts';

/**
 * `acx resolved-config [agent]`: what a run would actually do, as JSON — resolved through the
 * same code a run uses, without building a model client (no key needed), connecting anything
 * (no network) or writing anything. A malformed config exits non-zero with the reason.
 */
export async function resolvedConfig(agent: string | undefined, options: Record<string, unknown>) {
  const logger = commandLogger('answer');
  const settings = await resolveSettings(runFlags(agent, options), { logger });
  const memory = await openAgentMemory(settings, logger, { seed: false });
  // --timeline: what a timeline wake offers on top, the platform tools (made without contacting the platform).
  const timeline = options.timeline as string | undefined;
  if (timeline !== undefined && !isUuid(timeline)) {
    throw new CliExit('usage', `acx resolved-config: --timeline must be a timeline uuid, not "${timeline}".`);
  }
  const extraTools = timeline ? createPlatformTools({ client: new BaseCradleClient(process.env.BASECRADLE_BASE_URL ? { baseUrl: process.env.BASECRADLE_BASE_URL } : {}), timeline }) : undefined;
  const toolset = await assembleAgentTools(settings, { memory, logger, connectMcp: false, createWorkspace: false, ...(extraTools ? { extraTools } : {}) });
  const aiVersion = (await import('ai/package.json', { with: { type: 'json' } })).default.version;
  // No model selected is a valid state here: the model fields are null, everything else is real.
  const model = settings.model;
  return {
    acx_version: ACX_VERSION,
    node_version: process.version,
    agent: settings.agent,
    harness: settings.harness,
    // Where an ACP harness's agent process runs (--harness): confined by bubblewrap or not.
    sandbox: await acpSandboxReport(),
    provider: model?.provider ?? null,
    sdk: 'ai',
    sdk_version: aiVersion,
    sdk_surface: model?.surface ?? null,
    model: model?.modelId ?? null,
    model_source: model?.source ?? null,
    base_url: model?.baseURL ? scrubSecrets(model.baseURL) : null,
    cache_mode: model?.cacheMode ?? null,
    vision: model?.vision ?? null,
    replay: settings.replay,
    record: settings.record,
    active_profile: toolset.registry.policy.profile,
    permission_mode: settings.permissionMode,
    speech: settings.speech,
    tools: toolset.tools.map((tool) => tool.name),
    // The provider's server-side built-ins that are on (granted, and run by this provider and surface).
    builtins: toolset.builtins.availability.active.map((builtin) => builtin.name),
    builtin_provider_tools: toolset.builtins.availability.active.map((builtin) => builtin.providerTool),
    // OpenRouter's web search parameters as sent, verbatim (null unless that server tool is on and the file exists).
    search_params: toolset.builtins.searchParams,
    skipped: toolset.skipped,
    // The tools/ plugin files whose tools are active: { file, origin, tools }.
    plugins: toolset.plugins,
    opt_in_tools: activeOptIns(toolset),
    isolation: toolset.isolation,
    // What the model is told a command can reach (plainly, when there is no OS isolation).
    execute_sandbox: toolset.tools.find((tool) => tool.name === 'execute')?.description ?? null,
    workspace: toolset.workspace,
    mcp_servers: toolset.mcpConfigured,
    mcp_request_timeout: resolveMcpTimeoutMs(undefined, process.env) / 1000,
    // The provider actually bound, and its package version (null for a built-in).
    memory_provider: memory.binding.provider,
    memory_provider_spec: memory.binding.spec,
    memory_provider_source: memory.binding.source,
    memory_provider_module: memory.binding.module,
    memory_provider_package: memory.binding.package,
    memory_provider_version: memory.binding.version,
    memory_embedding: memory.binding.embedding,
    memory_provider_refused: memory.binding.refused,
    // Where the agent's memory records live: the SQLite file at memory_path, or the store at store_url.
    memory_store: memory.binding.store,
    memory_path: settings.memoryPath,
    journal_path: settings.journalPath,
    // The kind and where, never the password.
    store: storeKindOf(settings.store),
    store_url: settings.store ? redactUrl(settings.store) : null,
    // On a shared store, whose rows this agent's sessions, wakes and memory are (its agent id).
    store_scope: settings.store ? settings.storeScope : null,
    max_steps: settings.maxSteps,
    max_steps_source: settings.loopPolicy?.maxStepsSource ?? null,
    max_context_tokens: settings.contextTokens,
    step_result_budget: settings.loopPolicy?.stepResultBudget ?? null,
    policy_not_applied: settings.loopPolicy?.notApplied ?? [],
    response_retries: settings.retries,
    model_params: settings.modelParamsVerbatim,
    model_params_effective: settings.modelParams,
    model_params_stripped: settings.modelParamsStripped,
    model_params_file: settings.modelParamsFile,
    config_home: settings.configHome,
    config_home_installed: isInstalled(settings.configHome),
    config_home_version: readVersionStamp(settings.configHome),
    instructions_chars: standingInstructions(settings, logger).length,
    definition: settings.definition ? definitionReport(settings.definition) : null,
    wake: wakeReport(resolveWakeSettings({}, process.env)),
  };
}

/**
 * The opt-ins that are in effect: a grant whose tool is active (a grant without one, e.g. shell
 * under the locked profile, shows under skipped instead), or execute-unisolated when execute
 * really runs without OS isolation. Reported by grant name, the unit an operator grants.
 */
function activeOptIns(toolset: Pick<Toolset, 'tools' | 'isolation' | 'registry' | 'builtins'>): string[] {
  const active = new Set([...toolset.tools.map((tool) => tool.name), ...toolset.builtins.availability.active.map((builtin) => builtin.name)]);
  const granted = toolset.registry.policy.grants;
  return Object.values(OPT_IN_TOOLS)
    .filter((definition) =>
      definition.name === 'execute-unisolated'
        ? granted.has(definition.name) && active.has('execute') && toolset.isolation.kind === 'none'
        : definition.grants.some((name) => active.has(name)),
    )
    .map((definition) => definition.name)
    .sort();
}

/**
 * What the agent definition itself sets, read by the one reader whether it came from a directory
 * or a cartridge's ROM: a directory and the cartridge built from it report the same values here.
 */
function definitionReport(definition: AgentDefinition) {
  const { manifest } = definition;
  return {
    source: definition.kind,
    layout: definition.layout,
    id: manifest.id,
    name: manifest.name,
    version: manifest.version,
    description: manifest.description ?? null,
    model: manifest.model ?? null,
    speech: manifest.speech ?? null,
    step_budget: manifest.stepBudget ?? null,
    permission_mode: manifest.permissionMode ?? null,
    tools: manifest.tools ?? null,
    system_prompt_sha256: sha256Hex(definition.systemPrompt),
    initialize_sha256: sha256Hex(definition.initialize),
    skills: definition.skills.map((skill) => ({ name: skill.name, description: skill.description, body_sha256: sha256Hex(skill.body) })),
    memory_seeds: definition.memory.map((seed) => ({ id: seed.id, portable: seed.portable, text_sha256: sha256Hex(seed.text) })),
    mcp_drop_ins: definition.mcp.map((dropIn) => dropIn.name),
    harness_requirements_sha256: sha256Hex(definition.requirements.bytes),
    loop_policy_sha256: definition.policy.bytes ? sha256Hex(definition.policy.bytes) : null,
    loop_policy: definition.policy.intent,
  };
}

async function acpSandboxReport() {
  const confinement = await detectConfinement(process.env);
  return {
    kind: confinement.kind,
    reason: confinement.reason,
    network_policy: describeNetworkPolicy(resolveNetworkPolicy(undefined, process.env)),
    // Without the sandbox the agent shares this machine's network: the policy is not enforced.
    network_policy_enforced: confinement.kind === 'bubblewrap',
  };
}

/** What `acx wake` would use (from the ACX_WAKE_* / ACX_PACE_* variables), in seconds. */
function wakeReport(wake: WakeSettings) {
  return {
    breaker_max: wake.breaker.max,
    breaker_window_seconds: wake.breaker.windowMs / 1000,
    breaker_cooldown_seconds: wake.breaker.cooldownMs / 1000,
    max_attempts: wake.maxAttempts,
    pacing: wake.pacing.enabled,
    pace_chars_per_second: wake.pacing.charsPerSecond,
    pace_floor_seconds: wake.pacing.floorMs / 1000,
    pace_max_builds: wake.pacing.maxBuilds,
    context_messages: Number.isFinite(wake.contextMessages) ? wake.contextMessages : 'all',
    onboard: wake.onboard,
  };
}

export function register(program: Command): void {
  addRunOptions(
    program
      .command('resolved-config')
      .description('print, as JSON, what a run would actually use (no key, no network, no writes)')
      .argument('[agent]', 'agent directory, .acx cartridge, or "default" for the config home\'s own agent (default "default")')
      .option('--timeline <uuid>', 'as a timeline wake on this timeline would: the platform tools listed under tools (nothing is fetched)'),
    // What a run would use does not depend on which session it opens.
    ['--session'],
  ).action(async (agent: string | undefined, options: Record<string, unknown>) => {
    process.stdout.write(`${JSON.stringify(await resolvedConfig(agent, options), null, 2)}\n`);
  });
}
