import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike, Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Logger } from '../util/logger.ts';
import { addLiveSecret } from '../util/scrub.ts';
import { expandEnvReferences, type McpHttpServerConfig, type McpServerConfig } from './config.ts';
import { oauthSecretFields, type McpOAuthConfig } from './oauth-config.ts';
import { guardedFetch } from './oauth/guard.ts';
import { machineProvider } from './oauth/machine.ts';
import { type InteractiveAuthorization, type LoginCommand, StoredOAuthProvider } from './oauth/provider.ts';
import type { McpCredentialStore } from './oauth/store.ts';

/**
 * The transport to one drop-in server: a child process over stdio, Streamable HTTP, or the
 * legacy HTTP+SSE transport, with acx's OAuth client on the HTTP ones unless the drop-in sends
 * its own Authorization header. Which kind a server gets is the config's, except that an
 * `http` server which answers Streamable HTTP's first request with a 4xx other than 401/403 is
 * tried again over SSE (answersLikeLegacyServer), as the MCP SDK advises for servers of
 * unknown age.
 */
export type TransportKind = 'stdio' | 'http' | 'sse';

/** A reason a server is not used, said to the user as it is (no stack, no "unexpected"). */
export class SkipServer extends Error {}

export interface TransportOptions {
  env: NodeJS.ProcessEnv;
  logger: Logger;
  /** Where logins are kept (the config home's mcp-auth/); without it an OAuth server says so. */
  credentials?: McpCredentialStore;
  loginCommand?: LoginCommand;
  /** Only `acx mcp login`: where the browser is sent and the code caught. */
  interactive?: InteractiveAuthorization;
}

export interface OpenedTransport {
  transport: Transport;
  kind: TransportKind;
  /** The OAuth client for this server, when acx authorizes it itself. */
  oauth?: OAuthClientProvider;
  /** The last lines the server wrote to stderr (stdio), for the reason it failed. */
  stderrTail(): string;
}

const STDERR_TAIL = 600;

export function openTransport(config: McpServerConfig, kind: TransportKind, options: TransportOptions): OpenedTransport {
  if (config.transport === 'stdio') return openStdio(config, options);
  const expanded = expandEnvReferences(config.headers, options.env, config.envGrant);
  assertExpanded(expanded, 'headers');
  const url = new URL(config.url);
  const oauth = Object.keys(expanded.values).some((header) => header.toLowerCase() === 'authorization') ? undefined : oauthProviderFor(config, options);
  const fetch: FetchLike | undefined =
    oauth instanceof StoredOAuthProvider ? guardedFetch(oauth, config.name, options.interactive !== undefined, options.loginCommand) : undefined;
  const shared = { requestInit: { headers: expanded.values }, ...(oauth ? { authProvider: oauth } : {}), ...(fetch ? { fetch } : {}) };
  const transport = kind === 'sse' ? new SSEClientTransport(url, shared) : new StreamableHTTPClientTransport(url, shared);
  return { transport, kind, ...(oauth ? { oauth } : {}), stderrTail: () => '' };
}

function openStdio(config: Extract<McpServerConfig, { transport: 'stdio' }>, options: TransportOptions): OpenedTransport {
  const expanded = expandEnvReferences(config.env, options.env, config.envGrant);
  assertExpanded(expanded, 'env');
  const log = options.logger.child({ server: config.name });
  let tail = '';
  const stdio = new StdioClientTransport({
    command: config.command,
    args: config.args,
    // The SDK merges a minimal safe environment (PATH, HOME...) under these; host secrets stay out.
    env: expanded.values,
    cwd: config.cwd,
    stderr: 'pipe',
  });
  stdio.stderr?.on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    tail = (tail + text).slice(-STDERR_TAIL);
    log.debug('mcp server stderr', { text: text.trimEnd() });
  });
  return { transport: stdio, kind: 'stdio', stderrTail: () => tail };
}

/** The OAuth client for an HTTP server: the drop-in's grant, or the stored login (authorization_code). */
function oauthProviderFor(config: McpHttpServerConfig, options: TransportOptions): OAuthClientProvider | undefined {
  const oauth = config.oauth ? expandOAuth(config, options.env) : undefined;
  if (oauth && oauth.grant !== 'authorization_code') return machineProvider(oauth);
  if (!options.credentials) return undefined;
  return new StoredOAuthProvider({
    key: { name: config.name, url: config.url },
    store: options.credentials,
    ...(oauth ? { oauth } : {}),
    ...(options.interactive ? { interactive: options.interactive } : {}),
    ...(options.loginCommand ? { loginCommand: options.loginCommand } : {}),
    logger: options.logger,
  });
}

/** The oauth block with its `${VAR}`s read from the host (granted ones only for a cartridge's server). */
function expandOAuth(config: McpHttpServerConfig, env: NodeJS.ProcessEnv): McpOAuthConfig {
  const oauth = config.oauth!;
  const expanded = expandEnvReferences(oauthSecretFields(oauth), env, config.envGrant);
  assertExpanded(expanded, 'oauth');
  const value = expanded.values;
  addLiveSecret(value.clientSecret);
  addLiveSecret(value.privateKey);
  addLiveSecret(value['idp.idToken']);
  return {
    ...oauth,
    ...(value.clientId !== undefined ? { clientId: value.clientId } : {}),
    ...(value.clientSecret !== undefined ? { clientSecret: value.clientSecret } : {}),
    ...(value.privateKey !== undefined ? { privateKey: value.privateKey } : {}),
    ...(oauth.idp ? { idp: { ...oauth.idp, clientId: value['idp.clientId']!, idToken: value['idp.idToken']! } } : {}),
  };
}

/** A server whose `${VAR}` references did not all expand is skipped, with the names and what to do. */
export function assertExpanded(expanded: { missing: string[]; refused: string[] }, field: 'env' | 'headers' | 'oauth'): void {
  if (expanded.refused.length) {
    const names = expanded.refused.join(',');
    throw new SkipServer(
      `it is a cartridge's server and asks for host variable ${expanded.refused.join(', ')} in "${field}", which the host has not granted to cartridges; ` +
        `grant it with --allow-cartridge-env ${names} (or ACX_CARTRIDGE_ENV=${names}) if this server should have it`,
    );
  }
  if (expanded.missing.length) {
    throw new SkipServer(`environment variable ${expanded.missing.join(', ')} is not set (referenced in "${field}")`);
  }
}

/**
 * Whether Streamable HTTP's first request was answered the way a server of the older HTTP+SSE
 * transport answers it: a 4xx (400, 404, 405...), but not 401/403, which are about authorization.
 */
export function answersLikeLegacyServer(error: unknown): boolean {
  return error instanceof StreamableHTTPError && error.code !== undefined && error.code >= 400 && error.code < 500 && error.code !== 401 && error.code !== 403;
}
