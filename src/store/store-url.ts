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
