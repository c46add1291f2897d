import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as acp from '@agentclientprotocol/sdk';
import type { UserContent } from 'ai';
import type { AgentConfig, HarnessContinueInput, HarnessRunInput, HarnessSession } from '../harness.ts';
import type { CompactionReport } from '../../engine/events.ts';
import type { TurnHooks, TurnResult } from '../../engine/engine.ts';
import { type ApprovalRequest, emptyUsage, type HarnessStreamPart } from '../../engine/events.ts';
import { createHostToolServer, type HostToolServer } from '../../mcp/host-server.ts';
import { type HttpServing, serveHttp } from '../../mcp/serve.ts';
import { gateByPermissionMode, modeAllows } from '../../tools/permission.ts';
import { normalizeSchema } from '../../tools/schema.ts';
import type { Tool, ToolOutput } from '../../tools/tool.ts';
import { writeFileAtomic } from '../../util/atomic-write.ts';
import { AcxError, ConfigError, HarnessCapabilityUnsupportedError, TurnAbortedError, errorMessage } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';
import { type AgentProcess, connectAgentProcess } from './agent-process.ts';
import type { BootstrapResult } from './bootstrap.ts';
import { applyLaunchEnvJson, buildLaunchEnv, withPath } from './launch-env.ts';
import { describeNetworkPolicy, resolveNetworkPolicy } from './network-policy.ts';
import { answer, CANCELLED } from './permissions.ts';
import type { SandboxSession } from './sandbox.ts';
import { type ACPMcpServer, type ACPPermissionModeTarget, type ACPSettings, ASK_USER_QUESTIONS_TOOL, DEFAULT_SKILLS_DIRECTORY } from './settings.ts';
import { writeSkills } from './skills.ts';
import { createToolCatalog, type ToolCatalog } from './tool-catalog.ts';
import { finishReasonOf, permissionKindOf, TurnTranslator, usageOf } from './translate.ts';

/**
 * One acx session on an ACP agent: a sandbox session, the agent process, the host-tool MCP
 * server, and one ACP session. Turns run one at a time; cancellation sends `session/cancel`,
 * answers pending permission requests with `cancelled`, and leaves the session ready for the
 * next turn (or kills the agent if it does not stop in time).
 */

export const HOST_MCP_SERVER_NAME = 'acx';
// The bridge beside this module: .ts in a checkout, .js in the built package.
const BRIDGE_SCRIPT = fileURLToPath(new URL(`./mcp-stdio-bridge${extname(fileURLToPath(import.meta.url))}`, import.meta.url));

/** An ACP session of the adapter: a HarnessSession whose host tools can change between turns. */
export interface ACPHarnessSession extends HarnessSession {
  /**
   * Replaces the host tools served to the agent. Connected agents get
   * `notifications/tools/list_changed` and are expected to refetch; a turn in which the agent
   * still calls a removed tool without having refetched fails with
   * HarnessCapabilityUnsupportedError. A session opened without host tools has no MCP server to
   * change: open a new session instead.
   */
  setTools(tools: readonly Tool[]): void;
  /** The names of the host tools the agent is currently offered. */
  toolNames(): string[];
}

export interface OpenACPSessionInput {
  settings: ACPSettings;
  config: AgentConfig;
  sessionId: string;
  bootstrap: BootstrapResult;
  sandbox: SandboxSession;
  hostEnv: Record<string, string | undefined>;
  supportsRequestTransformations: boolean;
  clientApp: { name: string; version: string };
  logger: Logger;
}

interface ActiveTurn {
  turnId: string;
  hooks: TurnHooks;
  /** Where parts go: the current run()/continue() caller, or a buffer while the turn is paused. */
  emit: (part: HarnessStreamPart) => void;
  translator: TurnTranslator;
  cancelled: boolean;
  pendingPermissions: Set<(r: acp.RequestPermissionResponse) => void>;
  /** MCP calls of host tools without `execute`, held open until continue() supplies results. */
  held: Map<string, HeldCall>;
  /** Wakes the turn's driver when a call is held while it waits for the prompt. */
  wake: (() => void) | undefined;
  /** The in-flight session/prompt, as an outcome that never rejects (it may settle while paused). */
  outcome: Promise<{ response: acp.PromptResponse } | { error: unknown }> | undefined;
  /** Ends the outcome when the agent cannot: it was stopped after ignoring session/cancel. */
  forceOutcome?: ((value: { error: unknown }) => void) | undefined;
  /** Set when the host failed the turn (an upstream behind the credential broker is down). */
  failure?: AcxError | undefined;
  killTimer: NodeJS.Timeout | undefined;
  /** Parts produced while paused, replayed to the continue() caller. */
  buffer: HarnessStreamPart[] | undefined;
}

interface HeldCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
  resolve: (output: ToolOutput) => void;
  reject: (error: Error) => void;
}

function toMcpServer(name: string, server: ACPMcpServer): acp.McpServer {
  if (!('command' in server)) {
    return { type: server.type, name, url: server.url, headers: Object.entries(server.headers ?? {}).map(([n, value]) => ({ name: n, value })) };
  }
  return { name, command: server.command, args: [...(server.args ?? [])], env: Object.entries(server.env ?? {}).map(([n, value]) => ({ name: n, value })) };
}

function promptBlocks(prompt: string | UserContent, caps: acp.PromptCapabilities | undefined): acp.ContentBlock[] {
  if (typeof prompt === 'string') return [{ type: 'text', text: prompt }];
  const blocks: acp.ContentBlock[] = [];
  for (const part of prompt) {
    if (part.type === 'text') blocks.push({ type: 'text', text: part.text });
    else if (part.type === 'image' || (part.type === 'file' && String(part.mediaType ?? '').startsWith('image/'))) {
      if (!caps?.image) throw new HarnessCapabilityUnsupportedError('This ACP agent does not accept images in prompts (promptCapabilities.image is not advertised).');
      const data = part.type === 'image' ? part.image : part.data;
      const mimeType = (part.mediaType as string | undefined) ?? 'image/png';
      if (typeof data === 'string' && !/^https?:/.test(data)) blocks.push({ type: 'image', data, mimeType });
      else if (data instanceof Uint8Array) blocks.push({ type: 'image', data: Buffer.from(data).toString('base64'), mimeType });
      else throw new HarnessCapabilityUnsupportedError('Image prompts for ACP agents must be inline data, not URLs.');
    } else {
      throw new HarnessCapabilityUnsupportedError(`Prompt part type "${part.type}" cannot be sent to an ACP agent.`, { hint: 'Send text (and images when the agent supports them).' });
    }
  }
  return blocks;
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: () => AcxError): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(message()), ms);
      timer.unref();
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Waits until no session/update has arrived for `quietMs` (at most `maxMs` in all). */
async function replayQuiet(lastUpdateAt: () => number, quietMs = 300, maxMs = 3000): Promise<void> {
  const started = performance.now();
  for (;;) {
    const now = performance.now();
    const idle = now - Math.max(lastUpdateAt(), started);
    if (idle >= quietMs || now - started >= maxMs) return;
    await new Promise((resolve) => setTimeout(resolve, quietMs - idle));
  }
}

function listenError(error: unknown, port: number): AcxError {
  const code = (error as NodeJS.ErrnoException)?.code;
  if (code === 'EADDRINUSE' || code === 'EACCES') {
    return new AcxError('acp-port-unavailable', `The bridge port ${port} on 127.0.0.1 is not available (${code}).`, {
      hint: 'Free the port, or configure another exposed port (createACP port, or the sandbox ports).',
      cause: error,
    });
  }
  return new AcxError('acp-port-unavailable', `Could not listen on 127.0.0.1:${port}: ${errorMessage(error)}`, { cause: error });
}

let warnedUnconfined = false;

/**
 * Says how the agent is confined: once per process a WARNING when it runs unconfined on this
 * machine (no bubblewrap, or turned off), an INFO line per session when it is confined.
 */
function reportConfinement(sandbox: SandboxSession, settings: ACPSettings, hostEnv: Record<string, string | undefined>, log: Logger): void {
  const confinement = sandbox.confinement;
  if (confinement?.kind === 'none') {
    if (warnedUnconfined) return;
    warnedUnconfined = true;
    log.warn('acp agent not sandboxed', {
      reason: confinement.reason,
      note: 'the agent runs as a plain child process: it can read what this user can read and reach any host',
      hint: 'install bubblewrap (bwrap) to confine it',
    });
  } else if (confinement?.kind === 'bubblewrap') {
    log.info('acp agent sandboxed', { kind: 'bubblewrap', network: describeNetworkPolicy(resolveNetworkPolicy(settings.networkPolicy, hostEnv)) });
  }
}

export async function openACPSession(input: OpenACPSessionInput): Promise<ACPHarnessSession> {
  const { settings, config, sandbox, logger } = input;
  const log = logger.child({ harness: settings.harnessId, session: input.sessionId });
  reportConfinement(sandbox, settings, input.hostEnv, log);

  // Capability checks come before any process starts.
  const modeTarget: ACPPermissionModeTarget | null | undefined = settings.permissionModeMapping?.[config.permissionMode];
  if (settings.permissionModeMapping && modeTarget === null) {
    throw new HarnessCapabilityUnsupportedError(`${settings.harnessId} does not support permissionMode '${config.permissionMode}'.`, {
      hint: `Supported: ${Object.entries(settings.permissionModeMapping).filter(([, v]) => v !== null).map(([k]) => k).join(', ') || 'none'}.`,
    });
  }
  if (config.output !== undefined && !settings.outputSchemaMapping) {
    throw new HarnessCapabilityUnsupportedError(`${settings.harnessId} has no structured output mapping; ACP v1 does not standardize structured output.`, {
      hint: 'Remove output from the agent, or use a profile with outputSchemaMapping.',
    });
  }
  const port = settings.port ?? sandbox.ports[0];
  if (port === undefined) {
    throw new HarnessCapabilityUnsupportedError(`${settings.harnessId} needs a sandbox with at least one exposed port for the host bridge.`, {
      hint: 'Expose a port on the sandbox (e.g. ports: [4000]) or set port on createACP.',
    });
  }
  if (settings.port !== undefined && !sandbox.ports.includes(settings.port) && !sandbox.ports.includes(0)) {
    throw new HarnessCapabilityUnsupportedError(`Port ${settings.port} is not exposed by the sandbox (exposed: ${sandbox.ports.join(', ') || 'none'}).`, {
      hint: 'Set port to one of the exposed ports.',
    });
  }

  const cleanups: Array<() => Promise<void>> = [];
  const cleanup = async () => {
    for (const fn of cleanups.reverse()) await fn().catch(() => {});
    cleanups.length = 0;
  };
  let turn: ActiveTurn | undefined;

  /**
   * A call the caller answers: a host tool without `execute`, or the agent's question to the
   * user (askUserQuestions). It is held open, shown as a tool call, and the turn pauses until
   * continue() supplies its result (the ACP request stays in flight meanwhile).
   */
  const holdForResult = (call: { toolCallId: string; toolName: string; input: unknown }, signal?: AbortSignal): Promise<ToolOutput> => {
    const active = turn;
    if (!active || active.cancelled) {
      return Promise.reject(new AcxError('acp-no-turn', `${call.toolName} has no executor and no turn is waiting for its result.`));
    }
    return new Promise<ToolOutput>((resolve, reject) => {
      const held: HeldCall = { ...call, resolve, reject };
      active.held.set(call.toolCallId, held);
      signal?.addEventListener(
        'abort',
        () => {
          if (active.held.delete(call.toolCallId)) reject(new Error('The agent cancelled the tool call.'));
        },
        { once: true },
      );
      active.emit({ type: 'tool-call', ...call, providerExecuted: false, dynamic: false } as HarnessStreamPart);
      active.translator.toolCalls.push({ ...call });
      log.info('acp host call awaiting a result', { tool: call.toolName, toolCallId: call.toolCallId });
      active.wake?.();
    });
  };

  try {
    // Host tools, served in-process over Streamable HTTP on the bridge port with a bearer token.
    const gate = (list: readonly Tool[]): Tool[] => gateByPermissionMode(list, config.permissionMode);
    const tools: Tool[] = gate(config.tools);
    let host: HostToolServer | undefined;
    let catalog: ToolCatalog | undefined;
    let serving: HttpServing | undefined;
    if (tools.length > 0) {
      host = createHostToolServer(tools, {
        name: HOST_MCP_SERVER_NAME,
        version: '1',
        logger: log,
        approve: async (call) => {
          const active = turn;
          if (!active?.hooks.onApprovalRequest) return false;
          const request: ApprovalRequest = { approvalId: `approval-${randomUUID()}`, toolCallId: call.toolCallId, toolName: call.tool.name, input: call.input };
          active.emit({ type: 'tool-approval-request', ...request });
          const decision = await active.hooks.onApprovalRequest(request);
          return decision.approved;
        },
        // A host tool without `execute`: hold the MCP call and pause the turn until continue()
        // supplies the result (the ACP session/prompt stays in flight meanwhile).
        onCall: (call) => holdForResult({ toolCallId: call.toolCallId, toolName: call.tool.name, input: call.input }, call.signal),
      });
      const h = host;
      cleanups.push(() => h.close());
      catalog = createToolCatalog(host);
      const token = settings.mintBridgeToken ? settings.mintBridgeToken(sandbox.id) : undefined;
      if (token !== undefined && (typeof token !== 'string' || token.length < 16)) {
        // The bridge token is the only thing between the agent's sandbox and acx's host tools.
        throw new ConfigError(`${settings.harnessId}: mintBridgeToken must return a string of at least 16 characters; it returned ${typeof token === "string" ? `${token.length} characters` : `a ${typeof token}`}.`, {
          hint: 'Return a random token, e.g. randomBytes(32).toString("base64url"), or leave mintBridgeToken out for a generated one.',
        });
      }
      serving = await serveHttp(catalog.host, { port, ...(token !== undefined ? { token } : {}), logger: log }).catch((error: unknown) => {
        throw listenError(error, port);
      });
      const s = serving;
      cleanups.push(() => s.close());
    }

    // Launch environment, credentials, files below $HOME.
    const launch = await buildLaunchEnv(settings, {
      hostEnv: input.hostEnv,
      bootstrapEnv: input.bootstrap.env,
      sandboxEnv: sandbox.baseEnv(),
      supportsRequestTransformations: input.supportsRequestTransformations,
      clientApp: input.clientApp,
      logger: log,
      ...(sandbox.confinement?.kind === 'bubblewrap' ? { egress: resolveNetworkPolicy(settings.networkPolicy, input.hostEnv) } : {}),
      onUpstreamDown: (down) => {
        const error = new AcxError(
          'acp-upstream-unreachable',
          `${settings.harnessId} cannot reach its model API at ${down.upstream}${down.baseUrlEnv ? ` (${down.baseUrlEnv})` : ''}: ${down.reason}.`,
          { hint: `Check ${down.baseUrlEnv ?? 'the base URL the agent is configured with'}: acx's credential broker forwards the agent's requests there, and it did not answer.` },
        );
        log.error('acp upstream unreachable', { upstream: down.upstream, reason: down.reason });
        if (turn) failTurn(turn, error);
      },
    });
    if (launch.proxy) {
      const p = launch.proxy;
      cleanups.push(() => p.close());
    }
    const env = launch.env;
    const im = settings.instructionMapping;
    const instructions = config.instructions.trim();
    if (instructions && im?.type === 'launch-env-json') applyLaunchEnvJson(env, im.variable, im.path, instructions);
    if (instructions && im?.type === 'filesystem') sandbox.writeHomeFile(im.path, instructions + '\n');
    writeSkills(sandbox, settings.skillsDirectory ?? DEFAULT_SKILLS_DIRECTORY, config.skills ?? []);
    // The agent's model (AgentConfig.model) wins over the profile's own setting.
    const model = config.model ?? settings.model;
    if (settings.homeFiles) {
      const files = settings.homeFiles({ env: { ...env }, home: sandbox.home, ...(model ? { model } : {}) });
      for (const [path, contents] of Object.entries(files)) sandbox.writeHomeFile(path, contents);
    }

    // The agent's questions to the user: answered by the profile's callback, or paused as an
    // askUserQuestions call whose result (supplied with continue()) is the ACP response.
    const askUser = (params: unknown): Promise<unknown> => {
      const asking = settings.askUserQuestions!;
      if (asking.answer) return asking.answer(params);
      return holdForResult({ toolCallId: `ask-${randomUUID()}`, toolName: ASK_USER_QUESTIONS_TOOL, input: params });
    };

    // The agent process.
    let acpSessionId: string | undefined;
    // The slash commands each agent session advertised (available_commands_update), kept even when
    // they arrive outside a turn (right after session/new, before its answer): compact() needs /compact.
    const commandsBySession = new Map<string, readonly string[]>();
    /** When the agent last sent a session/update (a replay after session/load is waited out). */
    let lastUpdateAt = 0;
    const child = sandbox.spawn(input.bootstrap.executable, settings.args ?? [], {
      env,
      cwd: sandbox.workdir,
      readOnly: [input.bootstrap.dir],
      expose: [serving?.port, launch.proxy?.port].filter((port): port is number => port !== undefined),
    });
    let proc!: AgentProcess;
    proc = connectAgentProcess(
      child,
      {
        onUpdate: (params) => {
          lastUpdateAt = performance.now();
          if (params.update.sessionUpdate === 'available_commands_update') {
            commandsBySession.set(params.sessionId, params.update.availableCommands.map((c) => c.name));
          }
          if (params.sessionId !== acpSessionId || !turn || turn.cancelled) return; // late updates of a finished or cancelled turn
          turn.translator.handle(params.update);
        },
        onPermission: (params, signal) => onPermission(params, signal),
        onExtRequest: settings.askUserQuestions ? (method, params) => (method === settings.askUserQuestions!.method ? askUser(params) : undefined) : undefined,
      },
      { label: settings.harnessId, logger: log },
    );
    cleanups.push(() => proc.stop());
    const agentCall = <T>(promise: Promise<T>, what: string, timeoutMs?: number): Promise<T> => {
      // A dropped connection usually means the process is exiting: prefer its exit report.
      const settled = promise.catch(async (error: unknown) => {
        const exit = await Promise.race([proc.exited, new Promise<undefined>((r) => setTimeout(() => r(undefined), 2000).unref())]);
        throw exit ?? error;
      });
      const raced = Promise.race([settled, proc.exited.then((e) => Promise.reject(e))]);
      return timeoutMs === undefined
        ? raced
        : withTimeout(raced, timeoutMs, () => new AcxError('acp-startup-timeout', `${settings.harnessId} did not answer ${what} within ${timeoutMs} ms.`, { hint: 'Raise startupTimeoutMs, or check the agent\'s stderr and configuration.' }));
    };
    const ctx = proc.connection.agent;
    const startupTimeout = settings.startupTimeoutMs ?? 120_000;

    const init = await agentCall(
      ctx.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {
          fs: { readTextFile: false, writeTextFile: false },
          terminal: false,
          // The agent may report its own compactions (compaction_update): they become `compaction` parts.
          session: { compaction: {} },
          ...(settings.authentication?.clientCapabilities ?? {}),
          ...(settings.clientCapabilities ?? {}),
        },
        clientInfo: { name: input.clientApp.name, version: input.clientApp.version },
      }),
      'initialize',
      startupTimeout,
    );
    if (init.protocolVersion !== 1) {
      throw new HarnessCapabilityUnsupportedError(`${settings.harnessId} speaks ACP protocol version ${init.protocolVersion}; acx supports version 1.`);
    }
    const methodId = settings.authentication?.methodId;
    if (methodId) {
      const advertised = (init.authMethods ?? []).map((m) => m.id);
      if (!advertised.includes(methodId)) {
        throw new HarnessCapabilityUnsupportedError(`${settings.harnessId} does not advertise the authentication method '${methodId}'.`, { hint: `Advertised: ${advertised.join(', ') || 'none'}.` });
      }
      await agentCall(ctx.request(acp.methods.agent.authenticate, { methodId, ...(settings.authentication?.meta ? { _meta: settings.authentication.meta } : {}) }), 'authenticate', startupTimeout);
    }

    const mcpServers: acp.McpServer[] = [];
    if (serving) {
      if (settings.hostToolMcpTransport === 'http') {
        if (!init.agentCapabilities?.mcpCapabilities?.http) {
          throw new HarnessCapabilityUnsupportedError(`${settings.harnessId} does not advertise mcpCapabilities.http, so hostToolMcpTransport 'http' cannot be used.`, { hint: "Use hostToolMcpTransport: 'stdio'." });
        }
        mcpServers.push({ type: 'http', name: HOST_MCP_SERVER_NAME, url: serving.url, headers: [{ name: 'Authorization', value: `Bearer ${serving.token}` }] });
      } else {
        mcpServers.push({
          name: HOST_MCP_SERVER_NAME,
          command: process.execPath,
          args: [BRIDGE_SCRIPT],
          env: [
            { name: 'ACX_MCP_URL', value: serving.url },
            { name: 'ACX_MCP_TOKEN', value: serving.token },
          ],
        });
      }
    }
    for (const [name, server] of Object.entries(settings.mcpServers ?? {})) {
      if ((server.type === 'http' && !init.agentCapabilities?.mcpCapabilities?.http) || (server.type === 'sse' && !init.agentCapabilities?.mcpCapabilities?.sse)) {
        throw new HarnessCapabilityUnsupportedError(`${settings.harnessId} does not accept ${server.type} MCP servers (mcpServers.${name}).`);
      }
      mcpServers.push(toMcpServer(name, server));
    }

    let meta: Record<string, unknown> | undefined = settings.session?.meta ? (JSON.parse(JSON.stringify(settings.session.meta)) as Record<string, unknown>) : undefined;
    if (instructions && im?.type === 'session-meta') meta = withPath(meta, im.path, instructions);
    // A session kept by the sandbox is reopened on the agent (its history is the agent's own);
    // an agent that cannot, or no longer knows the session, starts a new one and says so.
    const previous = readSessionRecord(sandbox.recordPath, settings.harnessId);
    let created: { sessionId: string; configOptions?: acp.SessionConfigOption[] | null; modes?: acp.SessionModeState | null } | undefined;
    if (previous) {
      const how = init.agentCapabilities?.sessionCapabilities?.resume ? 'resume' : init.agentCapabilities?.loadSession ? 'load' : undefined;
      if (!how) {
        log.warn('acp session not resumed', { acpSession: previous, reason: `${settings.harnessId} advertises neither session/resume nor session/load`, note: 'a new agent session starts without the earlier conversation' });
      } else {
        const params = { sessionId: previous, cwd: sandbox.workdir, mcpServers, ...(meta ? { _meta: meta } : {}) };
        try {
          // session/load replays the history as updates; with no turn active they are dropped.
          const reopened: acp.ResumeSessionResponse | acp.LoadSessionResponse =
            how === 'resume'
              ? await agentCall(ctx.request(acp.methods.agent.session.resume, params), 'session/resume', startupTimeout)
              : await agentCall(ctx.request(acp.methods.agent.session.load, params), 'session/load', startupTimeout);
          created = { sessionId: previous, configOptions: reopened.configOptions ?? null, modes: reopened.modes ?? null };
          // ACP has the agent replay the history *before* it answers session/load, but some
          // (Gemini CLI) stream it afterwards: wait for the replay to go quiet, so none of it is
          // taken for the first turn's reply.
          if (how === 'load') await replayQuiet(() => lastUpdateAt);
          log.info('acp session resumed', { acpSession: previous, via: `session/${how}` });
        } catch (error) {
          const detail = (error as { data?: unknown }).data;
          log.warn('acp session not resumed', {
            acpSession: previous,
            error: errorMessage(error),
            detail: detail === undefined ? undefined : JSON.stringify(detail).slice(0, 500),
            note: 'a new agent session starts without the earlier conversation',
          });
        }
      }
    }
    created ??= await agentCall(
      ctx.request(acp.methods.agent.session.new, { cwd: sandbox.workdir, mcpServers, ...(meta ? { _meta: meta } : {}) }),
      'session/new',
      startupTimeout,
    );
    writeSessionRecord(sandbox.recordPath, settings.harnessId, created.sessionId);
    acpSessionId = created.sessionId;
    const sessionIdOnAgent = created.sessionId;
    let configOptions = created.configOptions ?? [];

    const setConfig = async (configId: string, value: string | boolean, purpose: string) => {
      const option = configOptions.find((o) => o.id === configId);
      if (!option) {
        throw new HarnessCapabilityUnsupportedError(`${settings.harnessId} has no session config option '${configId}' (${purpose}).`, { hint: `Advertised: ${configOptions.map((o) => o.id).join(', ') || 'none'}.` });
      }
      if (option.type === 'select' && typeof value === 'string') {
        const values = option.options.flatMap((o) => ('options' in o ? o.options.map((x) => x.value) : [o.value]));
        if (!values.includes(value)) {
          throw new HarnessCapabilityUnsupportedError(`${settings.harnessId} does not offer '${value}' for '${configId}' (${purpose}); offered: ${values.join(', ')}.`, { hint: 'Choose one of the offered values.' });
        }
        if (option.currentValue === value) return;
      }
      const response = await agentCall(
        ctx.request(acp.methods.agent.session.setConfigOption, typeof value === 'boolean' ? { sessionId: sessionIdOnAgent, configId, type: 'boolean', value } : { sessionId: sessionIdOnAgent, configId, value }),
        `session/set_config_option ${configId}`,
        startupTimeout,
      );
      configOptions = response.configOptions ?? configOptions;
    };

    // Model mapping.
    if (model) {
      const mm = settings.modelMapping;
      if (mm.type === 'session-config-option') await setConfig(mm.path, model, 'model');
      else {
        const id = mm.prefix && !model.startsWith(mm.prefix) ? `${mm.prefix}${model}` : model;
        await agentCall(ctx.request('session/set_model', { sessionId: sessionIdOnAgent, [mm.path]: id }), 'session/set_model', startupTimeout);
      }
    }
    // Permission mode mapping, validated against what the session advertises.
    if (modeTarget) {
      if (modeTarget.type === 'session-mode') {
        const modes = created.modes;
        const available = modes?.availableModes.map((m) => m.id) ?? [];
        if (!available.includes(modeTarget.modeId)) {
          throw new HarnessCapabilityUnsupportedError(`${settings.harnessId} does not advertise the session mode '${modeTarget.modeId}' for permissionMode '${config.permissionMode}'.`, {
            hint: `Advertised modes: ${available.join(', ') || 'none'}. (Claude Code advertises bypassPermissions as root only with IS_SANDBOX=1.)`,
          });
        }
        if (modes?.currentModeId !== modeTarget.modeId) {
          await agentCall(ctx.request(acp.methods.agent.session.setMode, { sessionId: sessionIdOnAgent, modeId: modeTarget.modeId }), 'session/set_mode', startupTimeout);
        }
      } else {
        await setConfig(modeTarget.configId, modeTarget.value, `permissionMode '${config.permissionMode}'`);
      }
    }
    log.info('acp session ready', { agent: init.agentInfo?.name ?? 'unknown', acpSession: sessionIdOnAgent, auth: launch.authMode });

    const hostToolNames = new Set(tools.map((t) => t.name));
    const mapped = settings.permissionModeMapping !== undefined;

    async function onPermission(params: acp.RequestPermissionRequest, signal: AbortSignal): Promise<acp.RequestPermissionResponse> {
      const active = turn;
      if (!active || active.cancelled || params.sessionId !== acpSessionId) return CANCELLED;
      const info = active.translator.toolFromPermission(params.toolCall);
      // Host tools are gated by acx itself (the host MCP server asks onApprovalRequest when the
      // permission mode requires it), so the agent's own prompt for them is answered here.
      if (!info.providerExecuted) return answer(params.options, true);
      const kind = permissionKindOf(params.toolCall.kind ?? info.kind);
      if (!mapped && modeAllows(config.permissionMode, kind) && params.options.some((o) => o.kind === 'allow_once')) return answer(params.options, true);
      if (!active.hooks.onApprovalRequest) {
        active.translator.denied(info.toolCallId, 'No approval handler: pass onApprovalRequest to answer ACP permission requests.');
        return answer(params.options, false);
      }
      const request: ApprovalRequest = { approvalId: `approval-${randomUUID()}`, toolCallId: info.toolCallId, toolName: info.toolName, input: params.toolCall.rawInput ?? info.input };
      active.emit({ type: 'tool-approval-request', ...request });
      return new Promise<acp.RequestPermissionResponse>((resolve) => {
        const settle = (r: acp.RequestPermissionResponse) => {
          active.pendingPermissions.delete(settle);
          resolve(r);
        };
        active.pendingPermissions.add(settle);
        signal.addEventListener('abort', () => settle(CANCELLED), { once: true });
        active.hooks.onApprovalRequest!(request).then(
          (decision) => {
            if (active.cancelled) return settle(CANCELLED);
            if (!decision.approved) active.translator.denied(info.toolCallId, decision.reason);
            settle(answer(params.options, decision.approved));
          },
          (error: unknown) => {
            log.warn('acp approval handler failed', { reason: errorMessage(error) });
            active.translator.denied(info.toolCallId, errorMessage(error));
            settle(answer(params.options, false));
          },
        );
      });
    }

    let firstTurn = true;
    let refreshedVersion = 0;
    let busy = false;
    /** A turn that returned with pendingToolCalls while its session/prompt is still in flight. */
    let paused: ActiveTurn | undefined;
    let dead: AcxError | undefined;
    void proc.exited.then((error) => {
      dead = error;
    });
    const cancelGraceMs = settings.cancelGraceMs ?? 10_000;
    const outputSchema = config.output !== undefined ? normalizeSchema(config.output) : undefined;

    /** Cancels a turn: session/cancel, pending permissions answered `cancelled`, held host calls ended with an error. */
    const cancelTurn = (active: ActiveTurn) => {
      if (active.cancelled) return;
      active.cancelled = true;
      for (const settle of [...active.pendingPermissions]) settle(CANCELLED);
      for (const held of [...active.held.values()]) held.reject(new Error('The turn was cancelled before the host supplied a result.'));
      active.held.clear();
      ctx.notify(acp.methods.agent.session.cancel, { sessionId: sessionIdOnAgent }).catch(() => {});
      // An agent that ignores session/cancel is stopped, so the caller never hangs — even when
      // its process tree keeps the connection's pipe open, the turn's outcome is ended here.
      active.killTimer = setTimeout(() => {
        void proc.stop().finally(() => active.forceOutcome?.({ error: new Error(`${settings.harnessId} ignored session/cancel and was stopped`) }));
      }, cancelGraceMs);
      active.killTimer.unref();
    };

    /**
     * Ends a turn with `error` from the host's side (its upstream is down): the agent is told to
     * cancel, but the caller gets the error, not an abort; the agent's own outcome is ignored.
     */
    const failTurn = (active: ActiveTurn, error: AcxError) => {
      if (active.cancelled || active.failure) return;
      active.failure = error;
      for (const settle of [...active.pendingPermissions]) settle(CANCELLED);
      ctx.notify(acp.methods.agent.session.cancel, { sessionId: sessionIdOnAgent }).catch(() => {});
      active.forceOutcome?.({ error });
    };

    const endTurn = (active: ActiveTurn) => {
      if (active.killTimer) clearTimeout(active.killTimer);
      for (const settle of [...active.pendingPermissions]) settle(CANCELLED);
      for (const held of [...active.held.values()]) held.reject(new Error('The turn ended before the host supplied a result.'));
      active.held.clear();
      if (turn === active) turn = undefined;
      if (paused === active) paused = undefined;
    };

    const pendingOf = (active: ActiveTurn) => [...active.held.values()].map(({ toolCallId, toolName, input: callInput }) => ({ toolCallId, toolName, input: callInput }));

    /** Returns from run()/continue() while held host calls wait; later parts are buffered for continue(). */
    const pause = (active: ActiveTurn, resumed: boolean): TurnResult => {
      const pendingToolCalls = pendingOf(active);
      const steps = active.translator.step;
      const usage = emptyUsage();
      active.translator.pause();
      active.emit({ type: 'finish', finishReason: 'tool-calls', totalUsage: usage });
      const buffer: HarnessStreamPart[] = [];
      active.buffer = buffer;
      active.emit = (part) => buffer.push(part);
      paused = active;
      log.info('acp turn paused', { awaiting_results: pendingToolCalls.length });
      return {
        sessionId: input.sessionId,
        turnId: active.turnId,
        text: '',
        unspoken: undefined,
        output: undefined,
        finishReason: 'tool-calls',
        usage,
        steps,
        toolCalls: [...active.translator.toolCalls],
        toolResults: [...active.translator.toolResults],
        pendingApprovals: [],
        pendingToolCalls,
        resumed,
      };
    };

    /** Consumes the prompt's updates until its stop reason, or pauses while a host call waits for a result. */
    const drive = async (active: ActiveTurn, hooks: TurnHooks, resumed: boolean): Promise<TurnResult> => {
      const emit = (part: HarnessStreamPart) => active.emit(part);
      const translator = active.translator;
      const onAbort = () => cancelTurn(active);
      hooks.abortSignal?.addEventListener('abort', onAbort, { once: true });
      let pausedAgain = false;
      try {
        if (hooks.abortSignal?.aborted) cancelTurn(active);
        let outcome: { response: acp.PromptResponse } | { error: unknown };
        for (;;) {
          if (!active.cancelled && active.held.size > 0) {
            pausedAgain = true;
            return pause(active, resumed);
          }
          const woke = new Promise<'held'>((resolve) => {
            active.wake = () => resolve('held');
          });
          const next = await Promise.race([active.outcome!, woke]);
          active.wake = undefined;
          if (next !== 'held') {
            outcome = next;
            break;
          }
        }
        if ('error' in outcome) {
          if (active.cancelled) {
            emit({ type: 'abort' });
            throw new TurnAbortedError();
          }
          const error = outcome.error;
          throw AcxError.isInstance(error) ? error : new AcxError('acp-prompt-failed', `${settings.harnessId} failed the prompt: ${errorMessage(error)}`, { cause: error });
        }
        const response = outcome.response;
        if (active.cancelled || response.stopReason === 'cancelled') {
          emit({ type: 'abort' });
          throw new TurnAbortedError();
        }
        const missing = catalog?.drainMissingCalls() ?? [];
        const stale = missing.filter((c) => c.removed && !c.refreshed);
        for (const call of missing.filter((c) => !stale.includes(c))) log.warn('acp agent called a tool the host does not provide', { tool: call.toolName });
        if (stale.length > 0) {
          const names = [...new Set(stale.map((c) => c.toolName))].join(', ');
          throw new HarnessCapabilityUnsupportedError(
            `${settings.harnessId} kept stale host tools: it called ${names}, which acx no longer provides, without refetching tools/list after notifications/tools/list_changed. Current tools: ${catalog!.names().join(', ') || 'none'}.`,
            { hint: 'This agent does not refresh its MCP tool list: open a new session after changing the tools.' },
          );
        }
        const finishReason = finishReasonOf(response.stopReason);
        const usage = usageOf(response);
        translator.finish(finishReason);
        emit({ type: 'finish', finishReason, totalUsage: usage });
        let output: unknown;
        if (outputSchema) {
          try {
            const parsed = JSON.parse(translator.text.trim().replace(/^```(?:json)?\s*|\s*```$/g, '')) as unknown;
            const checked = outputSchema.validate(parsed);
            if (!checked.ok) throw new Error((checked.errors ?? []).join('; '));
            output = checked.value;
          } catch (error) {
            throw new AcxError('acp-output-invalid', `${settings.harnessId} did not answer with JSON matching the output schema: ${errorMessage(error)}`, { hint: 'Check the profile\'s outputSchemaMapping.' });
          }
        }
        return {
          sessionId: input.sessionId,
          turnId: active.turnId,
          text: translator.text,
          unspoken: undefined,
          output,
          finishReason,
          usage,
          steps: translator.step,
          toolCalls: translator.toolCalls,
          toolResults: translator.toolResults,
          pendingApprovals: [],
          pendingToolCalls: [],
          resumed,
        };
      } finally {
        hooks.abortSignal?.removeEventListener('abort', onAbort);
        active.wake = undefined;
        if (!pausedAgain) endTurn(active);
      }
    };

    const runTurn = async (runInput: HarnessRunInput): Promise<TurnResult> => {
      if (dead) throw dead;
      if (paused) {
        throw new AcxError('acp-turn-paused', 'This ACP session has a turn paused for host tool results, so it cannot take a new message yet.', {
          hint: `Continue it first with continueGenerate/continueStream({ session, toolResults }) for ${pendingOf(paused).map((c) => c.toolCallId).join(', ')} (or continue with an aborted abortSignal to cancel it).`,
        });
      }
      if (busy) throw new AcxError('acp-turn-in-progress', 'This ACP session is already running a turn.', { hint: 'Wait for the turn to finish or cancel it first.' });
      busy = true;
      const active: ActiveTurn = {
        turnId: randomUUID(),
        hooks: runInput,
        emit: runInput.emit ?? runInput.observe ?? (() => {}),
        translator: undefined as unknown as TurnTranslator,
        cancelled: false,
        pendingPermissions: new Set(),
        held: new Map(),
        wake: undefined,
        outcome: undefined,
        killTimer: undefined,
        buffer: undefined,
      };
      active.translator = new TurnTranslator({ emit: (part) => active.emit(part), hostToolNames, hostServerName: HOST_MCP_SERVER_NAME, builtinTools: settings.builtinTools });
      try {
        if (runInput.abortSignal?.aborted) throw new TurnAbortedError();
        const blocks = promptBlocks(runInput.prompt, init.agentCapabilities?.promptCapabilities);
        if (firstTurn && instructions && !im) blocks.unshift({ type: 'text', text: `<instructions>\n${instructions}\n</instructions>` });
        let promptMeta: Record<string, unknown> | undefined;
        if (outputSchema && settings.outputSchemaMapping) promptMeta = withPath(undefined, settings.outputSchemaMapping.path, outputSchema.jsonSchema);
        if (catalog && catalog.version !== refreshedVersion) {
          // The catalog changed since the last turn: give connected agents a moment to handle
          // list_changed and refetch before the prompt, so a well-behaved agent sees new tools.
          refreshedVersion = catalog.version;
          if (!(await catalog.awaitRefresh(settings.toolRefreshGraceMs ?? 2000))) log.info('acp agent did not refetch host tools after list_changed');
        }
        catalog?.drainMissingCalls(); // calls between turns belong to no turn
        turn = active;
        active.emit({ type: 'start', sessionId: input.sessionId, turnId: active.turnId, resumed: false });
        active.translator.start();
        firstTurn = false;
        const forced = new Promise<{ error: unknown }>((resolve) => (active.forceOutcome = resolve));
        active.outcome = Promise.race([
          agentCall(ctx.request(acp.methods.agent.session.prompt, { sessionId: sessionIdOnAgent, prompt: blocks, ...(promptMeta ? { _meta: promptMeta } : {}) }), 'session/prompt').then(
            (response) => ({ response }),
            (error: unknown) => ({ error }),
          ),
          forced,
        ]);
        return await drive(active, runInput, false);
      } finally {
        if (!active.outcome) endTurn(active); // failed before the prompt was sent
        busy = false;
      }
    };

    const continueTurn = async (continueInput: HarnessContinueInput): Promise<TurnResult> => {
      if (dead) throw dead;
      if (busy) throw new AcxError('acp-turn-in-progress', 'This ACP session is already running a turn.', { hint: 'Wait for the turn to finish or cancel it first.' });
      const active = paused;
      if (!active) {
        throw new AcxError('acp-no-paused-turn', 'This ACP session has no turn waiting for tool results.', { hint: 'Send a new message with generate/stream instead.' });
      }
      if (continueInput.approvals && continueInput.approvals.length > 0) {
        throw new HarnessCapabilityUnsupportedError('ACP turns do not wait for approvals: they are answered inline through onApprovalRequest.', {
          hint: 'Continue this turn with toolResults only.',
        });
      }
      const results = continueInput.toolResults ?? [];
      const unknown = results.filter((r) => !active.held.has(r.toolCallId)).map((r) => r.toolCallId);
      if (unknown.length > 0) {
        throw new AcxError('acp-unknown-tool-call', `No paused tool call of this ACP session has the id ${unknown.join(', ')}.`, {
          hint: `Pending tool calls: ${[...active.held.keys()].join(', ') || 'none'}.`,
        });
      }
      busy = true;
      paused = undefined;
      try {
        const buffered = active.buffer ?? [];
        active.buffer = undefined;
        active.hooks = continueInput;
        active.emit = continueInput.emit ?? continueInput.observe ?? (() => {});
        active.emit({ type: 'start', sessionId: input.sessionId, turnId: active.turnId, resumed: true });
        if (!continueInput.abortSignal?.aborted) {
          for (const r of results) {
            const held = active.held.get(r.toolCallId);
            if (!held) continue; // listed twice
            active.held.delete(r.toolCallId);
            active.emit({ type: 'tool-result', toolCallId: held.toolCallId, toolName: held.toolName, input: held.input, output: r.output, providerExecuted: false } as HarnessStreamPart);
            active.translator.toolResults.push({ toolCallId: held.toolCallId, toolName: held.toolName, input: held.input, output: r.output });
            held.resolve(r.output as ToolOutput);
          }
        }
        active.translator.resume();
        for (const part of buffered) active.emit(part);
        return await drive(active, continueInput, true);
      } finally {
        busy = false;
      }
    };

    let closed = false;
    const close = async () => {
      if (closed) return;
      closed = true;
      if (paused) {
        // Held host calls end with an error result and the agent is told to cancel before it stops.
        const p = paused;
        cancelTurn(p);
        endTurn(p);
        // Let the agent acknowledge the cancel (bounded) so it is not killed mid-prompt.
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([p.outcome, new Promise<void>((r) => (timer = setTimeout(r, Math.min(cancelGraceMs, 2000))))]);
        clearTimeout(timer);
      }
      await cleanup();
    };
    return {
      id: input.sessionId,
      setTools(next: readonly Tool[]) {
        if (closed) throw new AcxError('acp-session-closed', 'This ACP session is closed.', { hint: 'Open a new session.' });
        if (!catalog) {
          throw new HarnessCapabilityUnsupportedError(`This ${settings.harnessId} session was opened without host tools, so the agent has no acx MCP server to refresh.`, {
            hint: 'Open a new session with the tools instead.',
          });
        }
        const gated = gate(next);
        catalog.setTools(gated);
        hostToolNames.clear();
        for (const t of gated) hostToolNames.add(t.name);
        log.info('acp host tools changed', { tools: gated.length, catalog: catalog.version });
      },
      toolNames: () => catalog?.names() ?? [],
      hasUnfinishedTurn: async () => paused !== undefined,
      run: runTurn,
      continue: continueTurn,
      detach: close,
      /** Compaction on request where the agent offers it: its own /compact command, run as a turn. */
      async compact() {
        const commands = (acpSessionId && commandsBySession.get(acpSessionId)) || [];
        if (!commands.includes('compact')) {
          throw new HarnessCapabilityUnsupportedError(`${settings.harnessId} advertises no /compact command, and standard ACP v1 has no portable API for manual compaction.`, {
            hint: `Let the agent compact its own context.${commands.length > 0 ? ` Its commands: ${commands.map((c) => `/${c}`).join(', ')}.` : ''}`,
          });
        }
        // Nothing to compact yet — and a first prompt would carry the instructions block ahead of the command.
        if (firstTurn) return { compacted: false, reason: 'no turn has run in this session yet' };
        let reported: CompactionReport | undefined;
        const result = await runTurn({
          prompt: '/compact',
          observe: (part) => {
            if (part.type === 'compaction') {
              const { type: _type, ...report } = part;
              reported = report;
            }
          },
        });
        // An agent that reports no compaction_update still ran its command: its reply is the summary we have.
        return { compacted: true, ...(reported ?? { summary: result.text }), trigger: 'manual' };
      },
      async destroy() {
        await close();
        await sandbox.destroy();
      },
    };
  } catch (error) {
    await cleanup();
    // A kept session's directory holds its history: a failed reopening must not erase it.
    if (sandbox.recordPath === undefined) await sandbox.destroy().catch(() => {});
    throw error;
  }
}

/** The agent's session id that a kept sandbox session recorded, if it is this harness's. */
function readSessionRecord(path: string | undefined, harnessId: string): string | undefined {
  if (!path || !existsSync(path)) return undefined;
  try {
    const record = JSON.parse(readFileSync(path, 'utf8')) as { harnessId?: unknown; acpSessionId?: unknown };
    return record.harnessId === harnessId && typeof record.acpSessionId === 'string' ? record.acpSessionId : undefined;
  } catch {
    return undefined; // unreadable: start afresh rather than fail the run
  }
}

function writeSessionRecord(path: string | undefined, harnessId: string, acpSessionId: string): void {
  if (path) writeFileAtomic(path, `${JSON.stringify({ harnessId, acpSessionId })}\n`);
}
