import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { Cartridge } from '../cartridge/container.ts';
import { verifyCartridge, type VerifyResult } from '../cartridge/verify.ts';
import { CONTEXT_SOURCE_TEXT, resolveContextBudget } from '../engine/context-budget.ts';
import { connectMcpServers } from '../mcp/client.ts';
import { loadMcpConfigs } from '../mcp/config.ts';
import { describeModel } from '../model/providers.ts';
import { AcxError } from '../core/errors.ts';
import type { Logger } from '../util/logger.ts';
import type { ModelFacts } from './descriptor.ts';
import type { HostTool } from './negotiate.ts';
import { HARNESS_REQUIREMENTS_PATH, isPlainObject } from './requirements.ts';

/**
 * Where the handshake gets its inputs. The CLI is written against this interface; the sources
 * below are the real ones: the cartridge reader (verify first, then read the manifest's exact
 * bytes), the MCP client for `--mcp`, and the model layer for `--model`. The CLI adds acx's own
 * built-in tools for a cartridge (src/app/prepare.ts) on top.
 */
export interface HandshakeSources {
  /** The exact bytes of the cartridge's harness-requirements manifest. */
  readManifestBytes(file: string): Promise<Uint8Array>;
  /** Host tools from MCP servers (command lines or URLs) plus the negotiated revision. */
  listMcpTools(servers: string[]): Promise<{ tools: HostTool[]; protocolRevision?: string }>;
  /**
   * Model facts for a model id, or for no model at all (context window, tool use, structured
   * output), and where the context window figure came from.
   */
  describeModel(modelId: string | undefined): Promise<Partial<ModelFacts> & { contextWindowSource?: string }>;
}

const SQLITE_HEADER = 'SQLite format 3\u0000';

export interface HandshakeSourceOptions {
  /** Trust registry the cartridge's signature is judged against. */
  registry?: string;
  /** This installation's own keyids (the `local` verdict). */
  ownKeys?: readonly string[];
  /** Called with the verification result of a cartridge before its manifest is read. */
  onVerified?: (result: VerifyResult) => void;
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
}

/** A cartridge is verified first; a tampered one is refused before its manifest is read. */
export function readCartridgeManifest(file: string, options: HandshakeSourceOptions = {}): Uint8Array {
  const result = verifyCartridge(file, { ...(options.registry ? { registry: options.registry } : {}), ...(options.ownKeys ? { ownKeys: options.ownKeys } : {}) });
  options.onVerified?.(result);
  if (result.verdict === 'tampered') {
    throw new AcxError('cartridge-tampered', `${file} is tampered; its manifest is not negotiated: ${result.reasons.join('; ')}`, {
      hint: 'Do not use this file; get a fresh copy from its publisher.',
    });
  }
  const cart = Cartridge.open(file, { readonly: true });
  try {
    const bytes = cart.getFile(HARNESS_REQUIREMENTS_PATH);
    if (!bytes) throw new AcxError('usage', `${file} has no ${HARNESS_REQUIREMENTS_PATH}`, { hint: 'Rebuild the cartridge with acx build (it always writes the manifest).' });
    return new Uint8Array(bytes);
  } finally {
    cart.close();
  }
}

/**
 * A cartridge (`.acx`), a path to `harness-requirements.json`, or a directory holding it
 * (directly or under `rom/manifest/`).
 */
export async function readManifestBytesFromPath(file: string, options: HandshakeSourceOptions = {}): Promise<Uint8Array> {
  const info = await stat(file).catch((cause: unknown) => {
    throw new AcxError('usage', `Cannot read ${file}: ${(cause as Error).message}`, {
      hint: 'Pass a cartridge, a harness-requirements.json file, or a directory containing one.',
      cause,
    });
  });
  let target = file;
  if (info.isDirectory()) {
    const candidates = [path.join(file, 'harness-requirements.json'), path.join(file, ...HARNESS_REQUIREMENTS_PATH.split('/'))];
    const found = [];
    for (const candidate of candidates) if (await stat(candidate).then((s) => s.isFile(), () => false)) found.push(candidate);
    if (found.length === 0) {
      throw new AcxError('usage', `${file} has no harness-requirements.json`, {
        hint: `Put the manifest at ${path.join(file, 'harness-requirements.json')} or ${path.join(file, HARNESS_REQUIREMENTS_PATH)}.`,
      });
    }
    target = found[0]!;
  }
  const bytes = new Uint8Array(await readFile(target));
  if (Buffer.from(bytes.subarray(0, 16)).toString('latin1') === SQLITE_HEADER) return readCartridgeManifest(target, options);
  return bytes;
}

/** `name=...` and `*.json` specs pass through; a bare command line or URL is named mcp1, mcp2, ... */
export function namedMcpSpecs(servers: readonly string[]): string[] {
  return servers.map((spec, index) => {
    const trimmed = spec.trim();
    return /^[A-Za-z0-9][A-Za-z0-9_.-]*=/.test(trimmed) || trimmed.endsWith('.json') ? trimmed : `mcp${index + 1}=${trimmed}`;
  });
}

/**
 * Connects each server (MCP initialize), lists its tools and disconnects. A tool's granted scopes
 * are those its drop-in config grants (`scopes`, default none; `--grant` adds more). The
 * negotiated revision is the oldest any server agreed to. A server that cannot be reached fails
 * the handshake with its reason: a descriptor made without it would describe another host.
 */
export async function listMcpHostTools(servers: readonly string[], options: HandshakeSourceOptions = {}): Promise<{ tools: HostTool[]; protocolRevision?: string }> {
  const configs = loadMcpConfigs({ specs: namedMcpSpecs(servers) });
  const connection = await connectMcpServers(configs, { ...(options.logger ? { logger: options.logger } : {}), ...(options.env ? { env: options.env } : {}) });
  try {
    const skipped = connection.servers.filter((server) => server.status !== 'ok');
    if (skipped.length > 0) {
      throw new AcxError('mcp-unavailable', `MCP server(s) could not be used for the handshake: ${skipped.map((s) => `${s.name}: ${s.reason}`).join('; ')}`, {
        hint: 'Check the command or URL (try it with `acx mcp`), or leave the server out.',
      });
    }
    const revisions = connection.servers.map((server) => server.protocolVersion).filter((v): v is string => typeof v === 'string').sort();
    return {
      tools: connection.tools.map((tool) => ({
        name: tool.name,
        description: tool.description,
        inputSchema: tool.inputSchema,
        grantedScopes: [...tool.capabilityScopes],
        source: 'mcp',
      })),
      ...(revisions[0] ? { protocolRevision: revisions[0] } : {}),
    };
  } finally {
    await connection.close();
  }
}

/**
 * The facts acx would run a model with, resolved the way the engine resolves them but offline:
 * tool use (acx drives every model through tool calls), the context window (ACX_MAX_CONTEXT_TOKENS
 * when set, else the engine's floor — a handshake asks no provider, so a model's own statement is
 * not known here), no structured-output guarantee. With no model id the same resolution applies
 * and the source says so. A given id must name a provider acx knows.
 */
export function describeModelFacts(modelId: string | undefined, env: NodeJS.ProcessEnv = process.env): ModelFacts & { contextWindowSource: string } {
  if (modelId) describeModel({ spec: modelId, env });
  const host = Number(env.ACX_MAX_CONTEXT_TOKENS);
  const budget = resolveContextBudget({ configured: Number.isInteger(host) && host > 0 ? host : undefined });
  const contextWindowSource =
    budget.source === 'config'
      ? `${CONTEXT_SOURCE_TEXT.config} ACX_MAX_CONTEXT_TOKENS`
      : modelId
        ? `${CONTEXT_SOURCE_TEXT.floor}; a handshake asks no provider: pass --context-window N for ${modelId}'s own`
        : `${CONTEXT_SOURCE_TEXT.floor}; no model given: pass --model or --context-window`;
  return { toolUse: true, contextWindowTokens: budget.limit, structuredOutput: false, contextWindowSource };
}

/** The real sources: cartridge reader, MCP client, model layer. */
export function createHandshakeSources(options: HandshakeSourceOptions = {}): HandshakeSources {
  return {
    readManifestBytes: (file) => readManifestBytesFromPath(file, options),
    listMcpTools: (servers) => listMcpHostTools(servers, options),
    describeModel: async (modelId) => describeModelFacts(modelId, options.env),
  };
}

/** Host tools described in a JSON file: an array (or {tools: [...]}) of {name, inputSchema, grantedScopes?, description?, source?}. */
export async function readHostToolsFile(file: string): Promise<HostTool[]> {
  let value: unknown;
  try {
    value = JSON.parse(await readFile(file, 'utf8'));
  } catch (cause) {
    throw new AcxError('usage', `Cannot read host tools from ${file}: ${(cause as Error).message}`, {
      hint: 'The tools file is JSON: [{"name": "...", "inputSchema": {...}, "grantedScopes": ["exec"]}].',
      cause,
    });
  }
  const list = isPlainObject(value) && Array.isArray(value.tools) ? value.tools : value;
  if (!Array.isArray(list)) throw new AcxError('usage', `${file} must hold a JSON array of tools (or {"tools": [...]})`);
  return list.map((entry: unknown, index: number): HostTool => {
    const at = `${file}: tools[${index}]`;
    if (!isPlainObject(entry) || typeof entry.name !== 'string' || entry.name === '') throw new AcxError('usage', `${at} needs a "name"`);
    const schema = entry.inputSchema ?? { type: 'object' };
    if (!isPlainObject(schema) && typeof schema !== 'boolean') throw new AcxError('usage', `${at}.inputSchema must be a JSON Schema object`);
    const scopes = entry.grantedScopes ?? [];
    if (!Array.isArray(scopes) || scopes.some((s) => typeof s !== 'string')) throw new AcxError('usage', `${at}.grantedScopes must be a list of strings`);
    return {
      name: entry.name,
      ...(typeof entry.description === 'string' ? { description: entry.description } : {}),
      inputSchema: schema as HostTool['inputSchema'],
      grantedScopes: scopes as string[],
      source: typeof entry.source === 'string' ? entry.source : 'file',
    };
  });
}

/** The default sources (no trust registry; see createHandshakeSources for one). */
export const fileHandshakeSources: HandshakeSources = createHandshakeSources();
