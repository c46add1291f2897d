import { Cartridge } from '../cartridge/container.ts';
import { digestsEqual } from '../cartridge/verify.ts';
import { COMPLIANCE_PATH, withSaveZone } from '../cartridge/save.ts';
import { CartridgeBootRefusal } from '../contract/boot-refusal.ts';
import type { ComplianceDescriptor, ModelFacts } from '../contract/descriptor.ts';
import type { HostGuardrail } from '../contract/guardrail-roles.ts';
import { negotiate, type HostTool } from '../contract/negotiate.ts';
import { preflightCheck } from '../contract/preflight.ts';
import { UnsupportedHarnessError } from '../contract/refusal.ts';
import { GUARDRAIL_ROLE_PREFIX, parseHarnessRequirements } from '../contract/requirements.ts';
import { resolveContextBudget } from '../engine/context-budget.ts';
import type { AgentGuardrails } from '../harness/guards.ts';
import type { McpServerStatus } from '../mcp/client.ts';
import { normalizeSchema, type JsonSchema } from '../tools/schema.ts';
import type { Tool } from '../tools/tool.ts';
import { AcxError } from '../core/errors.ts';
import { sha256Hex } from '../util/jcs.ts';
import { silentLogger, type Logger } from '../util/logger.ts';
import type { CartridgeRom } from './load-cartridge.ts';

// Loading (recognise, trust gate, read the ROM) is load-cartridge.ts; re-exported as the first steps of a boot.
export {
  cartridgeStateDir,
  type CartridgeRom,
  gateTrust,
  isCartridgePath,
  loadCartridge,
  type LoadedCartridge,
  readRom,
  type RomMemoryRecord,
  type TrustGateOptions,
} from './load-cartridge.ts';

/**
 * Booting a cartridge (beyond the reference implementation): the trust gate, reading what the
 * ROM says about the agent, the loop-context policy, and the activation handshake that runs
 * right before the first model call. Nothing here writes to the cartridge except
 * `activateCartridge` after an accepted handshake (the compliance descriptor, in SAVE).
 *
 * The order a run follows (src/app/prepare.ts):
 *   loadCartridge (open → verify → trust gate → read ROM) → assemble host tools →
 *   activateCartridge (negotiate → refuse? stop → preflight → persist descriptor) → run.
 */

/** The MCP revision acx itself speaks; used when no MCP server took part (the host's own tools). */
export const HOST_PROTOCOL_REVISION = '2025-11-25';

// ---------------------------------------------------------------------------------------------
// Refusals: each one ends the process with a code, after nothing was activated.

export { CartridgeBootRefusal, type BootRefusalKind } from '../contract/boot-refusal.ts';

// ---------------------------------------------------------------------------------------------
// The host side of the handshake

/**
 * The host tools as negotiation sees them: each loaded tool with its advertised inputSchema and
 * the scopes the host lets it exercise (what it declares and the Policy loaded it with).
 */
export function hostToolsOf(tools: readonly Tool[], mcpServers: readonly McpServerStatus[] = []): HostTool[] {
  const fromMcp = new Set(mcpServers.flatMap((server) => server.toolNames));
  return tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    grantedScopes: [...tool.capabilityScopes],
    source: fromMcp.has(tool.name) ? 'mcp' : 'builtin',
  }));
}

/** The oldest revision any connected MCP server agreed to; acx's own when none took part. */
export function negotiatedRevision(mcpServers: readonly McpServerStatus[]): string {
  const revisions = mcpServers
    .filter((server) => server.status === 'ok' && typeof server.protocolVersion === 'string')
    .map((server) => server.protocolVersion!)
    .sort();
  return revisions[0] ?? HOST_PROTOCOL_REVISION;
}

/**
 * Model facts: tool use (every model acx drives calls tools), the context window the engine
 * would resolve for this host (a host ceiling, else the model's statement, else the floor), and
 * structured output only when known. The cartridge's own compaction intent is not a fact about
 * the host and does not count here.
 */
export function modelFacts(input: { modelContextWindow?: number | undefined; hostContextTokens?: number | null | undefined; structuredOutput?: boolean }): ModelFacts {
  const host = input.hostContextTokens && input.hostContextTokens > 0 ? input.hostContextTokens : undefined;
  return {
    toolUse: true,
    contextWindowTokens: resolveContextBudget({ configured: host, modelLimit: input.modelContextWindow }).limit,
    structuredOutput: input.structuredOutput ?? false,
  };
}

/** Scopes the host grants as a whole: the fs.* / net.* scopes some loaded tool holds. */
export function grantedAreaScopes(tools: readonly Tool[]): { filesystem: string[]; network: string[] } {
  const all = new Set(tools.flatMap((tool) => tool.capabilityScopes));
  return {
    filesystem: [...all].filter((s) => s.startsWith('fs.')).sort(),
    network: [...all].filter((s) => s.startsWith('net.')).sort(),
  };
}

/**
 * A contract-facing copy of a built-in tool. Built-ins bound their string arguments (an empty
 * command, a 100k-character memory) in their schemas, which the structural-acceptance rules
 * rightly read as "rejects calls the contract allows". This copy declares the contract's value
 * space and checks the bounds itself, answering an out-of-range call with a tool error the
 * model can act on instead of a schema rejection. Tools without such bounds are returned as is.
 */
export function contractFacing<T extends Tool>(tool: T): T {
  const strict = normalizeSchema(tool.inputSchema);
  const relaxed = structuredClone(strict.jsonSchema) as JsonSchema;
  let changed = false;
  const properties = relaxed.properties as Record<string, JsonSchema> | undefined;
  for (const property of Object.values(properties ?? {})) {
    if (property && typeof property === 'object' && property.type === 'string') {
      for (const bound of ['minLength', 'maxLength']) {
        if (bound in property) {
          delete property[bound];
          changed = true;
        }
      }
    }
  }
  if (!changed) return tool;
  const execute = tool.execute;
  return {
    ...tool,
    inputSchema: relaxed,
    ...(execute
      ? {
          execute: (input: unknown, context: Parameters<NonNullable<Tool['execute']>>[1]) => {
            const checked = strict.validate(input);
            if (!checked.ok) throw new AcxError('tool-input', `invalid arguments: ${(checked.errors ?? []).join('; ')}`);
            return execute(checked.value, context);
          },
        }
      : {}),
  };
}

/** One line telling the agent which optional tools it runs without (empty when none). */
export function absentToolsNotice(descriptor: ComplianceDescriptor, manifestBytes: Uint8Array): string {
  // An absent guardrail is the host's to know about (the descriptor says so), not a tool to avoid.
  const absent = descriptor.optionalAbsent.filter((role) => !role.startsWith(GUARDRAIL_ROLE_PREFIX));
  if (absent.length === 0) return '';
  const { manifest } = parseHarnessRequirements(manifestBytes);
  const names = absent.map((role) => {
    const contract = manifest.optionalTools?.find((c) => c.role === role);
    return contract ? `${contract.name} (${role}: ${contract.description})` : role;
  });
  return `## Host notes\nThese optional tools are not available in this host, so you run without them: ${names.join('; ')}. Do not call them; work with the tools you have.`;
}

export interface ActivationInput {
  rom: CartridgeRom;
  tools: readonly Tool[];
  mcpServers: readonly McpServerStatus[];
  model: ModelFacts;
  /** The guardrails the host runs on the agent: bound to the manifest's guardrail roles by name and kind. */
  guardrails?: AgentGuardrails | undefined;
  logger?: Logger;
}

/** The host's guardrails as the handshake sees them. */
export function hostGuardrailsOf(guardrails: AgentGuardrails | undefined): HostGuardrail[] {
  return (['input', 'output', 'tool'] as const).flatMap((kind) => (guardrails?.[kind] ?? []).map((g) => ({ name: g.name, kind })));
}

export interface Activation {
  descriptor: ComplianceDescriptor;
  /** Whether the descriptor in SAVE was (re)written. */
  persisted: boolean;
  /** For the instructions: which optional tools are absent ('' when none). */
  notice: string;
}

/**
 * The activation handshake. Refusal and a failed preflight throw CartridgeBootRefusal before
 * anything is written; on accept the descriptor is persisted in SAVE (only when it changed).
 */
export function activateCartridge(input: ActivationInput): Activation {
  const logger = input.logger ?? silentLogger;
  const { rom } = input;
  const areas = grantedAreaScopes(input.tools);
  const descriptor = negotiate({
    manifestBytes: rom.manifestBytes,
    hostTools: hostToolsOf(input.tools, input.mcpServers),
    protocolRevision: negotiatedRevision(input.mcpServers),
    model: input.model,
    grantedFilesystem: areas.filesystem,
    grantedNetwork: areas.network,
    hostGuardrails: hostGuardrailsOf(input.guardrails),
  });
  if (descriptor.verdict === 'refuse') {
    logger.warn('cartridge refused', { file: rom.path, unmet: descriptor.unmet.join(',') });
    throw harnessRefusal(rom.path, descriptor);
  }
  const persistedBytes = readSaveFile(rom.path, COMPLIANCE_PATH);
  if (persistedBytes) {
    const check = preflightCheck(persistedBytes, rom.manifestBytes);
    if (!check.ok) {
      logger.warn('cartridge preflight refused', { file: rom.path, reasons: check.reasons.join('; ') });
      throw new CartridgeBootRefusal('preflight', `activation refused by the preflight self-check of ${rom.path} (${COMPLIANCE_PATH}):\n${check.reasons.map((r) => `  ${r}`).join('\n')}`, {
        hint: 'Nothing was activated and the SAVE zone was not touched. Run `acx handshake FILE` to negotiate again and persist a new descriptor.',
        ...(check.descriptor ? { descriptor: check.descriptor } : {}),
      });
    }
  }
  const text = `${JSON.stringify(descriptor, null, 2)}\n`;
  const persisted = !persistedBytes || !digestsEqual(sha256Hex(persistedBytes), sha256Hex(text));
  if (persisted) withSaveZone(rom.path, (save) => save.putComplianceDescriptor(descriptor));
  logger.info('cartridge accepted', {
    file: rom.path,
    bindings: descriptor.bindings.filter((b) => b.satisfied).map((b) => `${b.role}=${b.boundTool}`).join(','),
    optional_absent: descriptor.optionalAbsent.join(',') || 'none',
    ...(descriptor.guardrails ? { guardrails: descriptor.guardrails.map((g) => `${g.role}=${g.boundGuardrail ?? 'absent'}`).join(',') } : {}),
  });
  return { descriptor, persisted, notice: absentToolsNotice(descriptor, rom.manifestBytes) };
}

export function harnessRefusal(path: string, descriptor: ComplianceDescriptor): CartridgeBootRefusal {
  const error = new UnsupportedHarnessError(descriptor);
  // The JSON-RPC refusal (SPEC §8.5) ends the text, on its own line, for a program to read.
  return new CartridgeBootRefusal('unsupported-harness', `${path} was not activated: ${error.message}`, {
    hint: `${error.hint}\n${JSON.stringify(error.toJsonRpc())}`,
    descriptor,
  });
}

/** The bytes of a SAVE file, read without opening the cartridge for writing. */
export function readSaveFile(path: string, name: string): Buffer | null {
  const cart = Cartridge.open(path, { readonly: true });
  try {
    return cart.getFile(name);
  } finally {
    cart.close();
  }
}
