import type { BuiltinName } from '../tools/builtin/names.ts';

/**
 * ROM documents a build writes when the agent directory does not supply its own: the harness
 * requirements (SPEC §8) and a conservative acx loop policy expressed as intent (SPEC §9).
 */

const contract = (role: string, tier: string, capabilityScopes: string[], name: string, description: string, required: string[]) => ({
  role, tier, capabilityScopes, name, description,
  inputSchema: { type: 'object', ...(required.length ? { required } : {}), properties: Object.fromEntries(required.map((p) => [p, { type: 'string' }])) },
});

/** The required minimal contract (SPEC §8.4) as the seed and the reference builder write it. */
const requiredContracts = () => [
  contract('acx:execute', 'required', ['exec', 'fs.read'], 'execute', 'Run commands/code in a sandbox.', ['command']),
  contract('acx:dispatch', 'required', ['dispatch'], 'dispatch', 'Spawn/route a sub-agent unit of work.', ['task']),
  contract('acx:memory.write', 'required', ['memory.write'], 'add_memory', 'Append a durable SAVE-zone record.', ['summary']),
  contract('acx:search', 'required', ['search', 'memory.read'], 'search_memory', 'Retrieval over memory + knowledge.', ['query']),
];

const header = () => ({
  schemaVersion: 'acx.harness.v1',
  mcp: { minProtocolRevision: '2024-11-05', preferredProtocolRevision: '2025-11-25' },
  model: { toolUse: true, minContextWindowTokens: 100000, structuredOutput: false },
});

/** The manifest the reference builder emits (seed 000): the four required roles, list_agents optional. */
export function defaultHarnessRequirements(): Record<string, unknown> {
  return {
    ...header(),
    requiredTools: requiredContracts(),
    optionalTools: [contract('acx:list_agents', 'optional', ['memory.read'], 'list_agents', 'Inventory of available agents (nice-to-have).', [])],
    filesystem: ['fs.read'],
    network: [],
  };
}

/**
 * The acx built-in that serves each required role: the host binds `execute`, `dispatch`, and the
 * role tools `add_memory` / `search_memory` that come with `memory` (src/agent/prepare.ts).
 */
export const ROLE_BUILTINS: Readonly<Record<string, BuiltinName>> = {
  'acx:execute': 'execute',
  'acx:dispatch': 'dispatch',
  'acx:memory.write': 'memory',
  'acx:search': 'memory',
};

/** The filesystem and network scopes each built-in holds (their capabilityScopes in src/tools/builtin). */
export const AREA_SCOPES: Readonly<Partial<Record<BuiltinName, readonly string[]>>> = {
  execute: ['fs.read'],
  fs: ['fs.read', 'fs.write'],
  web_fetch: ['net.fetch'],
};

/**
 * The requirements of an agent that declares the built-ins `tools`: every cartridge carries the
 * four required roles (SPEC §8.4; the reference schema rejects fewer), so the built-ins that bind
 * them must be among `tools` — `unbound` names the roles that are not. The filesystem and network
 * scopes are exactly those the declared built-ins hold; no optional role is listed, since acx
 * offers no tool for the seed's optional inventory roles.
 */
export function harnessRequirementsFor(tools: readonly BuiltinName[]): { manifest: Record<string, unknown>; unbound: string[] } {
  const has = new Set<string>(tools);
  const areas = new Set(tools.flatMap((tool) => AREA_SCOPES[tool] ?? []));
  const scopes = (prefix: string) => [...areas].filter((s) => s.startsWith(prefix)).sort();
  return {
    manifest: { ...header(), requiredTools: requiredContracts(), filesystem: scopes('fs.'), network: scopes('net.') },
    unbound: Object.keys(ROLE_BUILTINS).filter((role) => !has.has(ROLE_BUILTINS[role]!)),
  };
}

export function defaultLoopContextPolicy(maxTurns: number, embeddingEngineId: string): Record<string, unknown> {
  return {
    schemaVersion: 'acx.loop-context-policy/1.1',
    loop: {
      maxTurns,
      cycle: ['plan', 'gather_context', 'act', 'verify', 'reflect'],
      verification: { commands: [], maxAttempts: 2, scope: 'touched', passIntent: 'the task is demonstrably done', blockOnFailure: true },
      stopConditions: [
        { when: 'completed', action: 'stop' },
        { when: 'blocked', action: 'await_human' },
        { when: 'max_turns', action: 'report_continue' },
        { when: 'budget_exhausted', action: 'report_continue' },
      ],
      handoff: { emits: 'OperatorCommandReport', returnWindows: ['blocker', 'ambiguity', 'destructive_change'] },
      subAgents: [],
    },
    context: {
      retrieval: 'just_in_time',
      identifierKinds: ['file_path', 'memory_ref'],
      compaction: { preserve: ['user_intent', 'task_state', 'unresolved_bugs'], discard: ['redundant_output'], targetTokenBudget: 60000 },
      toolResultTruncation: { maxTokens: 4000, keepLastN: 20 },
      memoryFiles: [],
      embeddingEngineId,
    },
    rules: [],
    guardrailContract: { signalKinds: ['milestone', 'checkpoint', 'question', 'blocked', 'stop'], outcomeReport: 'OperatorCommandReport' },
    hints: {},
  };
}

/** acx.lance-memory/1 descriptor (SPEC §7.7): fixed columns, vector dim from the engine. */
export function lanceMemorySchema(engine: { id: string; dim: number }): Record<string, unknown> {
  const col = (name: string, type: string, nullable = false, extra: Record<string, unknown> = {}) => ({ name, type, nullable, ...extra });
  return {
    schemaVersion: 'acx.lance-memory/1',
    format: 'lancedb',
    table: 'memories',
    partitionBy: 'zone',
    distanceMetric: 'cosine',
    embeddingEngine: { id: engine.id, dim: engine.dim },
    textTemplate: 'title + "\\n\\n" + summary',
    columns: [
      col('id', 'utf8'),
      col('zone', 'utf8', false, { enum: ['rom', 'save'] }),
      col('portable', 'bool'),
      col('artifact_fingerprint', 'utf8'),
      col('codebase_fingerprint', 'utf8', true),
      col('title', 'utf8'),
      col('summary', 'utf8'),
      col('source_type', 'utf8'),
      col('tags', 'list<utf8>'),
      col('impact', 'utf8', false, { enum: ['positive', 'neutral', 'negative'] }),
      col('xp_awarded', 'int32'),
      col('timestamp', 'utf8'),
      col('text', 'utf8'),
      col('vector', `fixed_size_list<float32, ${engine.dim}>`),
    ],
  };
}

/** The closed acx.package-spec/1 eight-role profile (SPEC §7.7). */
export function packageSpec(input: {
  cartridgeId: string;
  specVersion: string;
  engine: { id: string; dim: number };
  memoryCount: number;
  skillCount: number;
  capabilityCount: number;
  levelCount: number;
}): Record<string, unknown> {
  return {
    schemaVersion: 'acx.package-spec/1',
    cartridgeId: input.cartridgeId,
    specVersion: input.specVersion,
    embeddingEngine: { id: input.engine.id, dim: input.engine.dim },
    artifacts: [
      { role: 'identity', kind: 'meta', schema: 'acx.cartridge-meta/1', required: true },
      { role: 'memory-baseline', kind: 'table', table: 'memory', mediaType: 'application/json', schema: 'acx.memory-record.v1', required: true, count: input.memoryCount },
      { role: 'memory-vectors', kind: 'lance', path: 'vectors/memories.lance', schema: 'acx.lance-memory/1', required: false, signed: false, reindexOnImport: true, descriptor: 'rom/schema/lance-memory.json' },
      { role: 'skills', kind: 'sqlar', path: 'rom/skills/', schema: 'acx.skill/1', required: false, count: input.skillCount },
      { role: 'capabilities', kind: 'table', table: 'capabilities', schema: 'acx.capability/1', required: false, count: input.capabilityCount },
      { role: 'harness', kind: 'sqlar', path: 'rom/manifest/harness-requirements.json', schema: 'acx.harness.v1', required: true },
      { role: 'loop-context', kind: 'sqlar', path: 'rom/policy/loop-context-policy.json', schema: 'acx.loop-context-policy/1.1', required: true },
      { role: 'level', kind: 'attestation', schema: 'acx.level-credential.v1', required: false, count: input.levelCount },
    ],
  };
}
