import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { Cartridge } from '../cartridge/container.ts';
import { digestsEqual, verifyOpen, type Verdict, type VerifyResult } from '../cartridge/verify.ts';
import { emptyRegistry, loadTrustRegistry } from '../cartridge/trust.ts';
import { COMPLIANCE_PATH, withSaveZone } from '../cartridge/save.ts';
import { type AgentDirectory, type AgentManifest, type Skill, stripHtmlComments } from '../config/agent-dir.ts';
import { CartridgeBootRefusal } from '../contract/boot-refusal.ts';
import type { ComplianceDescriptor, ModelFacts } from '../contract/descriptor.ts';
import { negotiate, type HostTool } from '../contract/negotiate.ts';
import { preflightCheck } from '../contract/preflight.ts';
import { UnsupportedHarnessError } from '../contract/refusal.ts';
import { HARNESS_REQUIREMENTS_PATH, parseHarnessRequirements } from '../contract/requirements.ts';
import { STEP_RESULT_BUDGET } from '../engine/caps.ts';
import { CHARS_PER_TOKEN, resolveContextBudget } from '../engine/context-budget.ts';
import type { McpServerStatus } from '../mcp/client.ts';
import { parseMcpConfigDocument, type McpServerConfig } from '../mcp/config.ts';
import { PROVIDERS } from '../model/providers.ts';
import { normalizeSchema, type JsonSchema } from '../tools/schema.ts';
import type { Tool } from '../tools/tool.ts';
import { AcxError, errorMessage } from '../core/errors.ts';
import { sha256Hex } from '../util/jcs.ts';
import { silentLogger, type Logger } from '../util/logger.ts';

/**
 * Booting a cartridge (beyond the reference implementation): the trust gate, reading what the
 * ROM says about the agent, the loop-context policy, and the activation handshake that runs
 * right before the first model call. Nothing here writes to the cartridge except
 * `activateCartridge` after an accepted handshake (the compliance descriptor, in SAVE).
 *
 * The order a run follows (src/agent/prepare.ts):
 *   loadCartridge (open → verify → trust gate → read ROM) → assemble host tools →
 *   activateCartridge (negotiate → refuse? stop → preflight → persist descriptor) → run.
 */

export const LOOP_POLICY_PATH = 'rom/policy/loop-context-policy.json';
/** The MCP revision acx itself speaks; used when no MCP server took part (the host's own tools). */
export const HOST_PROTOCOL_REVISION = '2025-11-25';

// ---------------------------------------------------------------------------------------------
// Recognising a cartridge

const SQLITE_HEADER = 'SQLite format 3\u0000';

/** A `.acx` path, or any regular file that starts with the SQLite header. Directories are not. */
export function isCartridgePath(path: string): boolean {
  if (path.toLowerCase().endsWith('.acx')) return true;
  if (!existsSync(path) || !statSync(path).isFile()) return false;
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(16);
    readSync(fd, head, 0, 16, 0);
    return head.toString('latin1') === SQLITE_HEADER;
  } finally {
    closeSync(fd);
  }
}

// ---------------------------------------------------------------------------------------------
// Refusals: each one ends the process with a code, after nothing was activated.

export { CartridgeBootRefusal, type BootRefusalKind } from '../contract/boot-refusal.ts';

// ---------------------------------------------------------------------------------------------
// The trust gate

export interface TrustGateOptions {
  /** Run `portable` (and unsigned `legacy`) cartridges: --allow-portable / ACX_ALLOW_PORTABLE=1. */
  allowPortable?: boolean;
  /** An acx.trust-registry/1 file: --registry / ACX_TRUST_REGISTRY. */
  registry?: string;
  /** Keyids of this installation's own keys (the `local` verdict). */
  ownKeys?: readonly string[];
  logger?: Logger;
  /** Used in messages: "run", "handshake". */
  purpose?: string;
}

const RUNNABLE: ReadonlySet<Verdict> = new Set(['trusted', 'local']);

/**
 * `tampered` never runs. `portable` (valid signature, key not trusted) and `legacy` (no usable
 * signature) run only when the operator allows it explicitly. The verdict is logged either way.
 */
export function gateTrust(result: VerifyResult, path: string, options: TrustGateOptions): void {
  const logger = options.logger ?? silentLogger;
  const fields = {
    file: path,
    verdict: result.verdict,
    ...(result.publisherId ? { publisher: result.publisherId } : {}),
    ...(result.keyid ? { keyid: result.keyid } : {}),
    why: result.reasons.join('; '),
  };
  if (result.verdict === 'tampered') {
    logger.error('cartridge verdict', fields);
    throw new CartridgeBootRefusal('tampered', `${path} is tampered and will not ${options.purpose ?? 'run'}:\n${result.reasons.map((r) => `  ${r}`).join('\n')}`, {
      hint: 'Do not use this file; get a fresh copy from its publisher.',
    });
  }
  if (RUNNABLE.has(result.verdict)) {
    logger.info('cartridge verdict', fields);
    return;
  }
  if (!options.allowPortable) {
    logger.warn('cartridge verdict', fields);
    throw new CartridgeBootRefusal('untrusted', `${path} is ${result.verdict}, not trusted: ${result.reasons.join('; ')}. Nothing was run.`, {
      hint:
        'Add the publisher\'s public key to a trust registry and pass --registry FILE (or ACX_TRUST_REGISTRY), ' +
        'or run it anyway with --allow-portable (or ACX_ALLOW_PORTABLE=1).',
    });
  }
  logger.warn('cartridge verdict', { ...fields, allowed_by: 'allow-portable' });
}

// ---------------------------------------------------------------------------------------------
// What the ROM says

/** The loop-context policy as acx applies it (SPEC §9): intent, not code. */
export interface LoopContextIntent {
  schemaVersion: string | null;
  maxTurns: number | null;
  /** context.compaction.targetTokenBudget */
  targetTokenBudget: number | null;
  /** context.toolResultTruncation */
  toolResultTruncation: { maxTokens: number | null; keepLastN: number | null } | null;
}

/** A ROM memory record as the booted agent sees it: searchable, never written. */
export interface RomMemoryRecord {
  id: string;
  text: string;
  tags: string[];
}

export interface CartridgeRom {
  path: string;
  cartridgeId: string;
  /** The recomputed ROM manifest hash ("sha256:…"). */
  romHash: string;
  agent: AgentManifest;
  systemPrompt: string;
  initialize: string;
  skills: Skill[];
  /** The exact bytes of rom/manifest/harness-requirements.json. */
  manifestBytes: Uint8Array;
  policy: LoopContextIntent;
  memory: RomMemoryRecord[];
  /** MCP drop-ins declared in ROM (rom/mcp/*.json). */
  mcp: McpServerConfig[];
}

export interface LoadedCartridge {
  rom: CartridgeRom;
  verify: VerifyResult;
  /** The agent as `acx run` sees a directory, so instructions and skills compose the same way. */
  agentDir: AgentDirectory;
  /** A stable directory name for this cartridge's local state (journal, memory index, workspace). */
  stateKey: string;
}

/**
 * Opens the cartridge read-only, verifies it, applies the trust gate, and only then reads the
 * ROM. A tampered or (unless allowed) untrusted cartridge is refused before any ROM content is
 * parsed.
 */
export function loadCartridge(path: string, options: TrustGateOptions = {}): LoadedCartridge {
  const file = resolve(path);
  const registry = options.registry ? loadTrustRegistry(options.registry) : emptyRegistry();
  const cart = Cartridge.open(file, { readonly: true });
  try {
    const verify = verifyOpen(cart, { registry, ...(options.ownKeys ? { ownKeys: options.ownKeys } : {}) });
    gateTrust(verify, file, options);
    const rom = readRom(cart, file, verify.manifestHash ?? '');
    const idPart = rom.agent.id.replace(/[^a-z0-9._-]/g, '-').slice(0, 64) || 'cartridge';
    return {
      rom,
      verify,
      agentDir: {
        dir: file,
        manifest: rom.agent,
        systemPrompt: rom.systemPrompt,
        initialize: rom.initialize,
        skills: rom.skills,
        mcpDir: undefined,
        memoryDir: undefined,
      },
      stateKey: `${idPart}-${sha256Hex(rom.cartridgeId).slice(0, 12)}`,
    };
  } finally {
    cart.close();
  }
}

function romText(cart: Cartridge, name: string): string {
  return cart.getFile(name)?.toString('utf8') ?? '';
}

function romError(path: string, message: string): AcxError {
  return new AcxError('cartridge-rom', `${path}: ${message}`, {
    hint: 'The cartridge verified, but its ROM is not bootable by acx; ask its publisher for a fixed build.',
  });
}

export function readRom(cart: Cartridge, path: string, romHash: string): CartridgeRom {
  const manifestBytes = cart.getFile(HARNESS_REQUIREMENTS_PATH);
  if (!manifestBytes) throw romError(path, `${HARNESS_REQUIREMENTS_PATH} is missing: a cartridge without harness requirements cannot be negotiated`);
  const meta = cart.allMeta();
  const agent = readAgentJson(cart, path, meta);
  const knowledge = (name: string) => stripHtmlComments(romText(cart, `rom/knowledge/${name}`));
  // acx layout: prompts/; reference agent-package layout: knowledge/IDENTITY.md + STYLE.md.
  const systemPrompt =
    stripHtmlComments(romText(cart, 'rom/prompts/system-prompt.md')) ||
    [knowledge('IDENTITY.md'), knowledge('STYLE.md')].filter(Boolean).join('\n\n');
  return {
    path,
    cartridgeId: meta['acx.cartridge_id'] ?? romHash,
    romHash,
    agent,
    systemPrompt,
    initialize: stripHtmlComments(romText(cart, 'rom/prompts/initialize.md')),
    skills: readSkills(cart, path),
    manifestBytes: new Uint8Array(manifestBytes),
    policy: parseLoopPolicy(cart.getFile(LOOP_POLICY_PATH), path),
    memory: readRomMemory(cart),
    // No host variable reaches a ROM drop-in unless the host grants it (prepare.ts adds the grant).
    mcp: cart
      .listFiles('rom/mcp/')
      .filter((name) => name.endsWith('.json'))
      .map((name) => ({
        ...parseMcpConfigDocument(romText(cart, name), `${path}:${name}`, name.slice('rom/mcp/'.length, -'.json'.length), process.cwd()),
        envGrant: [],
      })),
  };
}

function readAgentJson(cart: Cartridge, path: string, meta: Record<string, string>): AgentManifest {
  const text = romText(cart, 'rom/agent.json');
  let raw: Record<string, unknown> = {};
  if (text) {
    try {
      raw = JSON.parse(text) as Record<string, unknown>;
    } catch (error) {
      throw romError(path, `rom/agent.json is not JSON (${errorMessage(error)})`);
    }
  }
  const id = typeof raw.id === 'string' ? raw.id : (meta['acx.artifact_id'] ?? 'cartridge');
  // Reference cartridges carry acx.provider/acx.model; use them only when acx knows the provider.
  const provider = meta['acx.provider'];
  const metaModel = provider && PROVIDERS[provider] && meta['acx.model'] ? `${provider}:${meta['acx.model']}` : undefined;
  const stepBudget = typeof raw.stepBudget === 'number' ? raw.stepBudget : undefined;
  const manifest = {
    ...raw,
    id,
    name: typeof raw.name === 'string' ? raw.name : (meta['acx.agent_name'] ?? id),
    version: typeof raw.version === 'string' ? raw.version : (meta['acx.artifact_version'] ?? '0.0.0'),
    ...(typeof raw.model === 'string' ? {} : metaModel ? { model: metaModel } : {}),
    ...(raw.maxSteps === undefined && stepBudget !== undefined ? { maxSteps: stepBudget } : {}),
  } as AgentManifest;
  return manifest;
}

function readSkills(cart: Cartridge, path: string): Skill[] {
  const skills: Skill[] = [];
  for (const name of cart.listFiles('rom/skills/').filter((n) => /^rom\/skills\/[^/]+\/SKILL\.md$/.test(n))) {
    const text = romText(cart, name);
    const match = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(text);
    let front: { name?: unknown; description?: unknown } = {};
    try {
      front = (match ? parseYaml(match[1]!) : {}) ?? {};
    } catch (error) {
      throw romError(path, `${name} has unreadable frontmatter (${errorMessage(error)})`);
    }
    if (!match || typeof front.name !== 'string' || typeof front.description !== 'string') {
      throw romError(path, `${name} lacks agentskills.io frontmatter with a name and a description`);
    }
    skills.push({ name: front.name, description: front.description, body: match[2]!.trim(), path: name });
  }
  return skills.sort((a, b) => a.name.localeCompare(b.name));
}

function readRomMemory(cart: Cartridge): RomMemoryRecord[] {
  const rows = cart.db.prepare("SELECT id, payload FROM memory WHERE zone='rom' ORDER BY id").all() as Array<{ id: string; payload: string }>;
  const out: RomMemoryRecord[] = [];
  for (const row of rows) {
    let rec: Record<string, unknown>;
    try {
      rec = JSON.parse(row.payload) as Record<string, unknown>;
    } catch {
      continue; // verify already rejected malformed payloads as tampered
    }
    const summary = typeof rec.value === 'string' ? rec.value : typeof rec.summary === 'string' ? rec.summary : '';
    const title = typeof rec.title === 'string' && rec.title !== row.id && rec.title !== rec.key ? rec.title : '';
    const text = [title, summary].filter(Boolean).join(': ');
    if (!text.trim()) continue;
    out.push({ id: row.id, text, tags: Array.isArray(rec.tags) ? rec.tags.map(String) : [] });
  }
  return out;
}

export function parseLoopPolicy(bytes: Buffer | null, path = 'cartridge'): LoopContextIntent {
  const empty: LoopContextIntent = { schemaVersion: null, maxTurns: null, targetTokenBudget: null, toolResultTruncation: null };
  if (!bytes) return empty;
  let value: Record<string, any>;
  try {
    value = JSON.parse(bytes.toString('utf8')) as Record<string, any>;
  } catch (error) {
    throw romError(path, `${LOOP_POLICY_PATH} is not JSON (${errorMessage(error)})`);
  }
  const count = (v: unknown, where: string, allowZero = false): number | null => {
    if (v === undefined || v === null) return null;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < (allowZero ? 0 : 1)) {
      throw romError(path, `${LOOP_POLICY_PATH}: ${where} must be a ${allowZero ? 'non-negative' : 'positive'} integer (got ${JSON.stringify(v)})`);
    }
    return v;
  };
  const truncation = value?.context?.toolResultTruncation;
  return {
    schemaVersion: typeof value?.schemaVersion === 'string' ? value.schemaVersion : null,
    maxTurns: count(value?.loop?.maxTurns, 'loop.maxTurns'),
    targetTokenBudget: count(value?.context?.compaction?.targetTokenBudget, 'context.compaction.targetTokenBudget'),
    toolResultTruncation:
      truncation && typeof truncation === 'object'
        ? {
            maxTokens: count(truncation.maxTokens, 'context.toolResultTruncation.maxTokens'),
            keepLastN: count(truncation.keepLastN, 'context.toolResultTruncation.keepLastN', true),
          }
        : null,
  };
}

// ---------------------------------------------------------------------------------------------
// Applying the loop-context policy (host limits win)

export interface AppliedLoopPolicy {
  /** The step budget per turn and where it came from. */
  maxSteps: number;
  maxStepsSource: 'host' | 'policy' | 'agent' | 'default';
  /** The engine's context ceiling (compaction fires at half of it), or null for the engine's own resolution. */
  contextTokens: number | null;
  contextTokensSource: 'host' | 'policy' | 'engine';
  /** Policy knobs the engine has no setting for (reported, not silently dropped). */
  /** Characters of tool results a step keeps in the transcript (toolResultTruncation.maxTokens); null = the engine's default. */
  stepResultBudget: number | null;
  notApplied: string[];
}

/**
 * maxTurns → the step budget; compaction intent targetTokenBudget → the context ceiling set to
 * twice the target (the engine compacts at half its ceiling, i.e. when the context reaches the
 * target), never above the host's own window. Flags and environment win over both.
 */
export function applyLoopPolicy(input: {
  policy: LoopContextIntent;
  hostMaxSteps: number | undefined;
  agentMaxSteps: number | undefined;
  defaultMaxSteps: number;
  hostContextTokens: number | undefined;
  modelContextWindow?: number | undefined;
}): AppliedLoopPolicy {
  const { policy } = input;
  const steps =
    input.hostMaxSteps !== undefined
      ? { maxSteps: input.hostMaxSteps, maxStepsSource: 'host' as const }
      : policy.maxTurns !== null
        ? { maxSteps: policy.maxTurns, maxStepsSource: 'policy' as const }
        : input.agentMaxSteps !== undefined
          ? { maxSteps: input.agentMaxSteps, maxStepsSource: 'agent' as const }
          : { maxSteps: input.defaultMaxSteps, maxStepsSource: 'default' as const };
  let context: Pick<AppliedLoopPolicy, 'contextTokens' | 'contextTokensSource'> = { contextTokens: null, contextTokensSource: 'engine' };
  if (input.hostContextTokens !== undefined) context = { contextTokens: input.hostContextTokens, contextTokensSource: 'host' };
  else if (policy.targetTokenBudget !== null) {
    const window = resolveContextBudget({ modelLimit: input.modelContextWindow }).limit;
    context = { contextTokens: Math.min(window, policy.targetTokenBudget * 2), contextTokensSource: 'policy' };
  }
  // toolResultTruncation.maxTokens → the per-step result cap, never above the host's own cap
  // (which the compaction headroom guarantee counts on).
  const notApplied: string[] = [];
  const truncation = policy.toolResultTruncation;
  const stepResultBudget =
    truncation?.maxTokens != null ? Math.min(STEP_RESULT_BUDGET, Math.floor(truncation.maxTokens * CHARS_PER_TOKEN)) : null;
  if (truncation?.keepLastN != null) {
    notApplied.push(
      `context.toolResultTruncation.keepLastN ${truncation.keepLastN}: the engine keeps every result whole for the turn it ran in and caps it afterwards`,
    );
  }
  return { ...steps, ...context, stepResultBudget, notApplied };
}

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
  if (descriptor.optionalAbsent.length === 0) return '';
  const { manifest } = parseHarnessRequirements(manifestBytes);
  const names = descriptor.optionalAbsent.map((role) => {
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
  logger?: Logger;
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

/** Where a cartridge's local state lives: <state home>/cartridges/<id>-<12 hex of the cartridge id>. */
export function cartridgeStateDir(stateHome: string, stateKey: string): string {
  return join(stateHome, 'cartridges', stateKey);
}
