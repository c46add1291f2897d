import { createUIMessageStreamResponse, toUIMessageStream, type UIMessageChunk } from 'ai';
import { AcxError } from '../core/errors.ts';
import type { AgentSession } from './agent-session.ts';
import type { HarnessAgent } from './harness-agent.ts';
import { RESET_STEP } from './stream-reader.ts';

/**
 * The pieces of a chat route an AI SDK UI app needs besides createAgentUIStreamResponse: the GET
 * its page loads history from, the GET `useChat({ resume: true })` resumes a streaming reply
 * from, and the words an error reaches the page with.
 */

/**
 * The session's history as JSON UI messages (`session.uiMessages()`): what `useChat({ messages })`
 * starts from after a reload. `init` adds to the response (status, headers).
 */
export async function uiMessagesResponse(session: AgentSession, init?: ResponseInit): Promise<Response> {
  const headers = new Headers(init?.headers);
  // A chat's history is the user's: never kept by a shared cache.
  if (!headers.has('cache-control')) headers.set('cache-control', 'no-store');
  return Response.json(await session.uiMessages(), { ...init, headers });
}

/**
 * For `createAgentUIStreamResponse({ onError: uiErrorText })`: an error acx raises for a
 * condition a person can act on (an approval still waiting, a session in use elsewhere, a
 * provider refusing the key) reaches the page in its own words; anything else stays
 * `An error occurred.` (the AI SDK's default), so internals never reach a browser.
 */
export function uiErrorText(error: unknown): string {
  return AcxError.isInstance(error) ? error.message : 'An error occurred.';
}

export interface ResumeUIStreamOptions {
  agent: HarnessAgent;
  /** The chat's id, as useChat sends it (`/api/chat/[id]/stream`): the session. */
  chatId: string;
  /** An error's words for the page (default uiErrorText, as for the POST). */
  onError?: (error: unknown) => string;
  /** As createAgentUIStreamResponse's: send reasoning (default true) and sources (default false). */
  sendReasoning?: boolean;
  sendSources?: boolean;
  headers?: Record<string, string>;
}

/**
 * For the GET `useChat({ resume: true })` sends when the page mounts (`${api}/${chatId}/stream`
 * with DefaultChatTransport): the chat's reply streaming now, as the UI message stream the POST
 * sent, from its first part (the AI SDK's transport treats a resumed stream as a replay and
 * rebuilds the message from it), then live until it ends — read from the agent's kept streams,
 * so from any server sharing its store. 204 when no reply is streaming: the page then shows the
 * history it loaded. A turn whose server died mid-reply is taken up by the server this reaches.
 */
export async function resumeUIStreamResponse(options: ResumeUIStreamOptions): Promise<Response> {
  const resumed = await options.agent.resumeStream({ sessionId: options.chatId });
  if (!resumed) return new Response(null, { status: 204, headers: { 'cache-control': 'no-store' } });
  const chunks = toUIMessageStream({
    stream: resumed.stream,
    tools: options.agent.tools,
    onError: options.onError ?? uiErrorText,
    ...(options.sendReasoning !== undefined ? { sendReasoning: options.sendReasoning } : {}),
    ...(options.sendSources !== undefined ? { sendSources: options.sendSources } : {}),
  }).pipeThrough(
    new TransformStream<UIMessageChunk, UIMessageChunk>({
      transform(chunk, controller) {
        controller.enqueue(chunk.type === 'custom' && chunk.kind === RESET_STEP.kind ? { type: 'reset-step' } : chunk);
      },
    }),
  );
  return createUIMessageStreamResponse({ stream: chunks, ...(options.headers ? { headers: options.headers } : {}) });
}
