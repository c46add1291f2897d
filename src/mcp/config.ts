import fs from 'node:fs';
import path from 'node:path';
import { ConfigError, errorMessage } from '../core/errors.ts';
import { isCapabilityScope, type CapabilityScope, type ToolEffect, type ToolKind } from '../tools/tool.ts';
import { untrustedFileReason } from '../util/file-trust.ts';
import { parseMcpOAuthConfig, type McpOAuthConfig } from './oauth-config.ts';

/**
 * MCP drop-in configuration: one server per `mcp/*.json` file (the file stem names it), in the
 * standard shape a published server's README gives, or a `--mcp` spec on the command line.
 *
 *   { "command": "uvx", "args": ["x-mcp"], "env": { "KEY": "${X_KEY}" }, "cwd": "." }   stdio
 *   { "url": "https://host/mcp", "headers": { "Authorization": "Bearer ${TOKEN}" } }     HTTP
 *   { "url": "https://host/sse", "type": "sse" }                                        legacy HTTP+SSE
 *   { "mcpServers": { "name": { ...one of the above... } } }                            wrapper
 *
 * acx-specific optional keys per server: `scopes` (capability scopes granted to its tools,
 * default none), `kind` (default 'other'), `effect` (default 'unsafe'), `disabled` (skip it),
 * `required` / `optional` (whether a turn may start without it; see `required` below), and for
 * an HTTP server `oauth` (oauth-config.ts).
 * Other keys that editors write into these snippets (`autoApprove`, `description`...) are ignored.
 * `${VAR}` in env and header values is read from the host environment when connecting — any
 * variable for the host's own drop-ins, only the granted ones for a cartridge's (`envGrant`).
 */
interface McpServerConfigBase {
  /** The server's name; its tools appear as `<name>__<tool>`. */
  name: string;
  /** Where the config came from (a file path or `--mcp`), for error messages. */
  source: string;
  scopes: CapabilityScope[];
  kind: ToolKind;
  effect: ToolEffect;
  disabled: boolean;
  /**
   * Whether a turn may start without this server: a required one that fails to start stops the
   * run, wake or worker job before its turn (the event stays pending for a later try) instead of
   * letting the agent answer without its tools. From the file's `"required": true` or
   * `"optional": true`; absent there, what its origin implies (fromOrigin).
   */
  required?: boolean;
  /** Where the config came from (fromOrigin); absent: not said (taken as the host's). */
  origin?: McpOrigin;
  /**
   * The host variables `${VAR}` may name, when the host restricts them: a cartridge's ROM
   * drop-ins get only the variables the operator granted (none by default), so a signed file
   * cannot ask for the host's API keys. Absent: any variable (the host's own drop-ins).
   */
  envGrant?: readonly string[];
}

export interface McpStdioServerConfig extends McpServerConfigBase {
  transport: 'stdio';
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
}

/**
 * An HTTP server: `http` speaks Streamable HTTP and falls back to the legacy HTTP+SSE transport
 * when the server answers its first request with a 4xx other than 401/403 (as the MCP SDK
 * recommends for servers of unknown age); `sse` speaks only the legacy transport.
 */
export interface McpHttpServerConfig extends McpServerConfigBase {
  transport: 'http' | 'sse';
  url: string;
  headers: Record<string, string>;
  /** The drop-in's "oauth" block, when it has one; OAuth applies without it too (see oauth-config.ts). */
  oauth?: McpOAuthConfig;
}

export type McpServerConfig = McpStdioServerConfig | McpHttpServerConfig;

const SERVER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const TOOL_KINDS: readonly ToolKind[] = ['read', 'edit', 'execute', 'fetch', 'other'];
const TOOL_EFFECTS: readonly ToolEffect[] = ['read-only', 'idempotent', 'unsafe'];
const HINT = 'See "MCP drop-ins" in the README: {"command", "args"?, "env"?, "cwd"?} or {"url", "headers"?}.';

function fail(source: string, problem: string, hint = HINT): never {
  throw new ConfigError(`MCP config ${source}: ${problem}`, { hint });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stringRecord(value: unknown, source: string, key: string): Record<string, string> {
  if (value === undefined) return {};
  if (!isPlainObject(value)) fail(source, `"${key}" must be an object of string values`);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    // Values are not echoed: env and headers often hold credentials.
    if (typeof v !== 'string') fail(source, `"${key}.${k}" must be a string`);
    out[k] = v;
  }
  return out;
}

function validateName(name: string, source: string): string {
  if (!SERVER_NAME.test(name)) {
    fail(
      source,
      `server name "${name}" is not usable`,
      'Name servers with letters, digits, "_", "-" or "." (at most 64 characters, starting with a letter or digit).',
    );
  }
  return name;
}

/**
 * Validates one server entry (already unwrapped from any `mcpServers` wrapper).
 * `baseDir` resolves a relative `cwd`.
 */
export function parseMcpServerEntry(name: string, raw: unknown, source: string, baseDir: string): McpServerConfig {
  validateName(name, source);
  if (!isPlainObject(raw)) fail(source, `server "${name}" must be a JSON object`);
  const type = transportType(raw, source);
  const hasCommand = raw.command !== undefined;
  const hasUrl = raw.url !== undefined;
  if (hasCommand && hasUrl) fail(source, 'has both "command" and "url"; a server is either stdio or HTTP');
  if (!hasCommand && !hasUrl) fail(source, 'needs "command" (a stdio server) or "url" (a Streamable HTTP server)');
  if (type === 'stdio' && hasUrl) fail(source, '"type": "stdio" needs a "command", not a "url"');
  if ((type === 'http' || type === 'sse') && hasCommand) fail(source, `"type": "${type}" needs a "url", not a "command"`);

  let scopes: CapabilityScope[] = [];
  if (raw.scopes !== undefined) {
    if (!Array.isArray(raw.scopes)) fail(source, '"scopes" must be an array of capability scopes');
    for (const scope of raw.scopes) {
      if (typeof scope !== 'string' || !isCapabilityScope(scope)) {
        fail(source, `"scopes" holds an unknown capability scope ${JSON.stringify(scope)}`, 'Use the spec vocabulary (exec, dispatch, memory.write, memory.read, search, knowledge.write, fs.read, fs.write, net.fetch) or an x- scope.');
      }
    }
    scopes = [...(raw.scopes as CapabilityScope[])];
  }
  const kind = raw.kind ?? 'other';
  if (!TOOL_KINDS.includes(kind as ToolKind)) fail(source, `"kind" must be one of ${TOOL_KINDS.join(', ')}`);
  const effect = raw.effect ?? 'unsafe';
  if (!TOOL_EFFECTS.includes(effect as ToolEffect)) fail(source, `"effect" must be one of ${TOOL_EFFECTS.join(', ')}`);
  if (raw.disabled !== undefined && typeof raw.disabled !== 'boolean') fail(source, '"disabled" must be true or false');
  const required = requirementOf(raw, source);
  const base = { name, source, scopes, kind: kind as ToolKind, effect: effect as ToolEffect, disabled: raw.disabled === true, ...(required === undefined ? {} : { required }) };

  if (hasCommand) {
    if (typeof raw.command !== 'string' || raw.command.trim() === '') fail(source, '"command" must be a non-empty string');
    if (raw.args !== undefined && (!Array.isArray(raw.args) || raw.args.some((a) => typeof a !== 'string'))) {
      fail(source, '"args" must be an array of strings');
    }
    if (raw.cwd !== undefined && (typeof raw.cwd !== 'string' || raw.cwd === '')) fail(source, '"cwd" must be a non-empty string');
    if (raw.headers !== undefined) fail(source, '"headers" only applies to a "url" server');
    if (raw.oauth !== undefined) fail(source, '"oauth" only applies to a "url" server');
    const config: McpStdioServerConfig = {
      ...base,
      transport: 'stdio',
      command: raw.command,
      args: [...((raw.args as string[] | undefined) ?? [])],
      env: stringRecord(raw.env, source, 'env'),
    };
    if (typeof raw.cwd === 'string') config.cwd = path.resolve(baseDir, raw.cwd);
    return config;
  }

  if (typeof raw.url !== 'string') fail(source, '"url" must be a string');
  let url: URL;
  try {
    url = new URL(raw.url);
  } catch {
    fail(source, '"url" is not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail(source, `"url" must be http(s), not ${url.protocol}`);
  if (url.username || url.password) {
    fail(source, '"url" must not carry credentials', 'Put the credential in "headers" (e.g. "Authorization": "Bearer ${TOKEN}").');
  }
  for (const key of ['args', 'env', 'cwd'] as const) {
    if (raw[key] !== undefined) fail(source, `"${key}" only applies to a "command" server`);
  }
  const headers = stringRecord(raw.headers, source, 'headers');
  const config: McpHttpServerConfig = { ...base, transport: type === 'sse' ? 'sse' : 'http', url: url.toString(), headers };
  if (raw.oauth !== undefined) {
    if (Object.keys(headers).some((header) => header.toLowerCase() === 'authorization')) {
      fail(source, 'has both an "Authorization" header and "oauth"', 'Keep one: a fixed header (a token you manage), or "oauth" (acx mcp login gets and refreshes tokens).');
    }
    config.oauth = parseMcpOAuthConfig(raw.oauth, source);
  }
  return config;
}

/** `"type"` as editors write it, or `"transport"`: stdio, Streamable HTTP (several spellings), or the legacy sse. */
function transportType(raw: Record<string, unknown>, source: string): 'stdio' | 'http' | 'sse' | undefined {
  const spelled: Record<string, 'stdio' | 'http' | 'sse'> = { stdio: 'stdio', http: 'http', 'streamable-http': 'http', streamableHttp: 'http', sse: 'sse' };
  let found: 'stdio' | 'http' | 'sse' | undefined;
  for (const key of ['type', 'transport'] as const) {
    const value = raw[key];
    if (value === undefined) continue;
    if (typeof value !== 'string') fail(source, `"${key}" must be a string`);
    const type = spelled[value];
    if (!type) fail(source, `unknown "${key}" "${value}" (expected "stdio", "http" or "sse")`);
    if (found !== undefined && found !== type) fail(source, '"type" and "transport" disagree; keep one of them');
    found = type;
  }
  return found;
}

/** `"required": true|false` or `"optional": true|false` (the same thing said the other way); absent: undefined. */
function requirementOf(raw: Record<string, unknown>, source: string): boolean | undefined {
  for (const key of ['required', 'optional'] as const) {
    if (raw[key] !== undefined && typeof raw[key] !== 'boolean') fail(source, `"${key}" must be true or false`);
  }
  const required = raw.required as boolean | undefined;
  const optional = raw.optional as boolean | undefined;
  if (required !== undefined && optional !== undefined && required === optional) {
    fail(source, `says both "required": ${required} and "optional": ${optional}`, 'Keep one of them: "optional": true lets a turn start without this server.');
  }
  return required ?? (optional === undefined ? undefined : !optional);
}

/**
 * Where a server's config came from: the agent's own `mcp/`, a cartridge's ROM, a `--mcp` flag,
 * the config home's `mcp/` (the host's), or an editor over ACP (the client's).
 */
export type McpOrigin = 'agent' | 'cartridge' | 'flag' | 'host' | 'client';

/**
 * What the agent ships (its mcp/, a cartridge's ROM) and what the command line names are required
 * unless their file says `"optional": true`: the agent was built around them. What the host or an
 * editor adds is optional unless its file says `"required": true`.
 */
const REQUIRED_BY_DEFAULT: Record<McpOrigin, boolean> = { agent: true, cartridge: true, flag: true, host: false, client: false };

/** The config with its origin, and `required` as its file says or else as the origin implies. */
export function fromOrigin(config: McpServerConfig, origin: McpOrigin): McpServerConfig {
  return { ...config, origin, required: config.required ?? REQUIRED_BY_DEFAULT[origin] };
}

/**
 * Parses a config document. A plain entry is named `defaultName` (the file stem); a
 * `{"mcpServers": {...}}` wrapper must hold exactly one entry, named by its key.
 */
export function parseMcpConfigDocument(text: string, source: string, defaultName: string, baseDir: string): McpServerConfig {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (error) {
    fail(source, `is not valid JSON (${(error as Error).message})`, 'Fix the JSON syntax; comments and trailing commas are not allowed.');
  }
  if (!isPlainObject(doc)) fail(source, 'must be a JSON object');
  if (doc.mcpServers !== undefined) {
    if (!isPlainObject(doc.mcpServers)) fail(source, '"mcpServers" must be an object');
    const entries = Object.entries(doc.mcpServers);
    if (entries.length !== 1) {
      fail(
        source,
        `"mcpServers" must hold exactly one server, found ${entries.length}${entries.length ? ` (${entries.map(([k]) => k).join(', ')})` : ''}`,
        'Put each server in its own file under mcp/ (drop to add, delete to disable).',
      );
    }
    const [name, entry] = entries[0]!;
    return parseMcpServerEntry(name, entry, source, baseDir);
  }
  return parseMcpServerEntry(defaultName, doc, source, baseDir);
}

export function loadMcpConfigFile(file: string): McpServerConfig {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(`MCP config ${file}: cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`, {
      hint: 'Check that the file exists and is readable.',
    });
  }
  return parseMcpConfigDocument(text, file, path.basename(file, path.extname(file)), path.dirname(file));
}

/** Reads every `*.json` in `dir` (sorted by name). A missing directory means no drop-ins. */
export function loadMcpConfigDir(dir: string): McpServerConfig[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new ConfigError(`MCP config directory ${dir} cannot be read (${(error as NodeJS.ErrnoException).code})`);
  }
  const configs = names
    .filter((n) => n.endsWith('.json') && !n.startsWith('.'))
    .sort()
    .map((n) => loadMcpConfigFile(path.join(dir, n)));
  return assertUniqueNames(configs);
}

/** A drop-in file's text (or why it could not be read), where it came from, and what its relative paths resolve against. */
export interface McpDropInDocument {
  /** The file stem: the server's name unless the document names it. */
  name: string;
  source: string;
  text: string | Error;
  baseDir: string;
  /** Where the document came from (McpOrigin); default the host's config home. */
  origin?: McpOrigin;
}

export type SkippedDropIn = { name: string; source: string; reason: string };

/**
 * Why a drop-in file is not used, when someone other than acx's user or root could have written
 * it or its folder: a drop-in names a command acx starts (file-trust.ts). Undefined when it is safe.
 */
export function untrustedDropIn(source: string): ConfigError | undefined {
  const reason = untrustedFileReason(source);
  return reason === undefined ? undefined : new ConfigError(`MCP config ${source}: not used: ${reason}`);
}

/** The `*.json` drop-ins of a directory (sorted, hidden files left out, untrusted ones refused); a missing directory has none. */
export function readMcpDropInDir(dir: string): { documents: McpDropInDocument[]; skipped: SkippedDropIn[] } {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { documents: [], skipped: code === 'ENOENT' ? [] : [{ name: path.basename(dir), source: dir, reason: `the directory cannot be read (${code})` }] };
  }
  const documents = names
    .filter((n) => n.endsWith('.json') && !n.startsWith('.'))
    .sort()
    .map((file): McpDropInDocument => {
      const source = path.join(dir, file);
      let text: string | Error;
      try {
        text = untrustedDropIn(source) ?? fs.readFileSync(source, 'utf8');
      } catch (error) {
        text = new ConfigError(`MCP config ${source}: cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
      }
      return { name: path.basename(file, '.json'), source, text, baseDir: dir };
    });
  return { documents, skipped: [] };
}

/**
 * Drop-ins read the forgiving way a running agent needs: a file that cannot be read or parsed,
 * or that reuses a name (first one wins), is skipped with its reason instead of stopping the
 * agent (one bad drop-in must not take the others, or the agent, down). `--mcp` specs stay strict.
 */
export function parseMcpDropIns(documents: readonly McpDropInDocument[], skipped: SkippedDropIn[] = []): { configs: McpServerConfig[]; skipped: SkippedDropIn[] } {
  const configs: McpServerConfig[] = [];
  for (const document of documents) {
    try {
      if (document.text instanceof Error) throw document.text;
      const config = fromOrigin(parseMcpConfigDocument(document.text, document.source, document.name, document.baseDir), document.origin ?? 'host');
      const clash = configs.find((c) => c.name.toLowerCase() === config.name.toLowerCase());
      if (clash) skipped.push({ name: config.name, source: document.source, reason: `the name "${config.name}" is already used by ${clash.source}` });
      else configs.push(config);
    } catch (error) {
      skipped.push({ name: document.name, source: document.source, reason: errorMessage(error) });
    }
  }
  return { configs, skipped };
}

/** The drop-in directories `dirs`, read forgivingly (parseMcpDropIns). */
export function loadMcpDropIns(...dirs: string[]): { configs: McpServerConfig[]; skipped: SkippedDropIn[] } {
  const read = dirs.map(readMcpDropInDir);
  return parseMcpDropIns(read.flatMap((r) => r.documents), read.flatMap((r) => r.skipped));
}

/** Splits a command line on whitespace, honouring '...' and "..." quoting. No shell expansion. */
export function splitCommandLine(line: string): string[] {
  const out: string[] = [];
  let current = '';
  let quote: '"' | "'" | null = null;
  let started = false;
  for (const ch of line) {
    if (quote) {
      if (ch === quote) quote = null;
      else current += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      started = true;
    } else if (/\s/.test(ch)) {
      if (started) out.push(current);
      current = '';
      started = false;
    } else {
      current += ch;
      started = true;
    }
  }
  if (quote) throw new ConfigError(`--mcp "${line}": unbalanced ${quote} quote`);
  if (started) out.push(current);
  return out;
}

/**
 * A `--mcp` spec, one of:
 *   `name=https://host/mcp`        a Streamable HTTP server (http or https URL)
 *   `name=command arg1 "arg 2"`    a stdio server (split on spaces, quotes group; no shell)
 *   `path/to/server.json`          a config file, as in the mcp/ directory
 * `baseDir` resolves relative paths (defaults to the working directory).
 */
export function parseMcpSpec(spec: string, baseDir = process.cwd()): McpServerConfig {
  const source = `--mcp ${JSON.stringify(spec)}`;
  const match = /^([A-Za-z0-9][A-Za-z0-9_.-]*)=(.*)$/s.exec(spec.trim());
  if (!match) {
    if (spec.trim().endsWith('.json')) return loadMcpConfigFile(path.resolve(baseDir, spec.trim()));
    throw new ConfigError(`${source} is not an MCP server spec`, {
      hint: 'Use name=https://host/mcp, name=command arg..., or a path to a .json server config.',
    });
  }
  const name = match[1]!;
  const rest = match[2]!.trim();
  if (rest === '') fail(source, `server "${name}" has nothing after "="`, 'Give a URL or a command: name=https://host/mcp or name=command arg...');
  if (/^https?:\/\//i.test(rest)) return parseMcpServerEntry(name, { url: rest }, source, baseDir);
  const [command, ...args] = splitCommandLine(rest);
  return parseMcpServerEntry(name, { command, args }, source, baseDir);
}

/** Drop-ins from the config directory plus `--mcp` specs; a name may appear once. */
export function loadMcpConfigs(options: { dir?: string; specs?: readonly string[]; baseDir?: string }): McpServerConfig[] {
  const configs = options.dir ? loadMcpConfigDir(options.dir) : [];
  for (const spec of options.specs ?? []) configs.push(parseMcpSpec(spec, options.baseDir));
  return assertUniqueNames(configs);
}

function assertUniqueNames(configs: McpServerConfig[]): McpServerConfig[] {
  const seen = new Map<string, string>();
  for (const config of configs) {
    const key = config.name.toLowerCase();
    const earlier = seen.get(key);
    if (earlier !== undefined) {
      throw new ConfigError(`MCP server name "${config.name}" is used twice (${earlier} and ${config.source})`, {
        hint: 'Rename one of them; each server name must be unique because it prefixes its tools.',
      });
    }
    seen.set(key, config.source);
  }
  return configs;
}

/**
 * Replaces `${VAR}` with the host environment's value. Unset variables are reported by name
 * (never by value) so the caller can skip the server with a reason; so are variables outside
 * `grant` (when given), which are not read at all.
 */
export function expandEnvReferences(
  values: Record<string, string>,
  env: NodeJS.ProcessEnv,
  grant?: readonly string[],
): { values: Record<string, string>; missing: string[]; refused: string[] } {
  const missing: string[] = [];
  const refused: string[] = [];
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(values)) {
    out[key] = value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => {
      if (grant && !grant.includes(name)) {
        refused.push(name);
        return '';
      }
      const found = env[name];
      if (found === undefined) {
        missing.push(name);
        return '';
      }
      return found;
    });
  }
  return { values: out, missing: [...new Set(missing)], refused: [...new Set(refused)] };
}

/** A valid `${VAR}` name; grants are checked against it so a typo is caught where it is typed. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
