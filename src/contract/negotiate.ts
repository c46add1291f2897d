import { AcxError } from '../core/errors.ts';
import { isCapabilityScope } from '../tools/tool.ts';
import type { InputSchema } from '../tools/schema.ts';
import {
  COMPLIANCE_MEDIA_TYPE,
  COMPLIANCE_SCHEMA_VERSION,
  type BindingVia,
  type ComplianceDescriptor,
  type ModelFacts,
  type RequirementCheck,
  type RoleBinding,
} from './descriptor.ts';
import {
  allContracts,
  isCalendarDate,
  parseHarnessRequirements,
  type HarnessRequirements,
  type ToolRoleContract,
} from './requirements.ts';
import { bindGuardrails, guardrailChecks, type HostGuardrail } from './guardrail-roles.ts';
import { isStructurallyAccepting } from './subsumption.ts';

/**
 * The capability-negotiation handshake (SPEC §8.5): bind host tools to the manifest's roles, hold
 * the host's facts against the manifest's floors, and produce the compliance descriptor. Pure: it
 * reads nothing and writes nothing, so a refusal can never have touched the SAVE zone.
 */

export interface HostTool {
  name: string;
  description?: string;
  inputSchema: InputSchema | boolean;
  /** Capability scopes the host's policy lets this tool exercise. */
  grantedScopes: string[];
  source: 'builtin' | 'mcp' | (string & {});
}

export interface NegotiateOptions {
  /** The exact manifest bytes (a string is taken as its UTF-8 bytes). */
  manifestBytes: Uint8Array | string;
  hostTools: HostTool[];
  /** The MCP revision negotiated at `initialize`, e.g. "2025-11-25". */
  protocolRevision: string;
  model: ModelFacts;
  /** Where model.contextWindowTokens came from (shown beside the figure in the checklist). */
  contextWindowSource?: string;
  grantedFilesystem: string[];
  grantedNetwork: string[];
  /** Operator overrides: role id → host tool name. Checked, never silently replaced. */
  roleBindings?: Record<string, string>;
  /** The guardrails the host can run, bound to the manifest's guardrail roles (guardrail-roles.ts). */
  hostGuardrails?: HostGuardrail[];
}

/** The first MCP revision with structured tool output (outputSchema / structuredContent). */
export const STRUCTURED_CONTENT_REVISION = '2025-06-18';

export function negotiate(options: NegotiateOptions): ComplianceDescriptor {
  const { manifest, requirementsHash } = parseHarnessRequirements(options.manifestBytes);
  assertProtocolRevision(options.protocolRevision, 'the negotiated protocolRevision');
  const model = checkModelFacts(options.model);
  const tools = checkHostTools(options.hostTools);
  const filesystem = checkScopeList(options.grantedFilesystem, 'grantedFilesystem');
  const network = checkScopeList(options.grantedNetwork, 'grantedNetwork');
  const roleBindings = options.roleBindings ?? {};
  const contracts = allContracts(manifest);
  for (const role of Object.keys(roleBindings)) {
    if (!contracts.some((c) => c.role === role)) {
      throw new AcxError('contract-role-binding', `roleBindings names ${role}, which the manifest does not declare`, {
        hint: `Bind only declared roles: ${contracts.map((c) => c.role).join(', ')}.`,
      });
    }
  }

  const bindings = bindRoles(contracts, tools, roleBindings);
  const guardrails = manifest.guardrails ? bindGuardrails(manifest.guardrails, options.hostGuardrails ?? []) : undefined;
  const checks: RequirementCheck[] = [
    ...floorChecks(manifest, options.protocolRevision, model, options.contextWindowSource),
    ...bindings
      .filter((b) => b.tier === 'required')
      .map((b) => ({
        id: `tool:${b.role}`,
        requested: `${b.role} with scopes [${contracts.find((c) => c.role === b.role)!.capabilityScopes.join(', ')}]`,
        offered: b.boundTool === null ? 'unbound' : `${b.boundTool}${b.satisfied ? '' : ` (${b.reasons?.join('; ')})`}`,
        met: b.satisfied,
      })),
    ...guardrailChecks(guardrails ?? []),
    ...scopeChecks('filesystem', manifest.filesystem ?? [], filesystem),
    ...scopeChecks('network', manifest.network ?? [], network),
  ];
  const unmet = checks.filter((c) => !c.met).map((c) => c.id);
  return {
    schemaVersion: COMPLIANCE_SCHEMA_VERSION,
    mediaType: COMPLIANCE_MEDIA_TYPE,
    requirementsHash,
    protocolRevision: options.protocolRevision,
    model,
    bindings,
    ...(guardrails ? { guardrails } : {}),
    filesystem,
    network,
    verdict: unmet.length === 0 ? 'accept' : 'refuse',
    unmet,
    optionalAbsent: [...bindings, ...(guardrails ?? [])].filter((b) => b.tier === 'optional' && !b.satisfied).map((b) => b.role),
    checks,
  };
}

// ---- floors ---------------------------------------------------------------------------------

/** The protocol and model floors of a manifest held against what the host offers. */
export function floorChecks(manifest: HarnessRequirements, protocolRevision: string, model: ModelFacts, contextWindowSource?: string): RequirementCheck[] {
  const checks: RequirementCheck[] = [
    {
      id: 'mcp.minProtocolRevision',
      requested: `>= ${manifest.mcp.minProtocolRevision}`,
      offered: protocolRevision,
      met: compareProtocolRevisions(protocolRevision, manifest.mcp.minProtocolRevision) >= 0,
    },
  ];
  if (manifest.mcp.requireStructuredContent === true) {
    checks.push({
      id: 'mcp.requireStructuredContent',
      requested: `>= ${STRUCTURED_CONTENT_REVISION} (structuredContent)`,
      offered: protocolRevision,
      met: compareProtocolRevisions(protocolRevision, STRUCTURED_CONTENT_REVISION) >= 0,
    });
  }
  if (manifest.model.toolUse) {
    checks.push({ id: 'model.toolUse', requested: 'true', offered: String(model.toolUse), met: model.toolUse });
  }
  checks.push({
    id: 'model.minContextWindowTokens',
    requested: `>= ${manifest.model.minContextWindowTokens}`,
    offered: contextWindowSource ? `${model.contextWindowTokens} (${contextWindowSource})` : String(model.contextWindowTokens),
    met: model.contextWindowTokens >= manifest.model.minContextWindowTokens,
  });
  if (manifest.model.structuredOutput === true) {
    checks.push({ id: 'model.structuredOutput', requested: 'true', offered: String(model.structuredOutput), met: model.structuredOutput });
  }
  return checks;
}

/**
 * Orders two MCP revision dates (negative, zero, positive). Both must be real YYYY-MM-DD dates:
 * an unknown revision string is an error, never silently "older" or "newer".
 */
export function compareProtocolRevisions(a: string, b: string): number {
  assertProtocolRevision(a, 'protocol revision');
  assertProtocolRevision(b, 'protocol revision');
  const [ya, ma, da] = a.split('-').map(Number) as [number, number, number];
  const [yb, mb, db] = b.split('-').map(Number) as [number, number, number];
  return ya - yb || ma - mb || da - db;
}

export function assertProtocolRevision(value: unknown, what: string): asserts value is string {
  if (typeof value !== 'string' || !isCalendarDate(value)) {
    throw new AcxError('mcp-protocol-revision', `Unknown MCP protocol revision ${JSON.stringify(value)} for ${what}`, {
      hint: 'MCP revisions are dates such as 2024-11-05, 2025-03-26, 2025-06-18 or 2025-11-25; pass the protocolVersion the server answered at initialize.',
    });
  }
}

function scopeChecks(area: 'filesystem' | 'network', requested: string[], granted: string[]): RequirementCheck[] {
  return requested.map((scope) => ({
    id: `${area}:${scope}`,
    requested: scope,
    offered: granted.includes(scope) ? scope : `not granted (granted: [${granted.join(', ')}])`,
    met: granted.includes(scope),
  }));
}

// ---- binding ----------------------------------------------------------------------------------

interface Evaluation {
  satisfied: boolean;
  reasons: string[];
}

/**
 * Binds one host tool to each role. Pass 1, for every role: an explicit roleBindings entry
 * (final, even when it does not satisfy), else the tool named like the contract if it satisfies.
 * Pass 2, for roles still open, in manifest order: the satisfying tool not yet bound elsewhere
 * with the fewest scopes beyond the contract's, ties broken by name in code-point order.
 */
function bindRoles(contracts: ToolRoleContract[], tools: Map<string, HostTool>, roleBindings: Record<string, string>): RoleBinding[] {
  const evaluations = new Map<string, Evaluation>();
  const evaluate = (tool: HostTool, contract: ToolRoleContract): Evaluation => {
    const key = `${contract.role}\u0000${tool.name}`;
    let result = evaluations.get(key);
    if (!result) {
      const schema = isStructurallyAccepting(tool.inputSchema, contract.inputSchema);
      const missing = contract.capabilityScopes.filter((s) => !tool.grantedScopes.includes(s));
      const reasons = [...schema.reasons.map((r) => `inputSchema ${r}`)];
      if (missing.length > 0) reasons.push(`scopes not granted: ${missing.join(', ')}`);
      result = { satisfied: reasons.length === 0, reasons };
      evaluations.set(key, result);
    }
    return result;
  };
  const bind = (contract: ToolRoleContract, tool: HostTool, via: BindingVia): RoleBinding => {
    const { satisfied, reasons } = evaluate(tool, contract);
    return {
      role: contract.role,
      tier: contract.tier,
      boundTool: tool.name,
      via,
      source: tool.source,
      scopesGranted: [...tool.grantedScopes],
      satisfied,
      ...(satisfied ? {} : { reasons }),
    };
  };

  const result = new Map<string, RoleBinding>();
  for (const contract of contracts) {
    const explicit = roleBindings[contract.role];
    if (explicit !== undefined) {
      const tool = tools.get(explicit);
      result.set(
        contract.role,
        tool
          ? bind(contract, tool, 'explicit')
          : {
              role: contract.role,
              tier: contract.tier,
              boundTool: null,
              via: 'explicit',
              scopesGranted: [],
              satisfied: false,
              reasons: [`roleBindings maps ${contract.role} to "${explicit}", which the host does not offer`],
            },
      );
      continue;
    }
    const named = tools.get(contract.name);
    if (named && evaluate(named, contract).satisfied) result.set(contract.role, bind(contract, named, 'name'));
  }

  const taken = new Set([...result.values()].filter((b) => b.satisfied && b.boundTool).map((b) => b.boundTool!));
  for (const contract of contracts) {
    if (result.has(contract.role)) continue;
    // Optional (inventory) roles bind by explicit mapping or by name only: their contracts are
    // often empty objects, so structure alone would bind any tool with the scopes (memory_list
    // as list_agents) and the agent would never be told the tool it wanted is absent.
    const candidates = (contract.tier === 'optional' ? [] : [...tools.values()])
      .filter((tool) => !taken.has(tool.name) && evaluate(tool, contract).satisfied)
      .sort((a, b) => extraScopes(a, contract) - extraScopes(b, contract) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const chosen = candidates[0];
    if (chosen) {
      taken.add(chosen.name);
      result.set(contract.role, bind(contract, chosen, 'structure'));
      continue;
    }
    const named = tools.get(contract.name);
    // Report the same-named tool's problems: that is the tool the author most likely meant.
    result.set(
      contract.role,
      named
        ? bind(contract, named, 'name')
        : {
            role: contract.role,
            tier: contract.tier,
            boundTool: null,
            via: null,
            scopesGranted: [],
            satisfied: false,
            reasons: [
              `no host tool is named "${contract.name}" and none of the ${tools.size} offered tools accepts the contract's inputSchema with scopes [${contract.capabilityScopes.join(', ')}]`,
            ],
          },
    );
  }
  return contracts.map((c) => result.get(c.role)!);
}

function extraScopes(tool: HostTool, contract: ToolRoleContract): number {
  return tool.grantedScopes.filter((s) => !(contract.capabilityScopes as string[]).includes(s)).length;
}

// ---- input checks ---------------------------------------------------------------------------

function checkModelFacts(model: ModelFacts): ModelFacts {
  const problems: string[] = [];
  if (typeof model?.toolUse !== 'boolean') problems.push('toolUse must be a boolean');
  if (!Number.isSafeInteger(model?.contextWindowTokens) || model.contextWindowTokens < 1) {
    problems.push('contextWindowTokens must be a positive integer token count');
  }
  if (typeof model?.structuredOutput !== 'boolean') problems.push('structuredOutput must be a boolean');
  if (problems.length > 0) {
    throw new AcxError('contract-model-facts', `Model facts for the handshake are invalid: ${problems.join('; ')}`, {
      hint: 'Describe the model as { toolUse: boolean, contextWindowTokens: integer, structuredOutput: boolean }.',
    });
  }
  return { toolUse: model.toolUse, contextWindowTokens: model.contextWindowTokens, structuredOutput: model.structuredOutput };
}

function checkHostTools(hostTools: HostTool[]): Map<string, HostTool> {
  const tools = new Map<string, HostTool>();
  for (const tool of hostTools) {
    if (typeof tool?.name !== 'string' || tool.name === '') {
      throw new AcxError('contract-host-tools', 'A host tool has no name', { hint: 'Every host tool needs a non-empty name.' });
    }
    if (tools.has(tool.name)) {
      throw new AcxError('contract-host-tools', `Two host tools are named "${tool.name}"`, {
        hint: 'Give tools from different MCP servers distinct names (e.g. prefix them with the server name).',
      });
    }
    tools.set(tool.name, { ...tool, grantedScopes: checkScopeList(tool.grantedScopes, `grantedScopes of tool "${tool.name}"`) });
  }
  return tools;
}

function checkScopeList(scopes: string[], what: string): string[] {
  if (!Array.isArray(scopes)) throw new AcxError('contract-scopes', `${what} must be a list of capability scopes`);
  const bad = scopes.filter((s) => typeof s !== 'string' || !isCapabilityScope(s));
  if (bad.length > 0) {
    throw new AcxError('contract-scopes', `${what} contains unknown capability scope(s): ${bad.map((s) => JSON.stringify(s)).join(', ')}`, {
      hint: 'Scopes are exec, dispatch, memory.write, memory.read, search, knowledge.write, fs.read, fs.write, net.fetch, or x-<vendor>.',
    });
  }
  return [...new Set(scopes)];
}
