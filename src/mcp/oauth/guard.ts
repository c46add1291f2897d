import { extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { loginRequired, type LoginCommand, type StoredOAuthProvider } from './provider.ts';

/**
 * The fetch an HTTP transport with a StoredOAuthProvider sends through. It looks at the answers
 * to MCP requests only (JSON-RPC posts and event-stream GETs; discovery, registration and token
 * requests pass untouched) and steps in where the SDK alone would do the wrong thing:
 *
 * - 401 while acx holds no login for the server, in a run nobody can answer: the SDK would
 *   register a client and start an authorization no one can complete. The request fails with
 *   the `acx mcp login` to run instead, before anything is registered.
 * - 403 insufficient_scope: the SDK would refresh the token, which brings back the same scope.
 *   The scope is remembered (the next login asks for it) and the next authorization is a new
 *   one; a run nobody can answer fails with the login to run.
 */
export function guardedFetch(provider: StoredOAuthProvider, server: string, interactive: boolean, loginCommand?: LoginCommand, base: FetchLike = fetch): FetchLike {
  return async (input, init) => {
    const response = await base(input, init);
    if (!isMcpRequest(init)) return response;
    if (response.status === 401 && !interactive && !provider.hasTokens()) {
      await response.body?.cancel();
      throw provider.refuse(loginRequired(server, 'asks for OAuth authorization, and acx holds no login for it', loginCommand));
    }
    if (response.status === 403) {
      const { error, scope } = extractWWWAuthenticateParams(response);
      if (error === 'insufficient_scope') {
        provider.needsScope(scope);
        if (!interactive) {
          await response.body?.cancel();
          throw provider.refuse(loginRequired(server, `needs more access than its login granted${scope ? ` (scope "${scope}")` : ''}`, loginCommand));
        }
      }
    }
    return response;
  };
}

/** An MCP message post (its body is JSON-RPC) or the server's event stream (a GET for text/event-stream). */
function isMcpRequest(init: RequestInit | undefined): boolean {
  // The SDK serialises messages with JSON.stringify: no spaces around the colon.
  if (typeof init?.body === 'string') return init.body.includes('"jsonrpc":"2.0"');
  const accept = new Headers(init?.headers).get('accept') ?? '';
  return (init?.method ?? 'GET').toUpperCase() === 'GET' && accept.includes('text/event-stream');
}
