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
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(an unparsable URL)';
  }
}
