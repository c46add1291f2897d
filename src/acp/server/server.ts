import { randomUUID } from 'node:crypto';
import * as acp from '@agentclientprotocol/sdk';
import { HarnessAgent } from '../../agent/harness-agent.ts';
import type { Harness } from '../../agent/harness.ts';
import type { PreparedAgent } from '../../agent/prepare.ts';
import { ACX_VERSION } from '../../util/version.ts';
import { resolveContextBudget } from '../../engine/context-budget.ts';
import { connectMcpServers, type McpConnection } from '../../mcp/client.ts';
import type { Journal } from '../../store/journal.ts';
import type { FileContents } from '../../tools/builtin/fs.ts';
import type { PermissionMode } from '../../tools/permission.ts';
import { WorkspaceRoots } from '../../tools/sandbox/roots.ts';
import type { Tool } from '../../tools/tool.ts';
import { errorMessage } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';
import { clientFileContents } from './client-files.ts';
import { EditLog } from './edits.ts';
import { clientMcpConfigs } from './mcp-servers.ts';
import { parseModeId, sessionModes } from './modes.ts';
import { promptCapabilities, type PromptAcceptance } from './prompt-content.ts';
import { replayUpdates } from './replay.ts';
import { type SessionRoots, sessionRoots } from './roots.ts';
import { AcpSession } from './session.ts';

/**
 * acx's native engine as an ACP v1 agent: `initialize`, `session/new|load|resume|close`,
 * `session/set_mode` (acx permission modes), `session/prompt` streaming `session/update`s,
 * `session/request_permission` for tools the mode does not allow, and `session/cancel`.
 * Sessions are the engine's journaled sessions, keyed by the ACP session id.
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

function journalOf(harness: Harness): Journal | undefined {
  return (harness as Harness & { journal?: Journal }).journal;
}

/** Where a session's cwd is kept in the journal, so a reopened session keeps its project. */
const CWD_ATTRIBUTE = 'acp.cwd';

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
  const { prepared, logger } = options;
  const base = prepared.agent;
  const journal = journalOf(base.settings.harness);
  const accept: PromptAcceptance = { images: prepared.model.vision };
  const budget = resolveContextBudget({
    configured: prepared.settings.contextTokens ?? undefined,
    modelLimit: prepared.model.contextWindowTokens,
  });
  const contextSize = budget.limit > 0 ? budget.limit : prepared.model.contextWindowTokens;
  const sessions = new Map<string, AcpSession>();
  /** What the client said it can do (its file system for the file tools), from initialize. */
  let clientCapabilities: acp.ClientCapabilities | undefined;

  const find = (sessionId: string): AcpSession => {
    const session = sessions.get(sessionId);
    if (!session) throw acp.RequestError.sessionNotFound(sessionId);
    return session;
  };

  /** The agent's own tools with the workspace ones (fs_*, execute, shell) working in the session's roots. */
  const rootedAgentTools = (roots: SessionRoots, contents: FileContents | undefined): Tool[] => {
    const rooted = new Map(prepared.toolset.rootedTools(roots, contents ? { contents } : {}).map((tool) => [tool.name, tool]));
    return base.toolList.map((tool) => rooted.get(tool.name) ?? tool);
  };

  /** Connects the client's MCP servers; one that fails is skipped with a log line (stderr). */
  const connectClientServers = async (servers: readonly acp.McpServer[], cwd: string): Promise<McpConnection | undefined> => {
    const { configs, rejected } = clientMcpConfigs(servers, cwd);
    for (const r of rejected) logger.warn('mcp server skipped', { server: r.name, source: 'acp client', reason: r.reason });
    if (configs.length === 0) return undefined;
    return connectMcpServers(configs, { logger, ...(options.env ? { env: options.env } : {}) });
  };

  const openSession = async (
    client: acp.AgentContext,
    params: { sessionId: string; roots: SessionRoots; mcpServers: readonly acp.McpServer[] },
  ): Promise<AcpSession> => {
    const { roots } = params;
    const workspace = new WorkspaceRoots({ primary: roots.cwd, additional: roots.additionalDirectories });
    // Files the editor holds open are read and written through it, when it offers that.
    const contents = clientFileContents(client, params.sessionId, clientCapabilities?.fs);
    const edits = new EditLog(workspace, contents);
    const mcp = await connectClientServers(params.mcpServers, roots.cwd);
    const tools = joinTools([edits.wrap(rootedAgentTools(roots, contents)), options.extraTools ?? [], mcp?.tools ?? []], logger);
    const agentFor = (mode: PermissionMode) => new HarnessAgent({ ...base.settings, tools, permissionMode: mode });
    try {
      const session = await AcpSession.open({
        id: params.sessionId,
        cwd: roots.cwd,
        roots: workspace,
        edits,
        mode: base.settings.permissionMode ?? 'allow-edits',
        tools,
        agentFor,
        client,
        accept,
        contextSize,
        mcp,
        logger,
      });
      sessions.set(session.id, session);
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
    if (!journal?.hasSession(params.sessionId)) throw acp.RequestError.sessionNotFound(params.sessionId);
    const kept = journal.sessionAttribute(params.sessionId, CWD_ATTRIBUTE);
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
    if (kept === undefined) journal.setSessionAttribute(params.sessionId, CWD_ATTRIBUTE, roots.cwd);
    return session;
  };

  const app = acp
    .agent({ name: 'acx' })
    .onRequest(acp.methods.agent.initialize, ({ params }) => {
      clientCapabilities = params.clientCapabilities;
      logger.info('acp initialize', {
        client: params.clientInfo?.name,
        protocol: params.protocolVersion,
        client_fs: [params.clientCapabilities?.fs?.readTextFile ? 'read' : '', params.clientCapabilities?.fs?.writeTextFile ? 'write' : ''].filter(Boolean).join('+') || 'none',
      });
      return {
        protocolVersion: acp.PROTOCOL_VERSION,
        agentCapabilities: {
          loadSession: journal !== undefined,
          promptCapabilities: promptCapabilities(accept),
          mcpCapabilities: { http: true, sse: false },
          sessionCapabilities: { close: {}, additionalDirectories: {}, ...(journal ? { resume: {} } : {}) },
        },
        authMethods: [],
        agentInfo: { name: 'acx', title: `acx: ${prepared.settings.agent.name}`, version: ACX_VERSION },
      };
    })
    .onRequest(acp.methods.agent.session.new, async ({ params, client }) => {
      const roots = sessionRoots(params);
      const session = await openSession(client, { sessionId: randomUUID(), roots, mcpServers: params.mcpServers });
      journal?.setSessionAttribute(session.id, CWD_ATTRIBUTE, roots.cwd);
      return { sessionId: session.id, modes: sessionModes(session.mode) };
    })
    .onRequest(acp.methods.agent.session.load, async ({ params, client }) => {
      const session = await reopen(client, params);
      const updates = replayUpdates(journal!.messages(session.id), session.tools, session.roots);
      for (const update of updates) session.send(update);
      await session.flush();
      logger.info('acp session load', { session: session.id, replayed: updates.length });
      return { modes: sessionModes(session.mode) };
    })
    .onRequest(acp.methods.agent.session.resume, async ({ params, client }) => {
      const session = await reopen(client, params);
      return { modes: sessionModes(session.mode) };
    })
    .onRequest(acp.methods.agent.session.close, async ({ params }) => {
      const session = sessions.get(params.sessionId);
      if (!session) throw acp.RequestError.sessionNotFound(params.sessionId);
      sessions.delete(params.sessionId);
      await session.close();
      return {};
    })
    .onRequest(acp.methods.agent.session.setMode, ({ params }) => {
      const session = find(params.sessionId);
      const mode = parseModeId(params.modeId);
      if (!mode) {
        throw acp.RequestError.invalidParams({ modeId: params.modeId }, 'unknown mode; use allow-reads, allow-edits or allow-all');
      }
      session.setMode(mode);
      return {};
    })
    .onRequest(acp.methods.agent.session.prompt, ({ params }) => find(params.sessionId).prompt(params.prompt))
    .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
      sessions.get(params.sessionId)?.cancel();
    });

  return {
    app,
    async close() {
      const open = [...sessions.values()];
      sessions.clear();
      await Promise.allSettled(
        open.map((session) => session.close().catch((error: unknown) => logger.warn('acp session close failed', { error: errorMessage(error) }))),
      );
    },
  };
}
