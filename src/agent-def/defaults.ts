import type { BuiltinName } from '../tools/builtin/names.ts';

/**
 * What an agent definition holds when its directory does not supply it: the harness
 * requirements (SPEC §8) and a conservative acx loop policy expressed as intent (SPEC §9). A
 * directory run and the cartridge built from it read the same documents (the build packs them).
 */

/** The embedding engine acx's cartridges declare (a local hashing engine: no model, no network). */
export const DEFAULT_EMBEDDING_ENGINE = { id: 'local-hash-128', dim: 128 } as const;

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
 * role tools `add_memory` / `search_memory` that come with `memory` (src/app/prepare.ts).
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

/**
 * The policy of a directory that writes none. It states no compaction or truncation intent (both
 * optional in SPEC §9): a target the author never chose would pin the context ceiling and stop
 * the engine from using the model's own window, for the directory and its cartridge alike.
 */
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
      memoryFiles: [],
      embeddingEngineId,
    },
    rules: [],
    guardrailContract: { signalKinds: ['milestone', 'checkpoint', 'question', 'blocked', 'stop'], outcomeReport: 'OperatorCommandReport' },
    hints: {},
  };
}
