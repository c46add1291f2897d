import { ClientCredentialsProvider, PrivateKeyJwtProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformation, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { AcxError } from '../../core/errors.ts';
import { addLiveSecret } from '../../util/scrub.ts';
import type { McpOAuthConfig } from '../oauth-config.ts';

/**
 * The grants no user takes part in, for agents that run unattended (wake, worker): nothing is
 * stored, each process gets its tokens when the server first asks. `client_credentials` uses
 * the MCP SDK's own providers (client_secret_basic or private_key_jwt). `cross-app-access`
 * (Enterprise-Managed Authorization): the enterprise identity provider exchanges the user's ID
 * token for an identity assertion grant (RFC 8693 token exchange, an ID-JAG) addressed to the
 * MCP server's authorization server, which the SDK's `auth()` then presents there as a JWT
 * bearer grant (RFC 7523) with the client's own credentials. The SDK has no provider for the
 * exchange at the IdP; this is that one request.
 */
export function machineProvider(oauth: McpOAuthConfig): OAuthClientProvider {
  const issuer = oauth.issuer ? { expectedIssuer: oauth.issuer } : {};
  const scope = oauth.scope ? { scope: oauth.scope } : {};
  if (oauth.grant === 'cross-app-access') return new CrossAppAccessProvider(oauth);
  if (oauth.privateKey) {
    return new PrivateKeyJwtProvider({ clientId: oauth.clientId!, privateKey: oauth.privateKey, algorithm: oauth.algorithm ?? 'RS256', clientName: 'acx', ...scope, ...issuer });
  }
  return new ClientCredentialsProvider({ clientId: oauth.clientId!, clientSecret: oauth.clientSecret!, clientName: 'acx', ...scope, ...issuer });
}

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const ID_TOKEN = 'urn:ietf:params:oauth:token-type:id_token';
const ID_JAG = 'urn:ietf:params:oauth:token-type:id-jag';

class CrossAppAccessProvider implements OAuthClientProvider {
  private readonly oauth: McpOAuthConfig;
  private current: OAuthTokens | undefined;
  private discovery: OAuthDiscoveryState | undefined;

  constructor(oauth: McpOAuthConfig) {
    this.oauth = oauth;
  }

  /** No browser: the SDK asks prepareTokenRequest for the grant instead. */
  get redirectUrl(): undefined {
    return undefined;
  }

  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'acx', redirect_uris: [], grant_types: [JWT_BEARER], ...(this.oauth.scope ? { scope: this.oauth.scope } : {}) };
  }

  clientInformation(): OAuthClientInformation {
    return { client_id: this.oauth.clientId!, client_secret: this.oauth.clientSecret!, ...(this.oauth.issuer ? { issuer: this.oauth.issuer } : {}) };
  }

  tokens(): OAuthTokens | undefined {
    return this.current;
  }

  saveTokens(tokens: OAuthTokens): void {
    addLiveSecret(tokens.access_token);
    this.current = tokens;
  }

  redirectToAuthorization(): void {
    throw new AcxError('mcp-auth-failed', 'The cross-app-access grant has no authorization page to open');
  }

  saveCodeVerifier(): void {}

  codeVerifier(): string {
    return '';
  }

  /** auth() hands over what discovery found before it asks for the grant: the audience and resource of the exchange. */
  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.discovery = state;
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.discovery;
  }

  async prepareTokenRequest(scope?: string): Promise<URLSearchParams> {
    const idp = this.oauth.idp!;
    const audience = this.discovery?.authorizationServerMetadata?.issuer ?? this.discovery?.authorizationServerUrl;
    const resource = this.discovery?.resourceMetadata?.resource;
    if (!audience || !resource) {
      throw new AcxError('mcp-auth-failed', 'Cross-app access needs the server\'s protected-resource and authorization-server metadata, and discovery found none');
    }
    const exchange = new URLSearchParams({
      grant_type: TOKEN_EXCHANGE,
      requested_token_type: ID_JAG,
      audience,
      resource,
      subject_token: idp.idToken,
      subject_token_type: ID_TOKEN,
      client_id: idp.clientId,
      ...(scope ? { scope } : {}),
    });
    const response = await fetch(idp.tokenEndpoint, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }, body: exchange });
    const body = (await response.json().catch(() => ({}))) as { access_token?: unknown; error?: unknown; error_description?: unknown };
    if (!response.ok || typeof body.access_token !== 'string') {
      const why = typeof body.error === 'string' ? `${body.error}${typeof body.error_description === 'string' ? `: ${body.error_description}` : ''}` : `HTTP ${response.status}`;
      throw new AcxError('mcp-auth-failed', `The identity provider refused the token exchange (${why})`, { hint: 'Check "oauth.idp" in the drop-in: the ID token may have expired.' });
    }
    addLiveSecret(body.access_token);
    return new URLSearchParams({ grant_type: JWT_BEARER, assertion: body.access_token });
  }
}
