import { randomUUID } from 'node:crypto';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { HarnessAgent } from '../../harness/harness-agent.ts';
import type { Harness } from '../../harness/harness.ts';
import type { PreparedAgent } from '../../app/prepare.ts';
import { connectMcpServers, type McpConnection } from '../../mcp/client.ts';
import type { JournalStore } from '../../store/journal-store.ts';
import type { RootedToolOptions } from '../../app/toolset.ts';
import { createPlanTool } from '../../tools/builtin/plan.ts';
import type { PermissionMode } from '../../tools/permission.ts';
import { WorkspaceRoots } from '../../tools/sandbox/roots.ts';
import type { Tool } from '../../tools/tool.ts';
import { errorMessage } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';
import type { ReasoningEffort } from '../../model/reasoning.ts';
import { compactSession } from '../../engine/compaction.ts';
import { clientFileContents } from './client-files.ts';
import { ClientTerminals } from './client-terminals.ts';
import { availableCommands, parseSlashCommand, skillPrompt, type SlashCommand } from './commands.ts';
import { configOptions, parseConfigChoice, type SessionChoices } from './config-options.ts';
import { type DiffKeeper, EditLog, keptDiffs } from './edits.ts';
import { InterruptedCalls } from './interrupted-calls.ts';
import { ModelEngines } from './model-engines.ts';
import { clientMcpConfigs, type UnusableServer, unusableServerUpdates } from './mcp-servers.ts';
import { parseModeId, sessionModes } from './modes.ts';
import type { PromptAcceptance } from './prompt-content.ts';
import { replayUpdates } from './replay.ts';
import { type SessionRoots, sessionRoots } from './roots.ts';
import { AcpSession } from './session.ts';
import { SessionRecords } from './session-records.ts';
import { titleFromPrompt } from './session-title.ts';
import { acpAgentApp, type AcpHandlers, type InitializeFacts } from './agent-app.ts';

/**
 * acx's native engine as an ACP v1 agent: `initialize`, `session/new|load|resume|close|list|delete`,
 * `session/set_mode` (acx permission modes) and `session/set_config_option` (mode and model),
 * `session/prompt` streaming `session/update`s, `session/request_permission` for tools the mode
 * does not allow, and `session/cancel`. Sessions are the engine's journaled sessions, keyed by
 * the ACP session id.
 */
export interface AcpServerOptions {
  prepared: PreparedAgent;
  logger: Logger;
  /** Tools every session gets besides the agent's own (e.g. the agent's MCP drop-ins). */
  extraTools?: readonly Tool[];
  /** Where `${VAR}` in client MCP server settings is read from. Default: process.env. */
  env?: NodeJS.ProcessEnv;
}

export interface AcpServer {
  app: acp.AgentApp;
  /** Cancels running turns and releases every session's MCP servers. */
  close(): Promise<void>;
}

function journalOf(harness: Harness): JournalStore | undefined {
  return (harness as Harness & { journal?: JournalStore }).journal;
}

/** Joins tool lists; a later tool whose name is taken is left out with a warning. */
function joinTools(lists: ReadonlyArray<readonly Tool[]>, logger: Logger): Tool[] {
  const byName = new Map<string, Tool>();
  for (const list of lists) {
    for (const tool of list) {
      if (byName.has(tool.name)) logger.warn('acp tool skipped', { tool: tool.name, reason: 'a tool with this name already exists' });
      else byName.set(tool.name, tool);
    }
  }
  return [...byName.values()];
}

export function createAcpServer(options: AcpServerOptions): AcpServer {
  const handlers = createAcpHandlers(options);
  const app = acpAgentApp({ facts: initializeFacts(options.prepared), logger: options.logger, handlers: async () => handlers });
  return { app, close: () => handlers.close() };
}

/** What the initialize answer says of a prepared agent. */
export function initializeFacts(prepared: PreparedAgent): InitializeFacts {
  return { agentName: prepared.settings.agent.name, journal: journalOf(prepared.agent.settings.harness) !== undefined, images: prepared.model.vision };
}

/** The session methods on a prepared agent; agent-app.ts wires them to ACP (and answers initialize). */
export function createAcpHandlers(options: AcpServerOptions): AcpHandlers {
  const { prepared, logger } = options;
  const base = prepared.agent;
  const journal = journalOf(base.settings.harness);
  const accept: PromptAcceptance = { images: prepared.model.vision };
  const sessions = new Map<string, AcpSession>();
  const records = journal ? new SessionRecords(journal) : undefined;
  const env = options.env ?? process.env;
  const engines = new ModelEngines(prepared, { env, logger });
  const models = engines.models;
  /** What the session's options offer: every reachable model, and a thinking level where its model takes one. */
  const offeredTo = (session: AcpSession) => ({ models, effort: engines.takesEffort(session.model), model: session.model });
  const optionsOf = (session: AcpSession) => configOptions({ mode: session.mode, model: session.model, effort: session.effort }, offeredTo(session));
  const skills = base.settings.skills ?? [];
  const commands = availableCommands(skills);
  /** What the client said it can do (its file system for the file tools), from initialize. */
  let clientCapabilities: acp.ClientCapabilities | undefined;

  const find = (sessionId: string): AcpSession => {
    const session = sessions.get(sessionId);
    if (!session) throw acp.RequestError.sessionNotFound(sessionId);
    return session;
  };

  /** The agent's own tools with the workspace ones (fs_*, execute, shell) working in the session's roots. */
  const rootedAgentTools = (roots: SessionRoots, through: RootedToolOptions): Tool[] => {
    const rooted = new Map(prepared.toolset.rootedTools(roots, through).map((tool) => [tool.name, tool]));
    return base.toolList.map((tool) => rooted.get(tool.name) ?? tool);
  };

  /** Connects the client's MCP servers; those that cannot be used are logged (stderr) and returned, to be told to the user. */
  const connectClientServers = async (
    servers: readonly acp.McpServer[],
    cwd: string,
  ): Promise<{ mcp: McpConnection | undefined; unusable: UnusableServer[] }> => {
    const { configs, clientNames, rejected } = clientMcpConfigs(servers, cwd);
    for (const r of rejected) logger.warn('mcp server skipped', { server: r.name, source: 'acp client', reason: r.reason });
    if (configs.length === 0) return { mcp: undefined, unusable: rejected };
    const mcp = await connectMcpServers(configs, { logger, ...(options.env ? { env: options.env } : {}) });
    const skipped = mcp.servers
      .filter((server) => server.status !== 'ok')
      .map((server) => ({ name: clientNames.get(server.name) ?? server.name, reason: server.reason ?? 'it could not be started' }));
    return { mcp, unusable: [...rejected, ...skipped] };
  };
  /** Keeps each write's old text in the journal, for session/load; a failure only loses that replay's diff. */
  const diffKeeper: DiffKeeper | undefined = records && {
    keep: (sessionId, key, oldText) =>
      records.keepEdit(sessionId, key, oldText).catch((error: unknown) => logger.warn('acp diff not kept', { session: sessionId, error: errorMessage(error) })),
  };
  /** What each session opened here has yet to tell the user, once the client knows its id (see announce). */
  const untold = new Map<string, acp.SessionUpdate[]>();

  const openSession = async (
    client: acp.AgentContext,
    params: { sessionId: string; roots: SessionRoots; mcpServers: readonly acp.McpServer[] },
  ): Promise<AcpSession> => {
    const { roots } = params;
    const workspace = new WorkspaceRoots({ primary: roots.cwd, additional: roots.additionalDirectories });
    // Files the editor holds open are read and written through it, when it offers that.
    const contents = clientFileContents(client, params.sessionId, clientCapabilities?.fs);
    const edits = new EditLog(workspace, contents, diffKeeper);
    const interrupted = new InterruptedCalls();
    // Commands run in the editor's terminal when it offers one (its output streams there);
    // the terminal's updates go through the session's outbox, which exists once it is open.
    let opened: AcpSession | undefined;
    const terminals =
      clientCapabilities?.terminal === true
        ? new ClientTerminals({ client, sessionId: params.sessionId, send: (update) => opened?.send(update) })
        : undefined;
    const through: RootedToolOptions = { ...(contents ? { contents } : {}), ...(terminals ? { commands: terminals.runner } : {}) };
    const { mcp, unusable } = await connectClientServers(params.mcpServers, roots.cwd);
    // The plan tool: an editor shows the model's plan (an agent's own tool of that name wins).
    const tools = joinTools([interrupted.wrap(edits.wrap(rootedAgentTools(roots, through))), [createPlanTool()], options.extraTools ?? [], mcp?.tools ?? []], logger);
    const agentFor = async ({ mode, model, effort }: SessionChoices) => {
      const engine = await engines.on(model, engines.takesEffort(model) ? effort : undefined);
      return { agent: new HarnessAgent({ ...base.settings, harness: engine.harness, tools, permissionMode: mode }), contextSize: engine.contextSize };
    };
    // A reopened session keeps its mode and model (a model no longer offered falls back to the agent's).
    const keptModel = await records?.model(params.sessionId);
    try {
      const session = await AcpSession.open({
        id: params.sessionId,
        cwd: roots.cwd,
        roots: workspace,
        edits,
        ...(terminals ? { terminals } : {}),
        interrupted,
        choices: {
          mode: (await records?.mode(params.sessionId)) ?? base.settings.permissionMode ?? 'allow-edits',
          model: keptModel !== undefined && engines.offers(keptModel) ? keptModel : engines.current,
          effort: await records?.effort(params.sessionId),
        },
        tools,
        agentFor,
        client,
        accept,
        mcp,
        elicitation: clientCapabilities?.elicitation,
        logger,
      });
      opened = session;
      sessions.set(session.id, session);
      untold.set(session.id, unusableServerUpdates(unusable, clientCapabilities?.session?.notices != null));
      logger.info('acp session open', { session: session.id, cwd: roots.cwd, roots: 1 + roots.additionalDirectories.length, tools: tools.length, mcp_servers: mcp?.servers.filter((s) => s.status === 'ok').length ?? 0 });
      return session;
    } catch (error) {
      await mcp?.close();
      throw error;
    }
  };

  /** Reopens a journaled session; one already open here is replaced (it must be idle). */
  const reopen = async (
    client: acp.AgentContext,
    params: { sessionId: string; cwd: string; additionalDirectories?: string[] | undefined; mcpServers?: readonly acp.McpServer[] | undefined },
  ): Promise<AcpSession> => {
    const roots = sessionRoots(params);
    if (!records || !(await records.exists(params.sessionId))) throw acp.RequestError.sessionNotFound(params.sessionId);
    const kept = await records.cwd(params.sessionId);
    if (kept !== undefined && kept !== roots.cwd) {
      throw acp.RequestError.invalidParams(
        { cwd: params.cwd, sessionCwd: kept },
        `this session works in ${kept}; reopen it with that cwd (or start a new session for ${roots.cwd})`,
      );
    }
    const existing = sessions.get(params.sessionId);
    if (existing) {
      if (existing.running) throw acp.RequestError.invalidRequest({ sessionId: params.sessionId }, 'the session has a running turn');
      sessions.delete(params.sessionId);
      await existing.close();
    }
    const session = await openSession(client, { sessionId: params.sessionId, roots, mcpServers: params.mcpServers ?? [] });
    // Sessions journaled before cwd was kept take the cwd they are reopened with.
    if (kept === undefined) await records.setCwd(params.sessionId, roots.cwd);
    return session;
  };

  /** A mode switch from either request: kept for a reopen, and told to the client (mode and config option views). */
  const changeMode = async (session: AcpSession, mode: PermissionMode, via: 'set_mode' | 'set_config_option') => {
    session.setMode(mode);
    await records?.setMode(session.id, mode);
    session.send({ sessionUpdate: 'current_mode_update', currentModeId: mode });
    // set_config_option answers with the options itself; set_mode leaves the selector to this update.
    if (via === 'set_mode') session.send({ sessionUpdate: 'config_option_update', configOptions: optionsOf(session) });
  };

  /** A model switch from either request: opened now (so one that cannot be built fails here), kept, used from the next turn. */
  const chooseModel = async (session: AcpSession, model: string) => {
    await engines.on(model);
    session.setModel(model);
    await records?.setModel(session.id, model);
  };

  /** A thinking level chosen for the session's model: opened now (so one that cannot be built fails here), kept, used from the next turn. */
  const chooseEffort = async (session: AcpSession, effort: ReasoningEffort | undefined) => {
    await engines.on(session.model, effort);
    session.setEffort(effort);
    await records?.setEffort(session.id, effort);
  };

  /** Sent once the session's id is the client's (after the response that names it): its commands, then the client MCP servers it could not use. */
  const announce = (session: AcpSession) => {
    const updates = untold.get(session.id) ?? [];
    untold.delete(session.id);
    setImmediate(() => {
      session.send({ sessionUpdate: 'available_commands_update', availableCommands: commands });
      for (const update of updates) session.send(update);
    });
  };

  /** /model, /clear and /compact: answered as one agent message, no model turn (but /compact's summary). */
  const runBuiltin = async (session: AcpSession, command: Extract<SlashCommand, { kind: 'builtin' }>): Promise<string> => {
    switch (command.name) {
      case 'model': {
        if (!command.args) return `Model: ${session.model}. Others: ${models.filter((m) => m !== session.model).join(', ') || 'none (ACX_MODELS adds more)'}.`;
        if (!models.includes(command.args)) return `There is no model "${command.args}" here; use one of ${models.join(', ')} (ACX_MODELS adds more).`;
        await chooseModel(session, command.args);
        session.send({ sessionUpdate: 'config_option_update', configOptions: optionsOf(session) });
        return `Model: ${command.args}, from the next turn on.`;
      }
      case 'clear':
        await journal?.clearHistory(session.id);
        return 'Cleared: the conversation is forgotten; the session keeps its mode, model and project.';
      case 'compact': {
        if (!journal) return 'Nothing to compact: this agent keeps no journal.';
        const engine = await engines.on(session.model);
        const outcome = await compactSession({
          journal,
          sessionId: session.id,
          model: engine.model,
          params: prepared.settings.modelParams,
          budget: engine.budget,
          hard: true,
          logger,
          now: new Date(),
          inputTokens: undefined,
        });
        return outcome.compacted
          ? `Compacted: ${outcome.summarized} earlier messages are now one summary (${outcome.messagesBefore} → ${outcome.messagesAfter} messages).`
          : `Nothing compacted: ${outcome.reason === 'no safe cut' ? 'the conversation has no earlier turn to summarize' : outcome.reason}.`;
      }
    }
  };

  /** After a session's first finished turn: a title from its prompt, kept and sent as session_info_update. */
  const nameSession = async (session: AcpSession, prompt: readonly acp.ContentBlock[]) => {
    if (!records || (await records.title(session.id)) !== undefined) return;
    const title = titleFromPrompt(prompt);
    if (!title) return;
    await records.setTitle(session.id, title);
    const updatedAt = await records.updatedAt(session.id);
    session.send({ sessionUpdate: 'session_info_update', title, ...(updatedAt ? { updatedAt } : {}) });
    await session.flush();
  };

  const handlers: AcpHandlers = {
    initialized(params) {
      clientCapabilities = params.clientCapabilities;
    },
    async newSession(params, client) {
      const roots = sessionRoots(params);
      const session = await openSession(client, { sessionId: randomUUID(), roots, mcpServers: params.mcpServers });
      await records?.setCwd(session.id, roots.cwd);
      await records?.setMode(session.id, session.mode);
      announce(session);
      return { sessionId: session.id, modes: sessionModes(session.mode), configOptions: optionsOf(session) };
    },
    async loadSession(params, client) {
      const session = await reopen(client, params);
      const messages = await journal!.messages(session.id);
      const diffs = keptDiffs(session.roots, await records!.keptEdits(session.id, messages));
      const updates = replayUpdates(messages, session.tools, session.roots, diffs);
      for (const update of updates) session.send(update);
      await session.flush();
      logger.info('acp session load', { session: session.id, replayed: updates.length });
      announce(session);
      return { modes: sessionModes(session.mode), configOptions: optionsOf(session) };
    },
    async forkSession(params, client) {
      if (!records || !(await records.exists(params.sessionId))) throw acp.RequestError.sessionNotFound(params.sessionId);
      if (sessions.get(params.sessionId)?.running) {
        throw acp.RequestError.invalidRequest({ sessionId: params.sessionId }, 'the session has a running turn; fork it once the turn has answered');
      }
      const roots = sessionRoots(params);
      const forkId = randomUUID();
      await records.fork(params.sessionId, forkId, roots.cwd);
      const session = await openSession(client, { sessionId: forkId, roots, mcpServers: params.mcpServers ?? [] }).catch(async (error: unknown) => {
        await records.delete(forkId).catch(() => {}); // a fork that cannot open leaves no session behind
        throw error;
      });
      logger.info('acp session fork', { from: params.sessionId, session: session.id });
      announce(session);
      return { sessionId: session.id, modes: sessionModes(session.mode), configOptions: optionsOf(session) };
    },
    async resumeSession(params, client) {
      const session = await reopen(client, params);
      announce(session);
      return { modes: sessionModes(session.mode), configOptions: optionsOf(session) };
    },
    async listSessions(params) {
      if (!records) return { sessions: [] };
      // The kept cwds are normalized (sessionRoots), so the filter is too; a cwd that is gone still lists.
      if (params.cwd != null && !path.isAbsolute(params.cwd)) {
        throw acp.RequestError.invalidParams({ cwd: params.cwd }, `cwd must be an absolute path (got "${params.cwd}")`);
      }
      return { sessions: await records.list(params.cwd != null ? path.resolve(params.cwd) : undefined) };
    },
    async deleteSession(params) {
      if (!records || !(await records.exists(params.sessionId))) throw acp.RequestError.sessionNotFound(params.sessionId);
      const open = sessions.get(params.sessionId);
      if (open?.running) throw acp.RequestError.invalidRequest({ sessionId: params.sessionId }, 'the session has a running turn; cancel it first');
      if (open) {
        sessions.delete(params.sessionId);
        await open.close();
      }
      await records.delete(params.sessionId);
      logger.info('acp session delete', { session: params.sessionId });
      return {};
    },
    async closeSession(params) {
      const session = sessions.get(params.sessionId);
      if (!session) throw acp.RequestError.sessionNotFound(params.sessionId);
      sessions.delete(params.sessionId);
      await session.close();
      return {};
    },
    async setMode(params) {
      const session = find(params.sessionId);
      const mode = parseModeId(params.modeId);
      if (!mode) {
        throw acp.RequestError.invalidParams({ modeId: params.modeId }, 'unknown mode; use allow-reads, allow-edits or allow-all');
      }
      await changeMode(session, mode, 'set_mode');
      await session.flush();
      return {};
    },
    async setConfigOption(params) {
      const session = find(params.sessionId);
      const choice = parseConfigChoice(params, offeredTo(session));
      if ('mode' in choice) await changeMode(session, choice.mode, 'set_config_option');
      else if ('model' in choice) await chooseModel(session, choice.model);
      else await chooseEffort(session, choice.effort);
      await session.flush();
      return { configOptions: optionsOf(session) };
    },
    async prompt(params) {
      const session = find(params.sessionId);
      const command = parseSlashCommand(params.prompt, skills);
      if (command?.kind === 'builtin') {
        const outcome = await session.exclusively(() => runBuiltin(session, command));
        if (!outcome.ran) return { stopReason: 'cancelled' };
        session.send({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: outcome.value } });
        await session.flush();
        logger.info('acp command', { session: session.id, command: command.name });
        return { stopReason: 'end_turn' };
      }
      const response = await session.prompt(command?.kind === 'skill' ? skillPrompt(command, params.prompt) : params.prompt);
      await nameSession(session, params.prompt);
      return response;
    },
    cancel(params) {
      sessions.get(params.sessionId)?.cancel();
    },
    async close() {
      const open = [...sessions.values()];
      sessions.clear();
      await Promise.allSettled(
        open.map((session) => session.close().catch((error: unknown) => logger.warn('acp session close failed', { error: errorMessage(error) }))),
      );
      await engines.close();
    },
  };
  return handlers;
}
