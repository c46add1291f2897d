/**
 * Whether a failed write failed because the platform's disk is full: SQLite's SQLITE_FULL
 * ("database or disk is full", node:sqlite's `errcode` 13) or the file system's ENOSPC (an asset
 * file). A full disk is the machine's passing state, not a fault in the request: the write is
 * refused whole (SQLite rolls the transaction back), and the same request succeeds once an
 * operator frees space.
 */
export function isStorageFull(error: unknown): boolean {
  const { errcode, code, message } = (error ?? {}) as { errcode?: unknown; code?: unknown; message?: unknown };
  return errcode === SQLITE_FULL || code === 'ENOSPC' || (typeof message === 'string' && /database or disk is full/i.test(message));
}

const SQLITE_FULL = 13;

/** How long a client is asked to wait before trying a refused write again (the Retry-After header). */
export const STORAGE_FULL_RETRY_SECONDS = 10;
