import { randomUUID } from 'node:crypto';
import type { AgentConfig, HarnessSession } from '../harness.ts';
import type { CompactionReport } from '../../engine/events.ts';
import { normalizeSchema } from '../../tools/schema.ts';
import type { Tool } from '../../tools/tool.ts';
import { AcxError, HarnessCapabilityUnsupportedError } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';
import { type AgentLaunchInput, launchAgent, reportConfinement } from './agent-launch.ts';
import { agentMcpServers, serveHostTools } from './host-tools.ts';
import { initializeAgent, openAgentSession } from './lifecycle.ts';
import type { JournalStore } from '../../store/journal-store.ts';
import { holdSession } from '../session-lease.ts';
import { TurnDriver } from './turn-driver.ts';
import { TurnJournal } from './turn-journal.ts';
import type { SandboxSession } from './sandbox.ts';
import { type ACPPermissionModeTarget, type ACPSettings, ASK_USER_QUESTIONS_TOOL, DEFAULT_STARTUP_TIMEOUT_MS } from './settings.ts';
import { type AgentSide, TurnRunner } from './turns.ts';

/**
 * One acx session on an ACP agent, composed of its parts: the host tools (host-tools.ts), the
 * agent process (agent-launch.ts, agent-process.ts), the session's start on the agent
 * (lifecycle.ts), and its turns (turns.ts, with permission-requests.ts and translate.ts).
 */

export { HOST_MCP_SERVER_NAME } from './host-tools.ts';

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

export interface OpenACPSessionInput extends Pick<AgentLaunchInput, 'settings' | 'config' | 'bootstrap' | 'sandbox' | 'hostEnv' | 'supportsRequestTransformations' | 'clientApp'> {
  sessionId: string;
  /** The caller asked for the kept session's history back: an agent that cannot reopen it is refused, not replaced. */
  explicitResume: boolean;
  logger: Logger;
  /** Where the session's turns are journaled; `durable` when the journal outlives this process (ACPSettings.journal). */
  journal: { store: JournalStore; durable: boolean };
}

/** Capability checks that come before any process starts; returns the permission-mode target and the bridge port. */
function checkCapabilities(settings: ACPSettings, config: AgentConfig, sandbox: SandboxSession): { modeTarget: ACPPermissionModeTarget | null | undefined; port: number } {
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
  if (config.guards?.hasBeforeModelCall) {
    throw new HarnessCapabilityUnsupportedError(`${settings.harnessId} calls its model itself: acx never sees the request, so beforeModelCall hooks cannot run on an ACP harness.`, {
      hint: 'Remove hooks.beforeModelCall for this agent (or this session), or run the agent on the engine harness.',
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
  return { modeTarget, port };
}

export async function openACPSession(input: OpenACPSessionInput): Promise<ACPHarnessSession> {
  const { settings, config, sandbox, logger } = input;
  const log = logger.child({ harness: settings.harnessId, session: input.sessionId });
  reportConfinement(sandbox, settings, input.hostEnv, log);
  const { modeTarget, port } = checkCapabilities(settings, config, sandbox);
  const { store, durable } = input.journal;

  const cleanups: Array<() => Promise<void>> = [];
  const cleanup = async () => {
    for (const fn of cleanups.reverse()) await fn().catch(() => {});
    cleanups.length = 0;
  };
  // The host tools' callbacks reach the current turn through the runner, created next; the
  // agent side is started once the runner is there.
  let runner!: TurnRunner;

  try {
    const hostTools = await serveHostTools({
      settings,
      tools: config.tools,
      permissionMode: config.permissionMode,
      port,
      sandboxId: sandbox.id,
      log,
      approve: (call) => runner.approveHostCall(call),
      hold: (call, signal) => runner.hold(call, signal),
      run: (call, execute) => runner.runHostCall(call, execute),
      guarded: () => runner.guarded,
    });
    cleanups.push(() => hostTools.close());
    const journal = new TurnJournal(store, input.sessionId, { durable, checkpoint: settings.checkpoint });
    await journal.open(`acp:${settings.harnessId}`);
    const driver = new TurnDriver(store, input.sessionId, log);
    runner = new TurnRunner({
      settings,
      sessionId: input.sessionId,
      log,
      hostTools,
      outputSchema: config.output !== undefined ? normalizeSchema(config.output) : undefined,
      permissions: { permissionMode: config.permissionMode, mapped: settings.permissionModeMapping !== undefined, log },
      journal,
      driver,
      model: config.model ?? settings.model,
      guards: config.guards,
    });
    cleanups.push(() => runner.close());

    // The agent's questions to the user: answered by the profile's callback, or paused as an
    // askUserQuestions call whose result (supplied with continue()) is the ACP response.
    const asking = settings.askUserQuestions;
    const askUser = (params: unknown): Promise<unknown> =>
      asking!.answer ? asking!.answer(params) : runner.hold({ toolCallId: `ask-${randomUUID()}`, toolName: ASK_USER_QUESTIONS_TOOL, input: params });
    // The slash commands each agent session advertised (available_commands_update), kept even when
    // they arrive outside a turn (right after session/new, before its answer): compact() needs /compact.
    const commandsBySession = new Map<string, readonly string[]>();
    /**
     * When the agent last sent a session/update, while the session opens: a replay after
     * session/load is waited out. Not kept once it is open (a clock read per event is not free).
     */
    let lastUpdateAt = 0;
    let opening = true;
    const im = settings.instructionMapping;

    /** Starts the agent process and opens (or reopens) its session: at open, and again after this process let it go. */
    const startAgent = async (): Promise<AgentSide> => {
      const owned: Array<() => Promise<void>> = [];
      const release = async () => {
        for (const fn of owned.reverse()) await fn().catch(() => {});
        owned.length = 0;
      };
      opening = true;
      try {
        const { proc, launch, model, instructions } = await launchAgent({
          settings,
          config,
          bootstrap: input.bootstrap,
          sandbox,
          hostEnv: input.hostEnv,
          supportsRequestTransformations: input.supportsRequestTransformations,
          clientApp: input.clientApp,
          log,
          expose: hostTools.serving ? [hostTools.serving.port] : [],
          own: (release) => owned.push(release),
          onUpstreamDown: (down) => {
            const error = new AcxError(
              'acp-upstream-unreachable',
              `${settings.harnessId} cannot reach its model API at ${down.upstream}${down.baseUrlEnv ? ` (${down.baseUrlEnv})` : ''}: ${down.reason}.`,
              { hint: `Check ${down.baseUrlEnv ?? 'the base URL the agent is configured with'}: acx's credential broker forwards the agent's requests there, and it did not answer.` },
            );
            log.error('acp upstream unreachable', { upstream: down.upstream, reason: down.reason });
            runner.failCurrent(error);
          },
          handlers: {
            onUpdate: (params) => {
              if (opening) lastUpdateAt = performance.now();
              if (params.update.sessionUpdate === 'available_commands_update') {
                commandsBySession.set(params.sessionId, params.update.availableCommands.map((c) => c.name));
              }
              runner.deliver(params);
            },
            onPermission: (params, signal) => runner.onPermission(params, signal),
            onExtRequest: asking ? (method, params) => (method === asking.method ? askUser(params) : undefined) : undefined,
          },
        });
        const lifecycle = { settings, proc, log, startupTimeoutMs: settings.startupTimeoutMs ?? DEFAULT_STARTUP_TIMEOUT_MS };
        const init = await initializeAgent(lifecycle, input.clientApp);
        const opened = await openAgentSession(lifecycle, {
          init,
          sandbox,
          mcpServers: agentMcpServers(settings, hostTools.serving, init),
          metaInstructions: instructions && im?.type === 'session-meta' ? { path: im.path, text: instructions } : undefined,
          model,
          permissionMode: config.permissionMode,
          modeTarget,
          lastUpdateAt: () => lastUpdateAt,
          explicitResume: input.explicitResume,
        });
        opening = false;
        log.info('acp session ready', { agent: init.agentInfo?.name ?? 'unknown', acpSession: opened.sessionId, auth: launch.authMode });
        return {
          proc,
          agentSessionId: opened.sessionId,
          promptCapabilities: init.agentCapabilities?.promptCapabilities,
          // Without an instruction mapping, the instructions lead the first prompt.
          firstPromptInstructions: instructions && !im ? instructions : undefined,
          reopened: opened.reopened,
          reopenable: opened.reopenable,
          ranTurns: new Set(),
          stop: release,
        };
      } catch (error) {
        await release();
        throw error;
      }
    };
    runner.setAgentStarter(startAgent);
    // A turn another process holds (its agent waiting with a request open) keeps this process from
    // starting a second agent on the same session until that one lets go: answering the turn hands
    // the answer to it (see TurnRunner.takeUp).
    if (durable && (await driver.elsewhere())) log.info('acp agent start deferred', { why: 'another process holds a turn of this session' });
    else await runner.agentReady();

    let closed = false;
    const close = async () => {
      if (closed) return;
      closed = true;
      await cleanup();
      // A journal kept only in this process's memory: nothing can take its turns up once the session is closed.
      if (!durable) await store.deleteSession(input.sessionId).catch(() => {});
    };
    const session: ACPHarnessSession = {
      id: input.sessionId,
      setTools(next: readonly Tool[]) {
        if (closed) throw new AcxError('acp-session-closed', 'This ACP session is closed.', { hint: 'Open a new session.' });
        hostTools.setTools(next);
      },
      toolNames: () => hostTools.catalog?.names() ?? [],
      hasUnfinishedTurn: async () => runner.isPaused || (await journal.unfinished()) !== undefined,
      run: (runInput) => runner.run(runInput),
      continue: (continueInput) => runner.continue(continueInput),
      detach: close,
      get canSuspend() {
        return runner.canSuspend;
      },
      ...(durable
        ? {
            continuation: async () => {
              const turn = await journal.unfinished();
              return turn ? journal.continuation(turn) : undefined;
            },
          }
        : {}),
      ...(store.leases ? { exclusive: <T>(fn: (leaseLost: AbortSignal) => Promise<T>) => holdSession(store.leases!, input.sessionId, {}, log, fn) } : {}),
      /** Compaction on request where the agent offers it: its own /compact command, run as a turn. */
      async compact() {
        const commands = commandsBySession.get(runner.agentSessionId ?? '') ?? [];
        if (!commands.includes('compact')) {
          throw new HarnessCapabilityUnsupportedError(`${settings.harnessId} advertises no /compact command, and standard ACP v1 has no portable API for manual compaction.`, {
            hint: `Let the agent compact its own context.${commands.length > 0 ? ` Its commands: ${commands.map((c) => `/${c}`).join(', ')}.` : ''}`,
          });
        }
        // Nothing to compact yet — and a first prompt would carry the instructions block ahead of the command.
        if (!runner.hasRunATurn) return { compacted: false, reason: 'no turn has run in this session yet' };
        let reported: CompactionReport | undefined;
        const result = await runner.run({
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
        if (durable) await store.deleteSession(input.sessionId);
      },
    };
    return session;
  } catch (error) {
    await cleanup();
    // A kept session's directory holds its history: a failed reopening must not erase it.
    if (sandbox.recordPath === undefined) await sandbox.destroy().catch(() => {});
    throw error;
  }
}
