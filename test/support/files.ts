import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Every file under `dir` whose raw bytes hold `text` (SQLite databases, their -wal and -shm
 * files, logs): what a person grepping the state directory for a leaked secret would find.
 */
export function filesHolding(dir: string, text: string): string[] {
  const needle = Buffer.from(text);
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((path) => {
    const full = join(dir, path);
    return statSync(full).isFile() && readFileSync(full).includes(needle);
  });
}
