import * as acp from '@agentclientprotocol/sdk';
import type { ForkSessionRequest, ForkSessionResponse } from '@agentclientprotocol/sdk/unstable';
import { ACX_VERSION } from '../../util/version.ts';
import type { Logger } from '../../util/logger.ts';
import { promptCapabilities } from './prompt-content.ts';

/**
 * The ACP agent `acx acp` serves: `initialize` answered from facts known before the agent is
 * prepared, every other method handed to the session handlers (server.ts), which may still be
 * loading. An editor waits for `initialize` before it shows the agent; the engine, the model
 * client, tools and MCP servers are not needed to answer it.
 */

/** What `initialize` says: the agent's name, whether sessions are journaled (load/resume/list/fork), whether the model reads images. */
export interface InitializeFacts {
  agentName: string;
  journal: boolean;
  images: boolean;
}

/** The session methods of a prepared agent (createAcpHandlers in server.ts). */
export interface AcpHandlers {
  /** What the client said it can do (its file system, its terminal), from initialize. */
  initialized(params: acp.InitializeRequest): void;
  newSession(params: acp.NewSessionRequest, client: acp.AgentContext): Promise<acp.NewSessionResponse>;
  loadSession(params: acp.LoadSessionRequest, client: acp.AgentContext): Promise<acp.LoadSessionResponse>;
  forkSession(params: ForkRequest, client: acp.AgentContext): Promise<ForkSessionResponse>;
  resumeSession(params: acp.ResumeSessionRequest, client: acp.AgentContext): Promise<acp.ResumeSessionResponse>;
  listSessions(params: acp.ListSessionsRequest): Promise<acp.ListSessionsResponse>;
  deleteSession(params: acp.DeleteSessionRequest): Promise<acp.DeleteSessionResponse>;
  closeSession(params: acp.CloseSessionRequest): Promise<acp.CloseSessionResponse>;
  setMode(params: acp.SetSessionModeRequest): Promise<acp.SetSessionModeResponse>;
  setConfigOption(params: acp.SetSessionConfigOptionRequest): Promise<acp.SetSessionConfigOptionResponse>;
  prompt(params: acp.PromptRequest): Promise<acp.PromptResponse>;
  cancel(params: acp.CancelNotification): void;
  close(): Promise<void>;
}

/**
 * `session/fork`: the ACP SDK 2.4 lists it among its unstable methods (its own schema and method
 * name live in the SDK's `unstable` entry), so it is registered by name here, with the little
 * checking the handler needs before sessionRoots checks the directories.
 */
const FORK_METHOD = 'session/fork';

/** session/fork's params with the MCP servers acx takes (the unstable schema adds MCP-over-ACP ones, which acx does not advertise). */
export type ForkRequest = Omit<ForkSessionRequest, 'mcpServers'> & { mcpServers?: acp.McpServer[] | undefined };

function forkParams(params: unknown): ForkRequest {
  const { sessionId } = (params ?? {}) as { sessionId?: unknown };
  if (typeof sessionId !== 'string' || sessionId === '') {
    throw acp.RequestError.invalidParams({ sessionId: sessionId ?? null }, 'sessionId is required: the id of the session to fork');
  }
  return params as ForkRequest;
}

export function initializeResponse(facts: InitializeFacts): acp.InitializeResponse {
  return {
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: {
      loadSession: facts.journal,
      promptCapabilities: promptCapabilities({ images: facts.images }),
      mcpCapabilities: { http: true, sse: true },
      sessionCapabilities: { close: {}, additionalDirectories: {}, ...(facts.journal ? { resume: {}, list: {}, delete: {}, fork: {} } : {}) },
    },
    authMethods: [],
    agentInfo: { name: 'acx', title: `acx: ${facts.agentName}`, version: ACX_VERSION },
  };
}

/**
 * `handlers` is called for every method after initialize (the same handlers each time, or new
 * ones after a failed preparation); the client's initialize parameters reach each handlers
 * object before any session method does.
 */
export function acpAgentApp(options: { facts: InitializeFacts; logger: Logger; handlers: () => Promise<AcpHandlers>; onInitialized?: () => void }): acp.AgentApp {
  const { logger } = options;
  let initialize: acp.InitializeRequest | undefined;
  // Asked on every method: a preparation that failed is tried again, giving new handlers.
  const told = new WeakSet<AcpHandlers>();
  let latest: Promise<AcpHandlers> | undefined;
  const ready = (): Promise<AcpHandlers> =>
    (latest = options.handlers().then((handlers) => {
      if (initialize && !told.has(handlers)) {
        told.add(handlers);
        handlers.initialized(initialize);
      }
      return handlers;
    }));
  return acp
    .agent({ name: 'acx' })
    .onRequest(acp.methods.agent.initialize, ({ params }) => {
      initialize = params;
      logger.info('acp initialize', {
        client: params.clientInfo?.name,
        protocol: params.protocolVersion,
        client_fs: [params.clientCapabilities?.fs?.readTextFile ? 'read' : '', params.clientCapabilities?.fs?.writeTextFile ? 'write' : ''].filter(Boolean).join('+') || 'none',
        client_terminal: params.clientCapabilities?.terminal === true,
      });
      // A repeated initialize reaches handlers already prepared (one that failed answers each request itself).
      if (latest) void latest.then((handlers) => handlers.initialized(params), () => {});
      options.onInitialized?.();
      return initializeResponse(options.facts);
    })
    .onRequest(acp.methods.agent.session.new, async ({ params, client }) => (await ready()).newSession(params, client))
    .onRequest(acp.methods.agent.session.load, async ({ params, client }) => (await ready()).loadSession(params, client))
    .onRequest(acp.methods.agent.session.resume, async ({ params, client }) => (await ready()).resumeSession(params, client))
    .onRequest(FORK_METHOD, forkParams, async ({ params, client }) => (await ready()).forkSession(params, client))
    .onRequest(acp.methods.agent.session.list, async ({ params }) => (await ready()).listSessions(params))
    .onRequest(acp.methods.agent.session.delete, async ({ params }) => (await ready()).deleteSession(params))
    .onRequest(acp.methods.agent.session.close, async ({ params }) => (await ready()).closeSession(params))
    .onRequest(acp.methods.agent.session.setMode, async ({ params }) => (await ready()).setMode(params))
    .onRequest(acp.methods.agent.session.setConfigOption, async ({ params }) => (await ready()).setConfigOption(params))
    .onRequest(acp.methods.agent.session.prompt, async ({ params }) => (await ready()).prompt(params))
    .onNotification(acp.methods.agent.session.cancel, async ({ params }) => (await ready()).cancel(params));
}
