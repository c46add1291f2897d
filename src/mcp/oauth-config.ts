import { ConfigError } from '../core/errors.ts';

/**
 * The optional `"oauth"` block of an HTTP drop-in. Without it an HTTP server that answers 401
 * is still authorized by OAuth 2.1 the MCP way (discovery, dynamic client registration, PKCE):
 * `acx mcp login <server>` once. The block is for what discovery cannot know:
 *
 *   { "clientId": "...", "clientSecret": "${SECRET}" }      a client registered beforehand
 *   { "scope": "read write" }                                 the scope to ask for when the server names none
 *   { "redirectPort": 8765 }                                  the loopback port a pre-registered redirect URI names
 *   { "clientMetadataUrl": "https://app.example/acx.json" }  a URL-based client id (client ID metadata document)
 *   { "grant": "client_credentials", "clientId", "clientSecret" | "privateKey" (+ "algorithm") }
 *                                                             machine to machine: no user, no login
 *   { "grant": "cross-app-access", "clientId", "clientSecret", "idp": { "tokenEndpoint", "clientId", "idToken" } }
 *                                                             an enterprise IdP's ID token exchanged for access
 *   { "issuer": "https://auth.example" }                      the only authorization server the client credentials go to
 *
 * `${VAR}` in clientId, clientSecret, privateKey and the idp's clientId and idToken is read from
 * the host environment when connecting, as in headers (and granted the same way to a cartridge).
 */
export type McpOAuthGrant = 'authorization_code' | 'client_credentials' | 'cross-app-access';

export interface McpOAuthConfig {
  grant: McpOAuthGrant;
  clientId?: string;
  clientSecret?: string;
  /** client_credentials with private_key_jwt: a PEM private key (usually `${VAR}`) and its JWS algorithm. */
  privateKey?: string;
  algorithm?: string;
  scope?: string;
  issuer?: string;
  redirectPort?: number;
  clientMetadataUrl?: string;
  idp?: { tokenEndpoint: string; clientId: string; idToken: string };
}

const GRANTS: readonly McpOAuthGrant[] = ['authorization_code', 'client_credentials', 'cross-app-access'];
const KEYS = ['grant', 'clientId', 'clientSecret', 'privateKey', 'algorithm', 'scope', 'issuer', 'redirectPort', 'clientMetadataUrl', 'idp'] as const;
const HINT = 'See "MCP drop-ins" in the README: "oauth" takes clientId, clientSecret, scope, redirectPort, clientMetadataUrl, issuer, grant.';

function fail(source: string, problem: string, hint = HINT): never {
  throw new ConfigError(`MCP config ${source}: ${problem}`, { hint });
}

function optionalString(raw: Record<string, unknown>, key: string, source: string, path = 'oauth'): string | undefined {
  const value = raw[key];
  if (value === undefined) return undefined;
  // Values are not echoed: they may be secrets.
  if (typeof value !== 'string' || value.trim() === '') fail(source, `"${path}.${key}" must be a non-empty string`);
  return value;
}

function httpsUrl(value: string | undefined, key: string, source: string, allowLoopbackHttp: boolean): string | undefined {
  if (value === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    fail(source, `"oauth.${key}" is not a valid URL`);
  }
  const loopback = url.hostname === '127.0.0.1' || url.hostname === 'localhost' || url.hostname === '[::1]';
  if (url.protocol !== 'https:' && !(allowLoopbackHttp && url.protocol === 'http:' && loopback)) {
    fail(source, `"oauth.${key}" must be an https URL${allowLoopbackHttp ? ' (http only on loopback)' : ''}`);
  }
  return value;
}

export function parseMcpOAuthConfig(raw: unknown, source: string): McpOAuthConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) fail(source, '"oauth" must be an object');
  const entry = raw as Record<string, unknown>;
  const unknown = Object.keys(entry).filter((key) => !(KEYS as readonly string[]).includes(key));
  if (unknown.length > 0) fail(source, `"oauth" has unknown key${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `"${k}"`).join(', ')}`);
  const grant = entry.grant ?? 'authorization_code';
  if (typeof grant !== 'string' || !GRANTS.includes(grant as McpOAuthGrant)) fail(source, `"oauth.grant" must be one of ${GRANTS.join(', ')}`);
  const config: McpOAuthConfig = { grant: grant as McpOAuthGrant };
  for (const key of ['clientId', 'clientSecret', 'privateKey', 'algorithm', 'scope'] as const) {
    const value = optionalString(entry, key, source);
    if (value !== undefined) config[key] = value;
  }
  const issuer = httpsUrl(optionalString(entry, 'issuer', source), 'issuer', source, true);
  if (issuer) config.issuer = issuer;
  const metadataUrl = httpsUrl(optionalString(entry, 'clientMetadataUrl', source), 'clientMetadataUrl', source, false);
  if (metadataUrl) {
    if (new URL(metadataUrl).pathname === '/') fail(source, '"oauth.clientMetadataUrl" must have a path (the client ID metadata document\'s own URL)');
    config.clientMetadataUrl = metadataUrl;
  }
  if (entry.redirectPort !== undefined) {
    const port = entry.redirectPort;
    if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) fail(source, '"oauth.redirectPort" must be an integer from 1 to 65535');
    config.redirectPort = port;
  }
  if (entry.idp !== undefined) {
    if (typeof entry.idp !== 'object' || entry.idp === null || Array.isArray(entry.idp)) fail(source, '"oauth.idp" must be an object');
    const idp = entry.idp as Record<string, unknown>;
    const tokenEndpoint = httpsUrl(optionalString(idp, 'tokenEndpoint', source, 'oauth.idp'), 'idp.tokenEndpoint', source, true);
    const clientId = optionalString(idp, 'clientId', source, 'oauth.idp');
    const idToken = optionalString(idp, 'idToken', source, 'oauth.idp');
    if (!tokenEndpoint || !clientId || !idToken) fail(source, '"oauth.idp" needs "tokenEndpoint", "clientId" and "idToken"');
    config.idp = { tokenEndpoint, clientId, idToken };
  }
  checkGrant(config, source);
  return config;
}

/** What each grant needs, and what it cannot use. */
function checkGrant(config: McpOAuthConfig, source: string): void {
  const present = (keys: ReadonlyArray<keyof McpOAuthConfig>) => keys.filter((key) => config[key] !== undefined);
  const refuse = (keys: ReadonlyArray<keyof McpOAuthConfig>, why: string) => {
    const found = present(keys);
    if (found.length > 0) fail(source, `"oauth.${found[0]}" does not apply to ${why}`);
  };
  if (config.clientSecret !== undefined && config.clientId === undefined) fail(source, '"oauth.clientSecret" needs "oauth.clientId" (the client it belongs to)');
  if (config.algorithm !== undefined && config.privateKey === undefined) fail(source, '"oauth.algorithm" needs "oauth.privateKey"');
  switch (config.grant) {
    case 'authorization_code':
      refuse(['privateKey', 'idp'], 'the authorization_code grant (a user logs in with `acx mcp login`)');
      return;
    case 'client_credentials':
      refuse(['redirectPort', 'clientMetadataUrl', 'idp'], 'the client_credentials grant (no browser is involved)');
      if (config.clientId === undefined) fail(source, 'the client_credentials grant needs "oauth.clientId"');
      if ((config.clientSecret === undefined) === (config.privateKey === undefined)) {
        fail(source, 'the client_credentials grant needs exactly one of "oauth.clientSecret" and "oauth.privateKey"');
      }
      return;
    case 'cross-app-access':
      refuse(['redirectPort', 'clientMetadataUrl', 'privateKey'], 'the cross-app-access grant (the identity provider vouches for the user)');
      if (config.clientId === undefined || config.clientSecret === undefined || config.idp === undefined) {
        fail(source, 'the cross-app-access grant needs "oauth.clientId", "oauth.clientSecret" and "oauth.idp"');
      }
      return;
  }
}

/** The `${VAR}`-bearing values of an oauth block, by the path a message names them with. */
export function oauthSecretFields(config: McpOAuthConfig): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const key of ['clientId', 'clientSecret', 'privateKey'] as const) if (config[key] !== undefined) fields[key] = config[key];
  if (config.idp) {
    fields['idp.clientId'] = config.idp.clientId;
    fields['idp.idToken'] = config.idp.idToken;
  }
  return fields;
}
