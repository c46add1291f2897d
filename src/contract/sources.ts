import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { AcxError } from '../util/errors.ts';
import type { ModelFacts } from './descriptor.ts';
import type { HostTool } from './negotiate.ts';
import { HARNESS_REQUIREMENTS_PATH, isPlainObject } from './requirements.ts';

/**
 * Where the handshake gets its inputs. The CLI is written against this interface so the cartridge
 * reader (src/cartridge), the MCP client (src/mcp) and the model layer (src/model) can be plugged
 * in without touching the handshake. The temporary implementations below cover what this layer
 * can do alone: manifest files on disk and host tools described in a JSON file.
 */
export interface HandshakeSources {
  /** The exact bytes of the cartridge's harness-requirements manifest. */
  readManifestBytes(file: string): Promise<Uint8Array>;
  /** Host tools from MCP servers (command lines or URLs) plus the negotiated revision. */
  listMcpTools(servers: string[]): Promise<{ tools: HostTool[]; protocolRevision?: string }>;
  /** Model facts for a model id (context window, tool use, structured output). */
  describeModel(modelId: string): Promise<Partial<ModelFacts>>;
}

const SQLITE_HEADER = 'SQLite format 3\u0000';

/**
 * Temporary manifest reader: a path to `harness-requirements.json`, or a directory holding it
 * (directly or under `rom/manifest/`). A `.acx` cartridge needs the cartridge reader.
 */
export async function readManifestBytesFromPath(file: string): Promise<Uint8Array> {
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
  if (Buffer.from(bytes.subarray(0, 16)).toString('latin1') === SQLITE_HEADER) {
    throw new AcxError('not-wired', `${file} is a cartridge; reading manifests out of .acx files is not connected yet`, {
      hint: `Extract it for now (sqlite3 ${file} -Ax ${HARNESS_REQUIREMENTS_PATH}) and pass the JSON file.`,
    });
  }
  return bytes;
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

/** The temporary sources: files only; MCP and model look-ups say they are not connected yet. */
export const fileHandshakeSources: HandshakeSources = {
  readManifestBytes: readManifestBytesFromPath,
  async listMcpTools() {
    throw new AcxError('not-wired', '--mcp is not connected to the MCP client yet', {
      hint: 'Describe the host tools in a JSON file and pass --tools FILE for now.',
    });
  },
  async describeModel(modelId: string) {
    throw new AcxError('not-wired', `Looking up the facts of model "${modelId}" is not connected yet`, {
      hint: 'Pass --context-window N (and --no-tool-use / --structured-output when they apply).',
    });
  },
};
