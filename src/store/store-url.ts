import { AcxError } from '../core/errors.ts';
import type { StoreKind } from './journal-store.ts';

/** What ACX_STORE / --store names: nothing (the SQLite files under the home) or a postgres:// URL. */
export function storeKindOf(url: string | null | undefined): StoreKind {
  if (url === null || url === undefined || url === '') return 'sqlite';
  if (/^postgres(ql)?:\/\//.test(url)) return 'postgres';
  throw new AcxError('config', `The store "${redactUrl(url)}" is not a postgres:// URL.`, {
    hint: 'Give ACX_STORE / --store a postgres://user@host/db URL, or leave it unset for the SQLite files under the home.',
  });
}

/** The URL with any password replaced, for logs and resolved-config: a password is never shown. */
export function redactUrl(url: string): string {
  // libpq also takes the password as a query parameter.
  const masked = url.replace(/([?&]password=)[^&#]*/gi, '$1***');
  try {
    const parsed = new URL(masked);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    // A unix-socket URL (postgres://user:pw@/db?host=/run/postgresql) has an empty host, which
    // URL refuses: mask the password in its userinfo by shape; any other shape is not shown at all.
    const socket = /^(postgres(?:ql)?:\/\/)([^/?#@]*)@(\/.*)?$/i.exec(masked);
    if (!socket) return '(an unparsable URL)';
    const [, scheme, userinfo, rest] = socket as unknown as [string, string, string, string | undefined];
    const user = userinfo.split(':')[0];
    return `${scheme}${user}${userinfo.includes(':') ? ':***' : ''}@${rest ?? ''}`;
  }
}

/**
 * Which agent a store's rows belong to, on a database many agents share: the agent id, as
 * `<home>/agents/<agent id>/` names the agent's own SQLite files (for a cartridge, its manifest
 * id). Each store is opened for one agent and reads and writes only that agent's rows, so two
 * agents with a session of the same id (and so the same wake turn ids) never meet. Rows written
 * before stores were scoped belong to DEFAULT_AGENT_ID, the id of the config home's own agent and
 * the library harness's default.
 */
export const DEFAULT_AGENT_ID = 'default';
