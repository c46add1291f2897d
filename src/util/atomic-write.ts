import { nodeCrypto } from './node-crypto.ts';
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/** Creates `path` (it must not exist), writes and fsyncs it. */
export function writeFileExclusive(path: string, content: string | Uint8Array, mode = 0o644): void {
  const fd = openSync(path, 'wx', mode);
  try {
    if (typeof content === 'string') writeSync(fd, content);
    else writeSync(fd, content);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes a file through a temp file in the same directory and a rename, so readers see the old
 * content or the new, never half — and a crash leaves no partial file behind.
 */
export function writeFileAtomic(path: string, content: string | Uint8Array, mode = 0o644): void {
  mkdirSync(dirname(path), { recursive: true });
  const temp = `${path}.tmp-${process.pid}-${nodeCrypto().randomBytes(6).toString('hex')}`;
  writeFileExclusive(temp, content, mode);
  try {
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}
