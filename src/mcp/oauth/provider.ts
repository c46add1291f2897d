import { randomBytes } from 'node:crypto';
import { auth, type OAuthClientProvider, type OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { AcxError, errorMessage } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';
import type { McpOAuthConfig } from '../oauth-config.ts';
import type { CredentialsKey, McpCredentialStore, StoredCredentials, StoredTokens } from './store.ts';

/**
 * The OAuth client acx is to one MCP server (the authorization_code grant), on the MCP SDK's
 * `auth()`: the SDK discovers the protected-resource and authorization-server metadata,
 * registers the client dynamically (or uses the drop-in's pre-registered one), runs PKCE with
 * the resource indicator, exchanges codes and refreshes tokens; this class only keeps what the
 * SDK hands it (McpCredentialStore) and decides who may be sent to a browser.
 *
 * Interactive (`acx mcp login`): the authorization URL goes to `interactive.open`, and the
 * loopback redirect catches the code. Everywhere else nobody can open a browser: when the SDK
 * would start an authorization, the connection fails with the `acx mcp login` to run.
 *
 * Tokens are refreshed before they expire: an access token within REFRESH_MARGIN of its expiry
 * (at most half its lifetime) is refreshed when it is next needed, before the request that
 * needs it is sent.
 */
export const REFRESH_MARGIN_MS = 60_000;

/** Where a browser would be sent and the code caught: only `acx mcp login` has one. */
export interface InteractiveAuthorization {
  /** The loopback URL the authorization server redirects to. */
  redirectUrl: string;
  /** Shows the user the authorization URL (prints it, opens a browser). */
  open(url: URL): void | Promise<void>;
  /** Waits for the code the browser brings back, and has `transport` exchange it for tokens. */
  finish(transport: { finishAuth(code: string): Promise<void> }): Promise<void>;
}

/** Builds the command a user runs to log in to a server, for messages. */
export type LoginCommand = (server: string) => string;

export const defaultLoginCommand: LoginCommand = (server) => `acx mcp login ${server}`;

export function loginRequired(server: string, why: string, loginCommand: LoginCommand = defaultLoginCommand): AcxError {
  return new AcxError('mcp-login-required', `MCP server "${server}" ${why}`, {
    hint: `Run \`${loginCommand(server)}\` once: it opens the server's authorization page and keeps the tokens in the config home.`,
  });
}

/** A redirect URI for registrations made without a login running (never visited): the loopback one `acx mcp login` replaces. */
const UNUSED_REDIRECT = 'http://127.0.0.1/callback';

export interface StoredOAuthProviderOptions {
  key: CredentialsKey;
  store: McpCredentialStore;
  /** The drop-in's "oauth" block with its `${VAR}`s expanded. */
  oauth?: McpOAuthConfig;
  interactive?: InteractiveAuthorization;
  loginCommand?: LoginCommand;
  logger: Logger;
}

export class StoredOAuthProvider implements OAuthClientProvider {
  private readonly options: StoredOAuthProviderOptions;
  private verifier: string | undefined;
  /** Set while tokens() has a refresh on its way (auth() reads tokens() itself meanwhile). */
  private refreshing = false;
  /** The server asked for more scope than the tokens carry: the next auth() authorizes anew instead of refreshing. */
  private stepUp = false;
  /**
   * Why the last request could not be authorized, as said to the user: a transport may pass on
   * only the text of an error thrown under it (the SSE transport's event stream), not the error.
   */
  refusal: AcxError | undefined;
  /** The access token tokens() last handed out: what this process's requests (and refreshes) were made with. */
  private handed: string | undefined;

  constructor(options: StoredOAuthProviderOptions) {
    this.options = options;
  }

  get clientMetadataUrl(): string | undefined {
    return this.options.oauth?.clientMetadataUrl;
  }

  get redirectUrl(): string {
    return this.options.interactive?.redirectUrl ?? this.stored().redirectUri ?? UNUSED_REDIRECT;
  }

  get clientMetadata(): OAuthClientMetadata {
    const scope = this.options.oauth?.scope;
    return {
      client_name: 'acx',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      // A public client: acx runs on the user's machine and can keep no secret from them.
      token_endpoint_auth_method: 'none',
      ...(scope ? { scope } : {}),
    };
  }

  /** A fresh `state` for each authorization URL; the redirect catcher takes only the one the URL carried. */
  state(): string {
    return randomBytes(24).toString('base64url');
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    const { oauth } = this.options;
    if (oauth?.clientId) {
      return { client_id: oauth.clientId, ...(oauth.clientSecret ? { client_secret: oauth.clientSecret } : {}), ...(oauth.issuer ? { issuer: oauth.issuer } : {}) };
    }
    return this.stored().client;
  }

  saveClientInformation(client: OAuthClientInformationMixed): void {
    // A pre-registered client lives in the drop-in; only what the server handed out is kept.
    if (this.options.oauth?.clientId && client.client_id === this.options.oauth.clientId) return;
    this.update((current) => ({ ...current, client, redirectUri: this.redirectUrl }));
  }

  async tokens(): Promise<OAuthTokens | undefined> {
    const tokens = await this.currentTokens();
    this.handed = tokens?.access_token;
    return tokens;
  }

  private async currentTokens(): Promise<OAuthTokens | undefined> {
    const stored = this.stored().tokens;
    if (!stored) return undefined;
    if (this.stepUp) {
      // The stored refresh token would only bring back the scope the server just refused.
      const { refresh_token: _unused, ...rest } = stored;
      return rest;
    }
    if (this.refreshing || this.options.interactive || !stored.refresh_token || !expiresSoon(stored)) return stored;
    this.refreshing = true;
    try {
      await auth(this, { serverUrl: this.options.key.url });
      this.options.logger.info('mcp oauth token refreshed', { server: this.options.key.name });
    } catch (error) {
      // The request goes out with what is left (possibly nothing): the server's 401 then says what to do.
      this.options.logger.warn('mcp oauth refresh failed', { server: this.options.key.name, reason: errorMessage(error) });
    } finally {
      this.refreshing = false;
    }
    return this.stored().tokens;
  }

  saveTokens(tokens: OAuthTokens): void {
    const saved: StoredTokens = { ...tokens, ...(tokens.expires_in !== undefined ? { expires_at: Date.now() + tokens.expires_in * 1000 } : {}) };
    this.stepUp = false;
    this.update((current) => ({ ...current, tokens: saved }));
  }

  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    const { interactive, key, loginCommand } = this.options;
    if (!interactive) {
      throw this.refuse(loginRequired(key.name, this.stored().wantedScope ? 'needs more access than its login granted' : 'needs you to log in again (its login has expired or was revoked)', loginCommand));
    }
    // Scope a server refused a call for earlier (at run time) is asked for in this login too.
    const wanted = this.stored().wantedScope;
    if (wanted) authorizationUrl.searchParams.set('scope', joinScopes(authorizationUrl.searchParams.get('scope') ?? '', wanted));
    await interactive.open(authorizationUrl);
  }

  saveCodeVerifier(codeVerifier: string): void {
    this.verifier = codeVerifier;
  }

  codeVerifier(): string {
    if (!this.verifier) throw new AcxError('mcp-auth-failed', 'No authorization is in progress (no PKCE code verifier was made)');
    return this.verifier;
  }

  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): void {
    if (scope === 'verifier' || scope === 'all') this.verifier = undefined;
    if (scope === 'verifier') return;
    // The server refused tokens this process read; another process (a worker, a second run) may
    // have refreshed them since — its newer tokens stay (refresh tokens rotate: only one wins).
    const stored = this.stored().tokens;
    if (scope === 'tokens' && stored && this.handed !== undefined && stored.access_token !== this.handed) return;
    this.update((current) => ({
      ...current,
      ...(scope === 'all' || scope === 'client' ? { client: undefined, redirectUri: undefined } : {}),
      ...(scope === 'all' || scope === 'tokens' ? { tokens: undefined } : {}),
      ...(scope === 'all' || scope === 'discovery' ? { discovery: undefined } : {}),
    }));
  }

  saveDiscoveryState(discovery: OAuthDiscoveryState): void {
    this.update((current) => ({ ...current, discovery }));
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.stored().discovery;
  }

  /** Keeps `error` as the reason the server could not be authorized, and returns it to be thrown. */
  refuse(error: AcxError): AcxError {
    this.refusal = error;
    return error;
  }

  /** Whether acx holds tokens for this server. */
  hasTokens(): boolean {
    return this.stored().tokens !== undefined;
  }

  /**
   * The server refused a request for want of `scope` (403 insufficient_scope): remembered for
   * the next login, and the next authorization in this process asks for it instead of refreshing.
   */
  needsScope(scope: string | undefined): void {
    this.stepUp = true;
    if (scope) this.update((current) => ({ ...current, wantedScope: joinScopes(current.wantedScope ?? '', scope) }));
  }

  private stored(): StoredCredentials {
    return this.options.store.read(this.options.key);
  }

  private update(change: (current: StoredCredentials) => StoredCredentials): void {
    this.options.store.update(this.options.key, change);
  }
}

/** Within the refresh margin: REFRESH_MARGIN_MS, or half the token's lifetime when that is shorter. */
export function expiresSoon(tokens: StoredTokens, now = Date.now()): boolean {
  if (tokens.expires_at === undefined || tokens.expires_in === undefined) return false;
  const margin = Math.min(REFRESH_MARGIN_MS, (tokens.expires_in * 1000) / 2);
  return now >= tokens.expires_at - margin;
}

/** Space-separated scopes, each once, in first-seen order. */
export function joinScopes(...lists: string[]): string {
  return [...new Set(lists.flatMap((list) => list.split(/\s+/)).filter(Boolean))].join(' ');
}
