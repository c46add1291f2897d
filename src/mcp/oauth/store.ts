import { chmodSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { AcxError } from '../../core/errors.ts';
import { writeFileAtomic } from '../../util/atomic-write.ts';
import { addLiveSecret } from '../../util/scrub.ts';

/**
 * Where `acx mcp login` keeps what it obtained for a server: one file per server under
 * `<config home>/mcp-auth/`, mode 0600 in a 0700 directory, replaced atomically (a reader sees
 * the old file or the new, never half). A file holds the client registration, the tokens, the
 * discovery results and the redirect URI they were obtained with, for one server URL: what was
 * obtained for one URL is never presented to another (a drop-in whose URL changed reads as
 * logged out). Every secret read or written here is added to the values scrubbed from all text.
 */
export interface StoredTokens extends OAuthTokens {
  /** When the access token expires (epoch ms), from `expires_in` at the time it was saved. */
  expires_at?: number;
}

export interface StoredCredentials {
  client?: OAuthClientInformationMixed;
  tokens?: StoredTokens;
  discovery?: OAuthDiscoveryState;
  /** The loopback redirect URI the client was registered with (the port a later login reuses). */
  redirectUri?: string;
  /** Scope a server asked for beyond what the tokens carry (a 403 insufficient_scope): the next login asks for it too. */
  wantedScope?: string;
}

interface CredentialsFile extends StoredCredentials {
  version: 1;
  server: string;
  url: string;
}

/** A server as the store keys it: its drop-in name and its URL. */
export interface CredentialsKey {
  name: string;
  url: string;
}

export class McpCredentialStore {
  readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  static inConfigHome(configHome: string): McpCredentialStore {
    return new McpCredentialStore(join(configHome, 'mcp-auth'));
  }

  /** The server's file (names are letters, digits, `_`, `-`, `.`, never leading `.`: safe as file names). */
  fileOf(key: CredentialsKey): string {
    return join(this.dir, `${key.name}.json`);
  }

  /** What is stored for the server at this URL; empty when nothing is, or only for another URL. */
  read(key: CredentialsKey): StoredCredentials {
    const file = this.fileOf(key);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw new AcxError('mcp-credentials', `Cannot read the MCP login file ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`, {
        hint: `Check its permissions, or delete it and run \`acx mcp login ${key.name}\` again.`,
      });
    }
    let parsed: CredentialsFile;
    try {
      parsed = JSON.parse(text) as CredentialsFile;
    } catch {
      throw new AcxError('mcp-credentials', `The MCP login file ${file} is not valid JSON`, { hint: `Delete it and run \`acx mcp login ${key.name}\` again.` });
    }
    if (parsed.url !== key.url) return {};
    const { version: _version, server: _server, url: _url, ...stored } = parsed;
    registerSecrets(stored);
    return stored;
  }

  /** Replaces what is stored for the server with `change(current)`; an empty result deletes the file. */
  update(key: CredentialsKey, change: (current: StoredCredentials) => StoredCredentials): StoredCredentials {
    const next = change(this.read(key));
    const kept = Object.fromEntries(Object.entries(next).filter(([, value]) => value !== undefined)) as StoredCredentials;
    if (Object.keys(kept).length === 0) {
      this.remove(key);
      return {};
    }
    registerSecrets(kept);
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    chmodSync(this.dir, 0o700);
    const file: CredentialsFile = { version: 1, server: key.name, url: key.url, ...kept };
    writeFileAtomic(this.fileOf(key), `${JSON.stringify(file, null, 2)}\n`, 0o600);
    return kept;
  }

  /** Deletes the server's file; true when there was one. */
  remove(key: CredentialsKey): boolean {
    const file = this.fileOf(key);
    try {
      rmSync(file);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw new AcxError('mcp-credentials', `Cannot delete the MCP login file ${file} (${(error as NodeJS.ErrnoException).code})`);
    }
  }
}

function registerSecrets(stored: StoredCredentials): void {
  addLiveSecret(stored.tokens?.access_token);
  addLiveSecret(stored.tokens?.refresh_token);
  addLiveSecret(stored.client?.client_secret);
}
