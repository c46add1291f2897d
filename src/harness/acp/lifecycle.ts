import { existsSync, readFileSync } from 'node:fs';
import * as acp from '@agentclientprotocol/sdk';
import { HarnessCapabilityUnsupportedError, errorMessage } from '../../core/errors.ts';
import type { PermissionMode } from '../../tools/permission.ts';
import { writeFileAtomic } from '../../util/atomic-write.ts';
import type { Logger } from '../../util/logger.ts';
import type { AgentProcess } from './agent-process.ts';
import { withPath } from './launch-env.ts';
import type { SandboxSession } from './sandbox.ts';
import type { ACPPermissionModeTarget, ACPSettings } from './settings.ts';

/**
 * The start of an ACP session on the agent: `initialize` (and `authenticate` when the profile
 * names a method), then a kept session reopened (`session/resume` preferred over `session/load`)
 * or a new one, the agent's session id recorded for the next reopening, and the model and
 * permission mode applied. Every request of this phase is bounded by the startup window.
 */

export interface LifecycleContext {
  settings: ACPSettings;
  proc: AgentProcess;
  log: Logger;
  /** Bounds each request of the start-up (settings.startupTimeoutMs). */
  startupTimeoutMs: number;
}

export async function initializeAgent(ctx: LifecycleContext, clientApp: { name: string; version: string }): Promise<acp.InitializeResponse> {
  const { settings, proc } = ctx;
  const agent = proc.connection.agent;
  const init = await proc.call(
    agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {
        fs: { readTextFile: false, writeTextFile: false },
        terminal: false,
        // The agent may report its own compactions (compaction_update): they become `compaction` parts.
        session: { compaction: {} },
        ...(settings.authentication?.clientCapabilities ?? {}),
        ...(settings.clientCapabilities ?? {}),
      },
      clientInfo: { name: clientApp.name, version: clientApp.version },
    }),
    'initialize',
    ctx.startupTimeoutMs,
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
    await proc.call(agent.request(acp.methods.agent.authenticate, { methodId, ...(settings.authentication?.meta ? { _meta: settings.authentication.meta } : {}) }), 'authenticate', ctx.startupTimeoutMs);
  }
  return init;
}

export interface AgentSessionInput {
  init: acp.InitializeResponse;
  sandbox: SandboxSession;
  mcpServers: acp.McpServer[];
  /** The instructions, when the profile passes them in session/new's `_meta`. */
  metaInstructions: { path: readonly string[]; text: string } | undefined;
  model: string | undefined;
  permissionMode: PermissionMode;
  modeTarget: ACPPermissionModeTarget | null | undefined;
  /** When the agent last sent a session/update: a session/load replay is waited out. */
  lastUpdateAt(): number;
  /** The caller asked for the kept session's history back (resumeFrom): no silent new conversation. */
  explicitResume: boolean;
}

/** The agent's session as it was opened. */
export interface OpenedAgentSession {
  sessionId: string;
  /** The kept session was reopened (session/resume or session/load): the agent has its history. */
  reopened: boolean;
  /** A later process can reopen it: the agent offers session/resume or session/load and the sandbox keeps the session. */
  reopenable: boolean;
}

/** Opens (or reopens) the agent's session and applies the model and permission mode. */
export async function openAgentSession(ctx: LifecycleContext, input: AgentSessionInput): Promise<OpenedAgentSession> {
  const { settings, proc, log, startupTimeoutMs } = ctx;
  const agent = proc.connection.agent;
  const { init, sandbox, mcpServers } = input;
  let meta: Record<string, unknown> | undefined = settings.session?.meta ? (JSON.parse(JSON.stringify(settings.session.meta)) as Record<string, unknown>) : undefined;
  if (input.metaInstructions) meta = withPath(meta, input.metaInstructions.path, input.metaInstructions.text);
  // A session kept by the sandbox is reopened on the agent (its history is the agent's own);
  // an agent that cannot, or no longer knows the session, starts a new one and says so — unless
  // the caller explicitly asked for the history back, where a new conversation would be a lie.
  const previous = readSessionRecord(sandbox.recordPath, settings.harnessId);
  let created: { sessionId: string; configOptions?: acp.SessionConfigOption[] | null; modes?: acp.SessionModeState | null } | undefined;
  const how = init.agentCapabilities?.sessionCapabilities?.resume ? 'resume' : init.agentCapabilities?.loadSession ? 'load' : undefined;
  if (previous) {
    if (!how && input.explicitResume) {
      throw new HarnessCapabilityUnsupportedError(
        `${settings.harnessId} (${init.agentInfo?.name ?? 'the agent'}) advertises neither session/resume nor session/load, so its session ${previous} cannot be reopened with its conversation.`,
        { hint: 'Open a new session instead (createSession() without resumeFrom), or use an agent that supports session/resume or session/load.' },
      );
    }
    if (!how) {
      log.warn('acp session not resumed', { acpSession: previous, reason: `${settings.harnessId} advertises neither session/resume nor session/load`, note: 'a new agent session starts without the earlier conversation' });
    } else {
      const params = { sessionId: previous, cwd: sandbox.workdir, mcpServers, ...(meta ? { _meta: meta } : {}) };
      try {
        // session/load replays the history as updates; with no turn active they are dropped.
        const reopened: acp.ResumeSessionResponse | acp.LoadSessionResponse =
          how === 'resume'
            ? await proc.call(agent.request(acp.methods.agent.session.resume, params), 'session/resume', startupTimeoutMs)
            : await proc.call(agent.request(acp.methods.agent.session.load, params), 'session/load', startupTimeoutMs);
        created = { sessionId: previous, configOptions: reopened.configOptions ?? null, modes: reopened.modes ?? null };
        // ACP has the agent replay the history *before* it answers session/load, but some
        // (Gemini CLI) stream it afterwards: wait for the replay to go quiet, so none of it is
        // taken for the first turn's reply.
        if (how === 'load') await replayQuiet(input.lastUpdateAt);
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
  const reopened = created !== undefined;
  created ??= await proc.call(agent.request(acp.methods.agent.session.new, { cwd: sandbox.workdir, mcpServers, ...(meta ? { _meta: meta } : {}) }), 'session/new', startupTimeoutMs);
  writeSessionRecord(sandbox.recordPath, settings.harnessId, created.sessionId);
  const sessionId = created.sessionId;
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
    const response = await proc.call(
      agent.request(acp.methods.agent.session.setConfigOption, typeof value === 'boolean' ? { sessionId, configId, type: 'boolean', value } : { sessionId, configId, value }),
      `session/set_config_option ${configId}`,
      startupTimeoutMs,
    );
    configOptions = response.configOptions ?? configOptions;
  };

  // Model mapping.
  const model = input.model;
  if (model) {
    const mm = settings.modelMapping;
    if (mm.type === 'session-config-option') await setConfig(mm.path, model, 'model');
    else {
      const id = mm.prefix && !model.startsWith(mm.prefix) ? `${mm.prefix}${model}` : model;
      await proc.call(agent.request('session/set_model', { sessionId, [mm.path]: id }), 'session/set_model', startupTimeoutMs);
    }
  }
  // Permission mode mapping, validated against what the session advertises.
  const modeTarget = input.modeTarget;
  if (modeTarget) {
    if (modeTarget.type === 'session-mode') {
      const modes = created.modes;
      const available = modes?.availableModes.map((m) => m.id) ?? [];
      if (!available.includes(modeTarget.modeId)) {
        throw new HarnessCapabilityUnsupportedError(`${settings.harnessId} does not advertise the session mode '${modeTarget.modeId}' for permissionMode '${input.permissionMode}'.`, {
          hint: `Advertised modes: ${available.join(', ') || 'none'}. (Claude Code advertises bypassPermissions as root only with IS_SANDBOX=1.)`,
        });
      }
      if (modes?.currentModeId !== modeTarget.modeId) {
        await proc.call(agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: modeTarget.modeId }), 'session/set_mode', startupTimeoutMs);
      }
    } else {
      await setConfig(modeTarget.configId, modeTarget.value, `permissionMode '${input.permissionMode}'`);
    }
  }
  return { sessionId, reopened, reopenable: how !== undefined && sandbox.recordPath !== undefined };
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
