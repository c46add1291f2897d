import * as acp from '@agentclientprotocol/sdk';
import { ACX_VERSION } from '../../util/version.ts';
import { MissingApiKeyError } from '../../model/providers.ts';
import type { AcxError } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';
import type { AcpHandlers } from './agent-app.ts';
import type { AcpServer } from './server.ts';

/**
 * `acx acp` when the agent cannot be prepared from its configuration (no API key, no model):
 * an editor that gets no answer to `initialize` shows the agent loading forever, so this one
 * answers it — advertising, for a missing key, an auth method per variable that would do — and
 * fails everything that needs the agent (session/new, load, resume, prompt, …) with a JSON-RPC
 * error whose message says what to set. The fix is in the environment the editor starts acx
 * with, so `authenticate` cannot complete it; it says the same.
 */
export interface UnconfiguredServerOptions {
  problem: AcxError;
  agentName: string;
  logger: Logger;
}

/** Where the fix goes: the editor's configuration of the agent server, then a restart. */
const WHERE = 'in the environment your editor starts `acx acp` with (e.g. the "env" of its agent server settings), then restart the agent';

/**
 * The JSON-RPC error every method that needs the agent answers with: it says what to set, and —
 * for a problem of the environment (`inEnvironment`: no key, no model) — where.
 */
export function unconfiguredRefusal(problem: AcxError, inEnvironment: boolean): { variables: readonly string[]; remedy: string; message: string; refuse: () => never } {
  const variables = MissingApiKeyError.isInstance(problem) ? problem.variables : [];
  const remedy =
    variables.length > 0
      ? `Set ${variables.join(' or ')} ${WHERE}.`
      : inEnvironment
        ? `${problem.hint ?? 'Fix the configuration'} (${WHERE}).`
        : (problem.hint ?? 'Fix it, then start a new session.');
  const message = `${problem.message} ${remedy}`;
  const refuse = (): never => {
    throw variables.length > 0 ? acp.RequestError.authRequired({ variables }, message) : acp.RequestError.internalError({ code: problem.code }, message);
  };
  return { variables, remedy, message, refuse };
}

export function createUnconfiguredAcpServer(options: UnconfiguredServerOptions): AcpServer {
  const { problem, logger } = options;
  const { variables, remedy, refuse } = unconfiguredRefusal(problem, MissingApiKeyError.isInstance(problem));
  const authMethods: acp.AuthMethod[] = variables.map((name) => ({
    id: `acx-env-${name}`,
    name: `Set ${name}`,
    description: `acx reads the key from ${name}. Set it ${WHERE}.`,
    _meta: { 'acx/env': name },
  }));
  logger.warn('acp not ready', { reason: problem.message, remedy });

  const app = acp
    .agent({ name: 'acx' })
    .onRequest(acp.methods.agent.initialize, ({ params }) => {
      logger.info('acp initialize', { client: params.clientInfo?.name, protocol: params.protocolVersion, ready: false });
      return {
        protocolVersion: acp.PROTOCOL_VERSION,
        agentCapabilities: { loadSession: false },
        authMethods,
        agentInfo: { name: 'acx', title: `acx: ${options.agentName}`, version: ACX_VERSION },
      };
    })
    .onRequest(acp.methods.agent.authenticate, refuse)
    .onRequest(acp.methods.agent.session.new, refuse)
    .onRequest(acp.methods.agent.session.load, refuse)
    .onRequest(acp.methods.agent.session.resume, refuse)
    .onRequest(acp.methods.agent.session.close, refuse)
    .onRequest(acp.methods.agent.session.setMode, refuse)
    .onRequest(acp.methods.agent.session.prompt, refuse)
    .onNotification(acp.methods.agent.session.cancel, () => {});
  return { app, close: async () => {} };
}

/**
 * The session methods when preparing the agent failed after `initialize` was answered (a broken
 * SKILL.md, memory provider or plugin): each refuses with the problem's own message and hint,
 * the environment advice only for a missing key.
 */
export function unconfiguredHandlers(problem: AcxError, logger: Logger): AcpHandlers {
  const { remedy, refuse } = unconfiguredRefusal(problem, MissingApiKeyError.isInstance(problem));
  logger.warn('acp not ready', { reason: problem.message, remedy });
  return {
    initialized: () => {},
    newSession: async () => refuse(),
    loadSession: async () => refuse(),
    resumeSession: async () => refuse(),
    forkSession: async () => refuse(),
    listSessions: async () => refuse(),
    deleteSession: async () => refuse(),
    closeSession: async () => refuse(),
    setMode: async () => refuse(),
    setConfigOption: async () => refuse(),
    prompt: async () => refuse(),
    cancel: () => {},
    close: async () => {},
  };
}
