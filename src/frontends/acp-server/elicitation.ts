import * as acp from '@agentclientprotocol/sdk';
import type { ElicitationRequest, ElicitationResult, ElicitationValue } from '../../core/elicitation.ts';
import { errorMessage } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';

/**
 * An MCP server's question (elicitation) during one of the session's tool calls, put to the
 * editor: as ACP's own `elicitation/create` (form mode, tied to the session and the tool call)
 * when the editor advertised form elicitation in initialize; otherwise a question without
 * fields (a yes or no) as a permission request, and one with fields declined — the editor has
 * no way to show the form — with that reason in the log.
 */
export interface EditorQuestion {
  client: acp.AgentContext;
  sessionId: string;
  /** The editor's elicitation capabilities from initialize (absent: none). */
  capabilities: acp.ElicitationCapabilities | null | undefined;
  request: ElicitationRequest;
  /** The turn's: a cancelled turn stops waiting for the editor. */
  signal: AbortSignal;
  logger: Logger;
}

const ACCEPT = 'accept';
const DECLINE = 'decline';

export async function askEditor(question: EditorQuestion): Promise<ElicitationResult> {
  const { client, sessionId, capabilities, request, signal, logger } = question;
  const wait = { cancellationSignal: signal, stopWaitingOnCancel: true };
  try {
    if (capabilities?.form) {
      const response = await client.request(
        acp.methods.client.elicitation.create,
        { sessionId, toolCallId: request.toolCallId, mode: 'form', message: `${request.server}: ${request.message}`, requestedSchema: request.requestedSchema as acp.ElicitationSchema },
        wait,
      );
      if (response.action === 'accept') return { action: 'accept', content: ((response as { content?: Record<string, ElicitationValue> | null }).content ?? {}) };
      return response.action === 'decline' ? { action: 'decline' } : { action: 'cancel' };
    }
    if (Object.keys(request.requestedSchema.properties).length > 0) {
      logger.warn('mcp elicitation declined', { server: request.server, tool: request.toolName, reason: 'the editor does not answer forms (it advertised no form elicitation)' });
      return { action: 'decline', reason: 'The editor cannot show the form.' };
    }
    const response = await client.request(
      acp.methods.client.session.requestPermission,
      {
        sessionId,
        toolCall: { toolCallId: request.toolCallId, title: `${request.server} asks: ${request.message}` },
        options: [
          { optionId: ACCEPT, name: 'Yes', kind: 'allow_once' },
          { optionId: DECLINE, name: 'No', kind: 'reject_once' },
        ],
      },
      wait,
    );
    if (response.outcome.outcome === 'cancelled') return { action: 'cancel' };
    return response.outcome.optionId === ACCEPT ? { action: 'accept', content: {} } : { action: 'decline' };
  } catch (error) {
    if (signal.aborted) return { action: 'cancel', reason: 'The user cancelled the turn.' };
    logger.warn('acp elicitation failed', { server: request.server, error: errorMessage(error) });
    return { action: 'cancel', reason: `The editor did not answer: ${errorMessage(error)}` };
  }
}
