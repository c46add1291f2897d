import type { SQLInputValue } from 'node:sqlite';
import type { Database } from '../store/database.ts';
import { isUuid } from './ids.ts';
import { PlatformError } from './problem.ts';

/**
 * Every list is newest first, at most PAGE_SIZE a page. `next_cursor` (the oldest uuid on a
 * full page) goes back as `?before=` for the next, older page; null ends the list. Uuids are
 * creation-ordered (src/platform/ids.ts), so `uuid < before` is exactly "older than".
 */
export const PAGE_SIZE = 50;

export interface Page<T> {
  rows: T[];
  nextCursor: string | null;
}

export interface ListQuery {
  /** A table name from the platform's own schema; never user input. */
  table: string;
  /** SQL conditions over named parameters; never user input. */
  where: string[];
  params: Record<string, SQLInputValue>;
  before: string | undefined;
}

export function listPage<T>(db: Database, query: ListQuery): Page<T> {
  const where = [...query.where];
  const params = { ...query.params };
  if (query.before !== undefined) {
    if (!isUuid(query.before)) throw new PlatformError('invalid_cursor', `"${query.before}" is not a cursor this list gave out; pass next_cursor back unchanged.`);
    where.push('uuid < :before');
    params.before = query.before;
  }
  const sql = `SELECT * FROM ${query.table}${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY uuid DESC LIMIT ${PAGE_SIZE + 1}`;
  const rows = db.prepare(sql).all(params) as T[];
  const more = rows.length > PAGE_SIZE;
  const page = more ? rows.slice(0, PAGE_SIZE) : rows;
  return { rows: page, nextCursor: more ? (page[page.length - 1] as { uuid: string }).uuid : null };
}

/** A `?name=<uuid>` filter: absent is undefined, anything but a uuid is invalid_filter. */
export function uuidFilter(name: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!isUuid(value)) throw new PlatformError('invalid_filter', `The ${name} filter must be a uuid, not "${value}".`);
  return value;
}

export function choiceFilter<T extends string>(name: string, value: string | undefined, choices: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (!(choices as readonly string[]).includes(value)) {
    throw new PlatformError('invalid_filter', `The ${name} filter must be one of ${choices.join(', ')}, not "${value}".`);
  }
  return value as T;
}
