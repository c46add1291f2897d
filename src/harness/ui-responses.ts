import { AcxError } from '../core/errors.ts';
import type { AgentSession } from './agent-session.ts';

/**
 * The two pieces of a chat route an AI SDK UI app needs besides createAgentUIStreamResponse: the
 * GET its page loads history from, and the words an error reaches the page with.
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
