import type { PermissionMode } from '../../tools/permission.ts';
import { ConfigError, HarnessCapabilityUnsupportedError } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';
import type { TelemetrySettings } from '../../engine/telemetry.ts';
import type { JournalStore } from '../../store/journal-store.ts';
import type { CredentialRequestTransformation } from './credential-proxy.ts';
import { checkNetworkPolicy, type NetworkPolicy } from './network-policy.ts';
import { isSafeRelativePath } from './relative-path.ts';
import type { Sandbox } from './sandbox.ts';

/**
 * Everything `createACP` accepts, and the validation that runs before any work: a profile with a
 * bad setting fails at construction with a ConfigError naming the setting, and a combination
 * ACP v1 cannot honour fails with HarnessCapabilityUnsupportedError.
 */

export type ACPSource =
  | { type: 'npm-simple'; packageName: string; packageVersion?: string }
  | { type: 'npm-locked'; packageJson: string; pnpmLockYaml: string; pnpmWorkspaceYaml?: string }
  | { type: 'install-command'; command: string };

export type ACPModelMapping =
  | { type: 'session-config-option'; path: string }
  /** `prefix` is put before a model id that does not already start with it (OpenCode asks for `provider/model`). */
  | { type: 'session-model'; path: string; prefix?: string };

export type ACPInstructionMapping =
  | { type: 'session-meta'; path: readonly string[] }
  | { type: 'launch-env-json'; variable: string; path: readonly string[] }
  | { type: 'filesystem'; path: string };

export type ACPOutputSchemaMapping = { type: 'session-prompt-meta'; path: readonly string[] };

export type ACPPermissionModeTarget =
  | { type: 'session-mode'; modeId: string }
  | { type: 'session-config-option'; configId: string; value: string | boolean };

export type ACPPermissionModeMapping = Record<PermissionMode, ACPPermissionModeTarget | null>;

/** A Gateway placeholder, resolved only once AI Gateway authentication was selected. */
export type GatewaySource = 'gateway-api-key' | 'gateway-base-url' | 'gateway-authorization' | 'client-app' | 'client-app-name' | 'client-app-version';
export interface GatewayPlaceholder {
  $source: GatewaySource;
  ensureSuffix?: string;
}
/** A launch environment value: a string, a placeholder, or a JSON structure containing placeholders. */
export type GatewayEnvValue = string | number | boolean | null | GatewayPlaceholder | GatewayEnvValue[] | { [key: string]: GatewayEnvValue };

export interface ACPBuiltinTool {
  /** The programmatic name the agent reports, when it differs from the key. */
  nativeName?: string;
  description?: string;
  inputSchema?: unknown;
}

export interface ACPStdioMcpServer {
  type?: 'stdio';
  command: string;
  args?: readonly string[];
  env?: Record<string, string>;
}
export interface ACPHttpMcpServer {
  type: 'http' | 'sse';
  url: string;
  headers?: Record<string, string>;
}
export type ACPMcpServer = ACPStdioMcpServer | ACPHttpMcpServer;

export interface ACPAuthentication {
  /** The ACP auth method id to call `authenticate` with after `initialize`. */
  methodId?: string;
  meta?: Record<string, unknown>;
  clientCapabilities?: Record<string, unknown>;
}

export interface ACPAskUserQuestions {
  /** The agent-to-client ACP request method that asks the user questions. */
  method: string;
  /**
   * Answers the request; what it returns is the ACP response. Without it, the request becomes a
   * pending `askUserQuestions` tool call (its input: the request's params) that pauses the turn;
   * the result supplied with continueGenerate/continueStream is the ACP response.
   */
  answer?: (params: unknown) => Promise<unknown>;
}

/** The tool name an agent's questions to the user carry when they pause the turn. */
export const ASK_USER_QUESTIONS_TOOL = 'askUserQuestions';

export interface CredentialBrokeringInput {
  /** The effective host runtime environment (Gateway values override same-name direct values). */
  env: Record<string, string | undefined>;
  /** What the agent process sees: placeholders for brokered credentials. */
  sandboxEnv: Record<string, string | undefined>;
}

export interface ACPSettings {
  harnessId: string;
  version?: 'v1';
  source: ACPSource;
  executable: string;
  args?: readonly string[];
  forwardEnv?: readonly string[];
  credentialEnv?: readonly string[];
  credentialBrokering?: (input: CredentialBrokeringInput) => readonly CredentialRequestTransformation[];
  credentialForwarding?: (value: string, name: string) => string | Promise<string>;
  env?: Record<string, string>;
  builtinTools?: Record<string, ACPBuiltinTool>;
  mcpServers?: Record<string, ACPMcpServer>;
  hostToolMcpTransport?: 'stdio' | 'http';
  authentication?: ACPAuthentication;
  auth?: 'auto' | 'direct' | 'ai-gateway' | Record<string, string | undefined>;
  providerAuthentication?: { gateway: { env: Record<string, GatewayEnvValue> } };
  modelMapping: ACPModelMapping;
  skillsDirectory?: string;
  instructionMapping?: ACPInstructionMapping;
  outputSchemaMapping?: ACPOutputSchemaMapping;
  askUserQuestions?: ACPAskUserQuestions;
  permissionModeMapping?: ACPPermissionModeMapping;
  session?: { meta?: Record<string, unknown> };
  port?: number;
  startupTimeoutMs?: number;
  mintBridgeToken?: (sandboxId: string) => string;
  clientApp?: { name: string; version: string };
  /** Extra client capabilities merged into `initialize` (e.g. Cursor's `_meta`). */
  clientCapabilities?: Record<string, unknown>;

  // acx additions (not in the AI SDK adapter):
  /** The model to select through modelMapping. Without it the agent's default model is kept. */
  model?: string;
  /**
   * Files to write below the agent's $HOME before launch, computed from its final environment and
   * the model acx will ask for through modelMapping (as given, before any prefix), if any.
   */
  homeFiles?: (input: { env: Record<string, string>; home: string; model?: string }) => Record<string, string>;
  /** The host environment to read forwardEnv/credentials from; default process.env. */
  hostEnv?: Record<string, string | undefined>;
  /** Where the agent runs; default a local sandbox. */
  sandbox?: Sandbox;
  /**
   * What a confined agent may reach besides its model API (see network-policy.ts); default
   * $ACX_ACP_NETWORK_POLICY, else 'deny-all'. Enforced by the broker when the local sandbox
   * confines the agent (bubblewrap); without confinement the agent's network is not limited.
   */
  networkPolicy?: NetworkPolicy;
  /** Cache root for bootstraps; default $ACX_CACHE_DIR or ~/.cache/acx. */
  cacheDir?: string;
  /** After a session's host tools change, how long the next turn waits for the agent to refetch tools/list; default 2 s. */
  toolRefreshGraceMs?: number;
  /** How long to wait for the agent to answer `session/cancel` before killing it; default 10 s. */
  cancelGraceMs?: number;
  /**
   * Where the session's turns are journaled as they run (turn-journal.ts): a SQLite file path, a
   * postgres:// URL (agent 'default'), or a JournalStore (the engine harness's, to share one). With
   * it a turn survives the death of the acx process (the next process to open the session reopens
   * the agent's session and finishes the turn; no host tool runs twice), and a turn paused for an
   * approval or a host tool's result is listed by `listSuspended()` and answered from any process.
   * Without it turns are kept in this process's memory only. `acx run|chat --harness` pass the
   * agent's own journal.
   */
  journal?: string | JournalStore;
  /**
   * How long a turn paused for an approval or a host tool's result keeps the agent process waiting
   * with its request open (with a journal); default 10 minutes. After it the agent is stopped and
   * the turn waits in the journal: answering it then reopens the agent's session and presents the
   * answer again.
   */
  pausedTurnHoldMs?: number;
  /** OpenTelemetry spans for each turn, its steps and its host tool runs, as the engine names them; off when absent. */
  telemetry?: TelemetrySettings;
  /** Durability boundaries of a turn, reported so tests can kill the process exactly there. */
  checkpoint?: (event: ACPCheckpoint) => void;
  logger?: Logger;
  /** Install progress goes here; default process.stderr. `null` silences it. */
  progress?: NodeJS.WritableStream | null;
}

/** A durability boundary of an ACP turn (ACPSettings.checkpoint). */
export type ACPCheckpoint =
  | { at: 'turn-started'; turnId: string }
  | { at: 'host-call-started' | 'host-call-finished'; turnId: string; toolName: string; callId: string }
  | { at: 'turn-suspended' | 'turn-ended'; turnId: string };

export const DEFAULT_STARTUP_TIMEOUT_MS = 120_000;
export const DEFAULT_PAUSED_TURN_HOLD_MS = 10 * 60_000;
export const DEFAULT_SKILLS_DIRECTORY = '.agents/skills';

const KEBAB = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const EXACT_SEMVER = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;
const PACKAGE_NAME = /^(?:@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/;
const BARE_COMMAND = /^[A-Za-z0-9][A-Za-z0-9._+-]*$/;
const GATEWAY_SOURCES: readonly string[] = ['gateway-api-key', 'gateway-base-url', 'gateway-authorization', 'client-app', 'client-app-name', 'client-app-version'];

function fail(setting: string, message: string, hint: string): never {
  throw new ConfigError(`createACP: ${setting} ${message}`, { hint });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checkEnvNames(setting: string, names: unknown): void {
  if (names === undefined) return;
  if (!Array.isArray(names)) fail(setting, 'must be an array of environment variable names', `e.g. ${setting}: ['NAME']`);
  for (const name of names) {
    if (typeof name !== 'string' || !ENV_NAME.test(name)) fail(setting, `has an invalid variable name ${JSON.stringify(name)}`, 'Names match ^[A-Za-z_][A-Za-z0-9_]*$.');
  }
}

function checkPath(setting: string, path: unknown): void {
  if (!Array.isArray(path) || path.length === 0 || !path.every((p) => typeof p === 'string' && p.length > 0)) {
    fail(setting, 'path must be a non-empty array of property names', "e.g. path: ['systemPrompt', 'append']");
  }
  if (path.some((p) => p === '__proto__' || p === 'constructor' || p === 'prototype')) fail(setting, 'path names a reserved property', 'Use plain property names.');
}

function checkSource(source: unknown): void {
  if (!isRecord(source)) fail('source', 'is required', "Use { type: 'npm-simple', packageName }, { type: 'npm-locked', ... } or { type: 'install-command', command }.");
  switch (source.type) {
    case 'npm-simple':
      if (typeof source.packageName !== 'string' || !PACKAGE_NAME.test(source.packageName)) {
        fail('source.packageName', `is not a valid npm package name: ${JSON.stringify(source.packageName)}`, "e.g. '@agentclientprotocol/claude-agent-acp'");
      }
      if (source.packageVersion !== undefined && (typeof source.packageVersion !== 'string' || !EXACT_SEMVER.test(source.packageVersion))) {
        fail('source.packageVersion', `must be an exact version, got ${JSON.stringify(source.packageVersion)}`, "Give e.g. '1.2.3', or omit it to install the latest dist-tag.");
      }
      return;
    case 'npm-locked':
      for (const key of ['packageJson', 'pnpmLockYaml'] as const) {
        if (typeof source[key] !== 'string' || (source[key] as string).trim() === '') fail(`source.${key}`, 'must be the non-empty file contents', 'Pass the text of package.json and pnpm-lock.yaml.');
      }
      try {
        JSON.parse(source.packageJson as string);
      } catch {
        fail('source.packageJson', 'is not valid JSON', 'Pass the contents of a package.json file.');
      }
      if (source.pnpmWorkspaceYaml !== undefined && typeof source.pnpmWorkspaceYaml !== 'string') fail('source.pnpmWorkspaceYaml', 'must be a string', 'Pass the contents of pnpm-workspace.yaml or omit it.');
      return;
    case 'install-command':
      if (typeof source.command !== 'string' || source.command.trim() === '') fail('source.command', 'must be a non-empty Bash command', "e.g. 'curl https://example.com/install -fsS | bash'");
      return;
    default:
      fail('source.type', `is unknown: ${JSON.stringify(source.type)}`, "Use 'npm-simple', 'npm-locked' or 'install-command'.");
  }
}

function checkGatewayValue(setting: string, value: unknown): void {
  if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) return;
  if (Array.isArray(value)) {
    value.forEach((v, i) => checkGatewayValue(`${setting}[${i}]`, v));
    return;
  }
  if (!isRecord(value)) fail(setting, 'is not a serializable value', 'Use strings, JSON structures or { $source } placeholders.');
  if ('$source' in value) {
    if (typeof value.$source !== 'string' || !GATEWAY_SOURCES.includes(value.$source)) {
      fail(setting, `has an unknown $source ${JSON.stringify(value.$source)}`, `Known: ${GATEWAY_SOURCES.join(', ')}.`);
    }
    if (value.ensureSuffix !== undefined && typeof value.ensureSuffix !== 'string') fail(setting, 'ensureSuffix must be a string', "e.g. ensureSuffix: '/v1'");
    return;
  }
  for (const [k, v] of Object.entries(value)) checkGatewayValue(`${setting}.${k}`, v);
}

function checkModeTarget(mode: string, target: unknown): void {
  if (target === null) return;
  if (!isRecord(target)) fail(`permissionModeMapping['${mode}']`, 'must be a mapping or null', "e.g. { type: 'session-mode', modeId: 'default' }");
  if (target.type === 'session-mode') {
    if (typeof target.modeId !== 'string' || target.modeId === '') fail(`permissionModeMapping['${mode}'].modeId`, 'must be a non-empty string', 'Use a mode id the agent advertises.');
  } else if (target.type === 'session-config-option') {
    if (typeof target.configId !== 'string' || target.configId === '') fail(`permissionModeMapping['${mode}'].configId`, 'must be a non-empty string', 'Use a config option id the agent advertises.');
    if (typeof target.value !== 'string' && typeof target.value !== 'boolean') fail(`permissionModeMapping['${mode}'].value`, 'must be a string or boolean', 'Use a value the config option offers.');
  } else {
    fail(`permissionModeMapping['${mode}'].type`, `is unknown: ${JSON.stringify(target.type)}`, "Use 'session-mode' or 'session-config-option'.");
  }
}

export function validateSettings(settings: ACPSettings): void {
  if (!isRecord(settings)) fail('settings', 'must be an object', 'Pass the profile settings.');
  if (typeof settings.harnessId !== 'string' || !KEBAB.test(settings.harnessId)) {
    fail('harnessId', `must be stable kebab-case, got ${JSON.stringify(settings.harnessId)}`, "e.g. 'acp-claude-code'");
  }
  if (settings.version !== undefined && settings.version !== 'v1') {
    throw new HarnessCapabilityUnsupportedError(`createACP: ACP protocol version ${JSON.stringify(settings.version)} is not supported.`, { hint: "Only 'v1' is supported; omit version." });
  }
  checkSource(settings.source);
  if (typeof settings.executable !== 'string' || !BARE_COMMAND.test(settings.executable)) {
    fail('executable', `must be a bare command name, got ${JSON.stringify(settings.executable)}`, "e.g. 'claude-agent-acp' — no paths, no arguments (use args).");
  }
  if (settings.args !== undefined && (!Array.isArray(settings.args) || !settings.args.every((a) => typeof a === 'string'))) {
    fail('args', 'must be an array of strings', "e.g. args: ['acp']");
  }
  checkEnvNames('forwardEnv', settings.forwardEnv);
  checkEnvNames('credentialEnv', settings.credentialEnv);
  const credentials = new Set(settings.credentialEnv ?? []);
  for (const name of settings.forwardEnv ?? []) {
    if (credentials.has(name)) fail('forwardEnv', `lists the credential ${name}`, 'Credentials belong in credentialEnv only; forwardEnv is for non-credential configuration.');
  }
  if (settings.credentialBrokering !== undefined && typeof settings.credentialBrokering !== 'function') fail('credentialBrokering', 'must be a function', '({ env, sandboxEnv }) => transformations');
  if (settings.credentialBrokering !== undefined && credentials.size === 0) fail('credentialBrokering', 'needs credentialEnv', 'List the credential variable names in credentialEnv.');
  if (settings.credentialForwarding !== undefined && typeof settings.credentialForwarding !== 'function') fail('credentialForwarding', 'must be a function', '(value, name) => value');
  if (settings.env !== undefined) {
    if (!isRecord(settings.env)) fail('env', 'must be a record of strings', "e.g. env: { IS_SANDBOX: '1' }");
    for (const [k, v] of Object.entries(settings.env)) {
      if (!ENV_NAME.test(k) || typeof v !== 'string') fail('env', `has an invalid entry ${JSON.stringify(k)}`, 'Names match ^[A-Za-z_][A-Za-z0-9_]*$ and values are strings.');
      if (credentials.has(k)) fail('env', `sets the credential ${k}`, 'env is persisted at bootstrap; credentials come from credentialEnv at launch.');
    }
  }
  if (settings.builtinTools !== undefined) {
    if (!isRecord(settings.builtinTools)) fail('builtinTools', 'must be a record', "e.g. builtinTools: { Bash: { nativeName: 'Bash' } }");
    for (const [k, v] of Object.entries(settings.builtinTools)) {
      if (!isRecord(v)) fail(`builtinTools.${k}`, 'must be an object', '{ nativeName?, description?, inputSchema? }');
      if (v.nativeName !== undefined && typeof v.nativeName !== 'string') fail(`builtinTools.${k}.nativeName`, 'must be a string', 'The name the agent reports.');
    }
  }
  if (settings.mcpServers !== undefined) {
    if (!isRecord(settings.mcpServers)) fail('mcpServers', 'must be a record keyed by server name', "e.g. mcpServers: { docs: { type: 'http', url } }");
    for (const [name, server] of Object.entries(settings.mcpServers)) {
      if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) fail('mcpServers', `has an invalid server name ${JSON.stringify(name)}`, 'Names match ^[A-Za-z0-9_-]{1,64}$.');
      if (name === 'acx') fail('mcpServers', 'uses the reserved name "acx"', 'acx serves the host tools under that name; choose another.');
      const s = server as unknown as Record<string, unknown>;
      if (s.type === 'http' || s.type === 'sse') {
        if (typeof s.url !== 'string' || !/^https?:\/\//.test(s.url)) fail(`mcpServers.${name}.url`, 'must be an http(s) URL', 'e.g. https://example.com/mcp');
      } else if (s.type === undefined || s.type === 'stdio') {
        if (typeof s.command !== 'string' || s.command === '') fail(`mcpServers.${name}.command`, 'is required for a stdio server', 'Give the command to launch.');
      } else fail(`mcpServers.${name}.type`, `is unknown: ${JSON.stringify(s.type)}`, "Use 'stdio', 'http' or 'sse'.");
    }
  }
  if (settings.hostToolMcpTransport !== undefined && settings.hostToolMcpTransport !== 'stdio' && settings.hostToolMcpTransport !== 'http') {
    fail('hostToolMcpTransport', `must be 'stdio' or 'http', got ${JSON.stringify(settings.hostToolMcpTransport)}`, "Default 'stdio'.");
  }
  if (settings.authentication !== undefined) {
    if (!isRecord(settings.authentication)) fail('authentication', 'must be an object', "e.g. { methodId: 'api-key' }");
    if (settings.authentication.methodId !== undefined && (typeof settings.authentication.methodId !== 'string' || settings.authentication.methodId === '')) fail('authentication.methodId', 'must be a non-empty string', 'Use a method id the agent advertises.');
  }
  const auth = settings.auth;
  if (auth !== undefined && !isRecord(auth) && auth !== 'auto' && auth !== 'direct' && auth !== 'ai-gateway') {
    fail('auth', `is unknown: ${JSON.stringify(auth)}`, "Use 'auto', 'direct', 'ai-gateway' or an environment record.");
  }
  if (auth === 'ai-gateway' && !settings.providerAuthentication) {
    throw new HarnessCapabilityUnsupportedError("createACP: auth 'ai-gateway' needs providerAuthentication.gateway.env.", { hint: 'Describe how this implementation accepts Gateway configuration, or use direct authentication.' });
  }
  if (settings.providerAuthentication !== undefined) {
    const env = settings.providerAuthentication?.gateway?.env;
    if (!isRecord(env)) fail('providerAuthentication.gateway.env', 'must be a record', "e.g. { ANTHROPIC_API_KEY: { $source: 'gateway-api-key' } }");
    for (const [k, v] of Object.entries(env)) {
      if (!ENV_NAME.test(k)) fail('providerAuthentication.gateway.env', `has an invalid name ${JSON.stringify(k)}`, 'Names match ^[A-Za-z_][A-Za-z0-9_]*$.');
      checkGatewayValue(`providerAuthentication.gateway.env.${k}`, v);
    }
  }
  const mm = settings.modelMapping as unknown;
  if (!isRecord(mm)) fail('modelMapping', 'is required', "e.g. { type: 'session-config-option', path: 'model' }");
  if (mm.type !== 'session-config-option' && mm.type !== 'session-model') fail('modelMapping.type', `is unknown: ${JSON.stringify(mm.type)}`, "Use 'session-config-option' or 'session-model'.");
  if (typeof mm.path !== 'string' || mm.path === '') fail('modelMapping.path', 'must be a non-empty string', "e.g. 'model' or 'modelId'");
  if (mm.prefix !== undefined && (mm.type !== 'session-model' || typeof mm.prefix !== 'string' || mm.prefix === '')) {
    fail('modelMapping.prefix', "must be a non-empty string, on a 'session-model' mapping", "e.g. 'acx/'");
  }
  if (settings.skillsDirectory !== undefined && (typeof settings.skillsDirectory !== 'string' || !isSafeRelativePath(settings.skillsDirectory))) {
    fail('skillsDirectory', `must be a relative path below $HOME, got ${JSON.stringify(settings.skillsDirectory)}`, "e.g. '.claude/skills'");
  }
  const im = settings.instructionMapping as unknown;
  if (im !== undefined) {
    if (!isRecord(im)) fail('instructionMapping', 'must be an object', "e.g. { type: 'session-meta', path: ['systemPrompt'] }");
    if (im.type === 'session-meta') checkPath('instructionMapping', im.path);
    else if (im.type === 'launch-env-json') {
      if (typeof im.variable !== 'string' || !ENV_NAME.test(im.variable)) fail('instructionMapping.variable', 'must be an environment variable name', "e.g. 'CODEX_CONFIG'");
      checkPath('instructionMapping', im.path);
    } else if (im.type === 'filesystem') {
      if (typeof im.path !== 'string' || !isSafeRelativePath(im.path)) fail('instructionMapping.path', 'must be a relative path below $HOME', "e.g. '.grok/AGENTS.md'");
    } else fail('instructionMapping.type', `is unknown: ${JSON.stringify(im.type)}`, "Use 'session-meta', 'launch-env-json' or 'filesystem'.");
  }
  const om = settings.outputSchemaMapping as unknown;
  if (om !== undefined) {
    if (!isRecord(om) || om.type !== 'session-prompt-meta') fail('outputSchemaMapping', "must be { type: 'session-prompt-meta', path }", "e.g. { type: 'session-prompt-meta', path: ['outputSchema'] }");
    checkPath('outputSchemaMapping', om.path);
  }
  if (settings.askUserQuestions !== undefined) {
    const q = settings.askUserQuestions as unknown;
    if (!isRecord(q) || typeof q.method !== 'string' || q.method === '' || (q.answer !== undefined && typeof q.answer !== 'function')) {
      fail('askUserQuestions', 'must be { method, answer? }', 'method: the ACP request the agent sends; answer (optional): a function returning the response, else the turn pauses for it.');
    }
  }
  if (settings.permissionModeMapping !== undefined) {
    if (!isRecord(settings.permissionModeMapping)) fail('permissionModeMapping', 'must map all three permission modes', "Keys 'allow-reads', 'allow-edits', 'allow-all' (null when unsupported).");
    for (const mode of ['allow-reads', 'allow-edits', 'allow-all'] as const) {
      if (!(mode in settings.permissionModeMapping)) fail('permissionModeMapping', `is missing '${mode}'`, 'Map all three modes; set unsupported ones to null.');
      checkModeTarget(mode, settings.permissionModeMapping[mode]);
    }
  }
  if (settings.session !== undefined) {
    if (!isRecord(settings.session) || (settings.session.meta !== undefined && !isRecord(settings.session.meta))) fail('session.meta', 'must be a record', 'Serializable implementation-specific metadata.');
    try {
      JSON.stringify(settings.session.meta ?? {});
    } catch {
      fail('session.meta', 'is not serializable', 'Use plain JSON values.');
    }
  }
  if (settings.port !== undefined && (!Number.isInteger(settings.port) || settings.port < 1 || settings.port > 65535)) fail('port', `must be an integer 1-65535, got ${settings.port}`, 'Pick one of the sandbox ports.');
  if (settings.startupTimeoutMs !== undefined && (!Number.isFinite(settings.startupTimeoutMs) || settings.startupTimeoutMs <= 0)) fail('startupTimeoutMs', 'must be a positive number of milliseconds', 'Default 120000.');
  if (settings.mintBridgeToken !== undefined && typeof settings.mintBridgeToken !== 'function') fail('mintBridgeToken', 'must be a function', '(sandboxId) => token');
  if (settings.clientApp !== undefined) {
    const c = settings.clientApp as unknown;
    if (!isRecord(c) || typeof c.name !== 'string' || c.name === '' || typeof c.version !== 'string' || c.version === '') fail('clientApp', 'must be { name, version }', "e.g. { name: 'my-app', version: '1.0.0' }");
  }
  if (settings.model !== undefined && (typeof settings.model !== 'string' || settings.model === '')) fail('model', 'must be a non-empty string', "e.g. 'claude-sonnet-4-5'");
  if (settings.networkPolicy !== undefined) checkNetworkPolicy('createACP: networkPolicy', settings.networkPolicy);
  if (settings.journal !== undefined && !(typeof settings.journal === 'string' ? settings.journal !== '' : isRecord(settings.journal) && typeof settings.journal.transaction === 'function')) {
    fail('journal', 'must be a SQLite file path, a postgres:// URL or a JournalStore', "e.g. journal: join(stateDir, 'journal.db')");
  }
  if (settings.pausedTurnHoldMs !== undefined && (!Number.isFinite(settings.pausedTurnHoldMs) || settings.pausedTurnHoldMs < 0)) fail('pausedTurnHoldMs', 'must be a number of milliseconds, 0 or more', 'Default 600000 (10 minutes).');
  if (settings.checkpoint !== undefined && typeof settings.checkpoint !== 'function') fail('checkpoint', 'must be a function', '(event) => void');
  if (settings.homeFiles !== undefined && typeof settings.homeFiles !== 'function') fail('homeFiles', 'must be a function', '({ env, home, model }) => ({ relativePath: contents })');
}
