import { createHash } from 'node:crypto';
import { addLiveSecret } from '../util/scrub.ts';
import { MissingCredentialsError } from './errors.ts';
import type { MintedToken } from './types.ts';

/**
 * Where the client's Bearer token comes from: the `token` option, else BASECRADLE_TOKEN, else
 * minted from BASECRADLE_EMAIL + BASECRADLE_PASSWORD (+ BASECRADLE_SESSION_NAME) through
 * POST /session — once per process for the same platform, account and session name, so many
 * clients (one per wake step, say) share one session instead of filling the account with them.
 * The token and password are held in memory only, and registered with the scrubber so no log
 * line or error text can carry them.
 */
export interface CredentialOptions {
  token?: string;
  email?: string;
  password?: string;
  sessionName?: string;
}

export type Env = Readonly<Record<string, string | undefined>>;

export type CredentialSource =
  | { kind: 'token'; token: string }
  | { kind: 'login'; email: string; password: string; sessionName: string };

export const DEFAULT_SESSION_NAME = 'acx';

export function credentialSource(options: CredentialOptions, env: Env): CredentialSource {
  const token = nonEmpty(options.token) ?? nonEmpty(env.BASECRADLE_TOKEN);
  if (token) {
    addLiveSecret(token);
    return { kind: 'token', token };
  }
  const email = nonEmpty(options.email) ?? nonEmpty(env.BASECRADLE_EMAIL);
  const password = nonEmpty(options.password) ?? nonEmpty(env.BASECRADLE_PASSWORD);
  if (email && password) {
    addLiveSecret(password);
    const sessionName = nonEmpty(options.sessionName) ?? nonEmpty(env.BASECRADLE_SESSION_NAME) ?? DEFAULT_SESSION_NAME;
    return { kind: 'login', email, password, sessionName };
  }
  const half = email ? 'BASECRADLE_EMAIL is set but BASECRADLE_PASSWORD is not' : password ? 'BASECRADLE_PASSWORD is set but BASECRADLE_EMAIL is not' : 'none of them is set';
  throw new MissingCredentialsError({
    code: 'missing_credentials',
    message: `No BaseCradle credentials: set BASECRADLE_TOKEN, or BASECRADLE_EMAIL and BASECRADLE_PASSWORD (${half}).`,
    hint: 'Mint a token on the platform (for the local one: `acx platform user add --handle NAME --kind ai`) and export it as BASECRADLE_TOKEN.',
  });
}

export type MintToken = (body: { email_address: string; password: string; name: string }) => Promise<MintedToken>;

/** Tokens minted in this process, by platform + account + session name. */
const mintedTokens = new Map<string, Promise<string>>();

/** The Bearer token for a source: the given one, or the one this process minted (minting it on first use). */
export function bearerToken(source: CredentialSource, baseUrl: string, mint: MintToken): Promise<string> {
  if (source.kind === 'token') return Promise.resolve(source.token);
  // The password's digest is part of the key: a client given another password must not be handed this token.
  const proof = createHash('sha256').update(source.password).digest('hex');
  const key = `${baseUrl}\n${source.email.toLowerCase()}\n${source.sessionName}\n${proof}`;
  let pending = mintedTokens.get(key);
  if (!pending) {
    pending = mint({ email_address: source.email, password: source.password, name: source.sessionName }).then((minted) => {
      addLiveSecret(minted.token);
      return minted.token;
    });
    mintedTokens.set(key, pending);
    // A failed login is not cached: the next client may have been given the right password.
    pending.catch(() => {
      if (mintedTokens.get(key) === pending) mintedTokens.delete(key);
    });
  }
  return pending;
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}
