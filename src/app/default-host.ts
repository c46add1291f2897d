import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cartridge } from '../cartridge/container.ts';
import { cartridgeDefinition } from '../cartridge/definition.ts';
import { AREA_SCOPES, ROLE_BUILTINS } from '../agent-def/defaults.ts';
import { type AgentDefinition, readAgentDirectory } from '../agent-def/definition.ts';
import { checkSpec, type SpecReport } from '../cartridge/spec.ts';
import { negotiate } from '../contract/negotiate.ts';
import { CONTEXT_FLOOR_TOKENS } from '../engine/context-budget.ts';
import { createExecuteTool } from '../tools/builtin/execute.ts';
import { createFsTools } from '../tools/builtin/fs.ts';
import { createAddMemoryTool, createMemoryTools, createSearchMemoryTool } from '../memory/tools.ts';
import { DEFAULT_BUILTINS } from '../tools/builtin/names.ts';
import { createWebFetchTool } from '../tools/builtin/web-fetch.ts';
import type { Tool } from '../tools/tool.ts';
import { AcxError, errorMessage } from '../core/errors.ts';
import { contractFacing, grantedAreaScopes, HOST_PROTOCOL_REVISION, hostToolsOf } from './boot-cartridge.ts';
import { createDispatchTool } from './dispatch.ts';
import { listingHarness } from './listing-harness.ts';
import type { Harness } from '../harness/harness.ts';

/**
 * The host a cartridge meets on a default acx installation: the built-ins its agent.json asks for
 * and the role tools, in the contract-facing shape a cartridge gets (src/app/prepare.ts), with
 * no config-home MCP drop-ins or opt-ins, OS isolation present, and a model that states no window.
 * Described without opening, probing or connecting anything, so `acx spec` and `acx build` can say
 * before a cartridge ships whether its manifest can be satisfied.
 */

/** What the default-host check needs to know about an agent: its manifest, its built-ins, its own MCP servers. */
export interface HostSubject {
  manifestBytes: Uint8Array;
  /** agent.json `tools`; undefined means the default built-ins. */
  tools: readonly string[] | undefined;
  /** Names of the agent's own MCP drop-ins (their tools may bind roles; only a handshake can tell). */
  mcpServers: string[];
}

/** The tools a default host offers an agent that declares `wanted`. */
export function defaultHostTools(wanted: readonly string[] = DEFAULT_BUILTINS): Tool[] {
  const has = (name: string) => wanted.includes(name);
  // Nothing is executed: the memory store and the workspace are never opened.
  const store = () => {
    throw new AcxError('not-running', 'These tools describe a host; they do not run.');
  };
  const workspace = join(tmpdir(), 'acx-default-host');
  const tools: Tool[] = [];
  if (has('memory')) tools.push(...createMemoryTools(store), createAddMemoryTool(store), createSearchMemoryTool(store));
  if (has('fs')) tools.push(...createFsTools({ workspace }));
  if (has('execute')) tools.push(createExecuteTool({ workspace }));
  if (has('web_fetch')) tools.push(createWebFetchTool());
  if (has('dispatch')) tools.push(createDispatchTool({ harness: listingHarness, tools: () => tools, instructions: () => '', agentId: 'default-host' }));
  return tools.map(contractFacing);
}

/**
 * Why the manifest would be refused on a default host. Unbound roles and ungranted scopes are
 * `issues`, or `notes` when the agent brings MCP servers that might provide them; a context floor
 * above what acx assumes for an unknown model is a note (it depends on the model chosen at run).
 */
export function defaultHostProblems(subject: HostSubject): { issues: string[]; notes: string[] } {
  const tools = defaultHostTools(subject.tools);
  const areas = grantedAreaScopes(tools);
  let descriptor;
  try {
    descriptor = negotiate({
      manifestBytes: subject.manifestBytes,
      hostTools: hostToolsOf(tools),
      protocolRevision: HOST_PROTOCOL_REVISION,
      model: { toolUse: true, contextWindowTokens: CONTEXT_FLOOR_TOKENS, structuredOutput: false },
      grantedFilesystem: areas.filesystem,
      grantedNetwork: areas.network,
    });
  } catch (error) {
    return { issues: [`harness-requirements: ${errorMessage(error)}`], notes: [] };
  }
  const issues: string[] = [];
  const notes: string[] = [];
  const declared = subject.tools === undefined ? 'the default built-ins' : `agent.json "tools" [${subject.tools.join(', ')}]`;
  const unmetByMcp = (what: string) =>
    notes.push(`${what}; it must come from the agent's MCP servers (${subject.mcpServers.join(', ')}): \`acx handshake\` checks with them connected`);
  for (const check of descriptor.checks.filter((c) => !c.met)) {
    if (check.id === 'model.minContextWindowTokens') {
      notes.push(`the manifest asks for a ${check.requested.replace('>= ', '')}-token context window, above the ${CONTEXT_FLOOR_TOKENS} acx assumes for a model that states none: run it on a model whose provider states a larger window, or set --context-tokens`);
      continue;
    }
    const role = check.id.startsWith('tool:') ? check.id.slice('tool:'.length) : undefined;
    const area = /^(filesystem|network):/.test(check.id);
    if (!role && !area) {
      issues.push(`harness: a default acx host refuses this cartridge: ${check.id} requested ${check.requested}, acx offers ${check.offered}`);
      continue;
    }
    const what = role
      ? `${role} cannot be bound by ${declared}: ${(descriptor.bindings.find((b) => b.role === role)?.reasons ?? []).join('; ')}`
      : `${check.id.replace(':', ' scope ')} is not held by ${declared}`;
    if (subject.mcpServers.length > 0) unmetByMcp(what);
    else {
      // The built-in that would provide it, when the agent could simply declare one.
      const scope = area ? check.id.slice(check.id.indexOf(':') + 1) : undefined;
      const builtin = role ? ROLE_BUILTINS[role] : Object.entries(AREA_SCOPES).find(([, scopes]) => scopes?.includes(scope!))?.[0];
      const fix = builtin && !(subject.tools ?? DEFAULT_BUILTINS).includes(builtin) ? `add "${builtin}" to agent.json "tools"` : 'change the manifest, or serve the tool from an MCP server in mcp/';
      issues.push(`harness: a default acx host refuses this cartridge: ${what} → ${fix}`);
    }
  }
  return { issues, notes };
}

/** `acx spec`: the package-spec checks, then whether a default host would accept the manifest. */
export function checkSpecOnDefaultHost(target: string): SpecReport {
  const report = checkSpec(target);
  let subject: HostSubject | undefined;
  try {
    subject = report.kind === 'directory' ? directorySubject(target) : cartridgeSubject(target);
  } catch {
    return report; // the checks above already said why it cannot be read
  }
  if (!subject) return report;
  const { issues, notes } = defaultHostProblems(subject);
  return { ...report, ok: report.ok && issues.length === 0, issues: [...report.issues, ...issues, ...notes.map((n) => `note: ${n}`)] };
}

/** What the default-host check reads of an agent definition (a directory's or a ROM's, read the same way). */
export function subjectOf(definition: AgentDefinition): HostSubject {
  return { manifestBytes: definition.requirements.bytes, tools: definition.manifest.tools, mcpServers: definition.mcp.map((dropIn) => dropIn.name) };
}

/** Undefined when the derived requirements bind roles to built-ins the agent lacks: the spec check already says so. */
export function directorySubject(dir: string): HostSubject | undefined {
  const definition = readAgentDirectory(dir);
  return definition.requirements.unbound.length > 0 ? undefined : subjectOf(definition);
}

export function cartridgeSubject(path: string): HostSubject {
  const cart = Cartridge.open(path, { readonly: true });
  try {
    return subjectOf(cartridgeDefinition(cart, path));
  } finally {
    cart.close();
  }
}
