import { discoverOAuthServerInfo, selectClientAuthMethod } from '@modelcontextprotocol/sdk/client/auth.js';
import type { AuthorizationServerMetadata, OAuthClientInformationMixed } from '@modelcontextprotocol/sdk/shared/auth.js';
import { AcxError, errorMessage } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';
import { connectMcpServer, MAX_AUTHORIZATIONS } from '../client.ts';
import { expandEnvReferences, type McpHttpServerConfig, type McpServerConfig } from '../config.ts';
import { oauthSecretFields } from '../oauth-config.ts';
import { SkipServer, type TransportKind } from '../transport.ts';
import { catchRedirect, type RedirectCatcher } from './loopback.ts';
import type { McpCredentialStore, StoredCredentials } from './store.ts';

/**
 * `acx mcp login` and `acx mcp logout` as functions. A login runs the authorization code flow
 * once, in the foreground: the authorization URL goes to `open` (the CLI prints it), the code
 * comes back on a loopback redirect, the tokens land in the store, and the server is connected
 * and its tools listed to prove the login works. A logout revokes the tokens where the
 * authorization server has a revocation endpoint (RFC 7009) and deletes what was stored.
 */
export const DEFAULT_LOGIN_WAIT_MS = 5 * 60_000;

export interface LoginOptions {
  config: McpServerConfig;
  credentials: McpCredentialStore;
  /** Shows the user the authorization URL (the CLI prints it). */
  open(url: URL): void | Promise<void>;
  env?: NodeJS.ProcessEnv;
  logger: Logger;
  /** Each request's time limit while connecting (initialize, tools/list). */
  startTimeoutMs?: number;
  /** How long to wait for the browser to come back (default 5 minutes). */
  waitMs?: number;
  signal?: AbortSignal;
}

export interface LoginResult {
  server: string;
  transport: TransportKind;
  toolCount: number;
  /** The scope the tokens carry, as the authorization server said. */
  scope?: string;
  /** How many times the browser was sent to authorize (0: the server let acx in without). */
  authorizations: number;
}

export async function loginMcpServer(options: LoginOptions): Promise<LoginResult> {
  const config = oauthServer(options.config, 'log in to');
  const key = { name: config.name, url: config.url };
  const stored = options.credentials.read(key);
  const catcher = await listen(config, stored);
  // A fresh login: the tokens and discovery go; a client registered for another redirect URI too.
  const dynamic = !config.oauth?.clientId;
  const movedPort = stored.redirectUri !== undefined && stored.redirectUri !== catcher.redirectUrl;
  options.credentials.update(key, (current) => ({
    ...current,
    tokens: undefined,
    discovery: undefined,
    ...(dynamic && movedPort ? { client: undefined, redirectUri: undefined } : {}),
  }));
  const wait = AbortSignal.any([AbortSignal.timeout(options.waitMs ?? DEFAULT_LOGIN_WAIT_MS), ...(options.signal ? [options.signal] : [])]);
  let pendingCode: Promise<string> | undefined;
  let authorizations = 0;
  try {
    const connected = await connectMcpServer(config, options.startTimeoutMs ?? 20_000, {
      env: options.env ?? process.env,
      logger: options.logger,
      credentials: options.credentials,
      interactive: {
        redirectUrl: catcher.redirectUrl,
        async open(url) {
          if (authorizations === MAX_AUTHORIZATIONS) {
            throw new AcxError('mcp-auth-failed', `still refuses acx after ${MAX_AUTHORIZATIONS} authorizations, asking each time for more access than it grants`, {
              hint: 'Check with the server\'s operator which scope its tools need.',
            });
          }
          authorizations += 1;
          // Waiting starts before the URL is shown: the browser may come back at once.
          const state = url.searchParams.get('state') ?? undefined;
          pendingCode = catcher.code(() => state, wait);
          pendingCode.catch(() => {});
          await options.open(url);
        },
        async finish(transport) {
          if (!pendingCode) throw new AcxError('mcp-auth-failed', 'The server refused acx without starting an authorization');
          const code = await pendingCode.catch((error: unknown) => {
            throw wait.aborted && !options.signal?.aborted
              ? new AcxError('mcp-auth-failed', `No authorization came back within ${Math.round((options.waitMs ?? DEFAULT_LOGIN_WAIT_MS) / 1000)} s`, { hint: 'Run the login again and finish it in the browser.' })
              : error;
          });
          pendingCode = undefined;
          await transport.finishAuth(code);
        },
      },
    }).catch((error: unknown) => {
      if (error instanceof SkipServer) throw new AcxError('mcp-auth-failed', `MCP server "${config.name}" ${error.message}`, { cause: error });
      throw error;
    });
    await connected.close();
    // Whatever scope a server refused a call for earlier was asked for in this login.
    const { tokens } = options.credentials.update(key, (current) => ({ ...current, wantedScope: undefined }));
    return { server: config.name, transport: connected.kind, toolCount: connected.remote.length, authorizations, ...(tokens?.scope ? { scope: tokens.scope } : {}) };
  } finally {
    await catcher.close();
  }
}

/** The loopback listener: on the drop-in's redirectPort, else the port the client was registered with, else any free one. */
async function listen(config: McpHttpServerConfig, stored: StoredCredentials): Promise<RedirectCatcher> {
  const fixed = config.oauth?.redirectPort;
  if (fixed !== undefined) {
    return catchRedirect(fixed).catch((error: unknown) => {
      throw new AcxError('mcp-auth-failed', `Cannot listen for the authorization redirect on 127.0.0.1:${fixed} (${(error as NodeJS.ErrnoException).code ?? errorMessage(error)})`, {
        hint: `The drop-in's "oauth.redirectPort" must be free while the login runs; close what uses port ${fixed}.`,
      });
    });
  }
  const previous = stored.redirectUri ? Number(new URL(stored.redirectUri).port) : 0;
  if (previous > 0) {
    const again = await catchRedirect(previous).catch(() => undefined);
    if (again) return again;
  }
  return catchRedirect(0);
}

export interface LogoutResult {
  server: string;
  /** Whether acx held anything for the server. */
  removed: boolean;
  /** The tokens the authorization server was told to revoke. */
  revoked: Array<'access_token' | 'refresh_token'>;
  /** Why a revocation did not happen (no endpoint, or it failed); the local copy is deleted all the same. */
  notRevoked?: string;
}

export async function logoutMcpServer(options: { config: McpServerConfig; credentials: McpCredentialStore; env?: NodeJS.ProcessEnv; logger: Logger }): Promise<LogoutResult> {
  const config = oauthServer(options.config, 'log out of');
  const key = { name: config.name, url: config.url };
  const stored = options.credentials.read(key);
  const result: LogoutResult = { server: config.name, removed: false, revoked: [] };
  if (stored.tokens) {
    try {
      const metadata = (stored.discovery?.authorizationServerMetadata ?? (await discoverOAuthServerInfo(config.url)).authorizationServerMetadata) as RevocationMetadata | undefined;
      const client = clientOf(config, stored, options.env ?? process.env);
      if (!metadata?.revocation_endpoint) result.notRevoked = 'the authorization server has no revocation endpoint';
      else if (!client) result.notRevoked = 'acx holds no client registration to revoke with';
      else {
        // The refresh token first: revoking it usually ends the access tokens made from it as well.
        for (const kind of ['refresh_token', 'access_token'] as const) {
          const token = stored.tokens[kind];
          if (!token) continue;
          await revokeToken(metadata, client, token, kind);
          result.revoked.push(kind);
        }
      }
    } catch (error) {
      result.notRevoked = `revocation failed: ${errorMessage(error)}`;
      options.logger.warn('mcp oauth revocation failed', { server: config.name, reason: errorMessage(error) });
    }
  }
  result.removed = options.credentials.remove(key);
  return result;
}

/** What revoking needs of the authorization server's metadata (RFC 8414 names these; OIDC discovery documents may carry them too). */
type RevocationMetadata = AuthorizationServerMetadata & { revocation_endpoint?: string; revocation_endpoint_auth_methods_supported?: string[] };

/** RFC 7009: one token, with the client's authentication as the server accepts it. */
async function revokeToken(metadata: RevocationMetadata, client: OAuthClientInformationMixed, token: string, hint: 'access_token' | 'refresh_token'): Promise<void> {
  const body = new URLSearchParams({ token, token_type_hint: hint });
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
  const methods = metadata.revocation_endpoint_auth_methods_supported ?? metadata.token_endpoint_auth_methods_supported ?? [];
  const method = selectClientAuthMethod(client, methods);
  if (method === 'client_secret_basic') headers.authorization = `Basic ${Buffer.from(`${client.client_id}:${client.client_secret ?? ''}`).toString('base64')}`;
  else {
    body.set('client_id', client.client_id);
    if (method === 'client_secret_post' && client.client_secret) body.set('client_secret', client.client_secret);
  }
  const response = await fetch(metadata.revocation_endpoint!, { method: 'POST', headers, body });
  // RFC 7009 §2.2: 200 whether or not the token was still valid.
  if (!response.ok) throw new Error(`the revocation endpoint answered HTTP ${response.status}`);
  await response.body?.cancel();
}

/** The drop-in's pre-registered client (`${VAR}`s read), else the registration acx stored. */
function clientOf(config: McpHttpServerConfig, stored: StoredCredentials, env: NodeJS.ProcessEnv): OAuthClientInformationMixed | undefined {
  if (!config.oauth?.clientId) return stored.client;
  const { values } = expandEnvReferences(oauthSecretFields(config.oauth), env, config.envGrant);
  return { client_id: values.clientId!, ...(values.clientSecret ? { client_secret: values.clientSecret } : {}) };
}

/** Only an HTTP server that acx authorizes with a user's login has one to log in to. */
function oauthServer(config: McpServerConfig, what: string): McpHttpServerConfig {
  if (config.transport === 'stdio') {
    throw new AcxError('usage', `MCP server "${config.name}" runs as a local command (${config.source}); there is nothing to ${what}`, {
      hint: 'Only HTTP servers ("url" drop-ins) use OAuth.',
    });
  }
  if (Object.keys(config.headers).some((header) => header.toLowerCase() === 'authorization')) {
    throw new AcxError('usage', `MCP server "${config.name}" sends its own Authorization header (${config.source}); there is nothing to ${what}`, {
      hint: 'Remove the header from the drop-in to let acx authorize it with OAuth.',
    });
  }
  if (config.oauth && config.oauth.grant !== 'authorization_code') {
    throw new AcxError('usage', `MCP server "${config.name}" uses the ${config.oauth.grant} grant (${config.source}): acx gets its tokens itself, there is nothing to ${what}`);
  }
  return config;
}
