// The layer rule of ARCHITECTURE.md as a check: which relative imports of a src/ folder reach
// outside the folders it may import from.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './cli.ts';

/** `file → specifier` for each relative import in `src/<folder>` that lands outside `src/<allowed>/`. */
export function importsOutside(folder: string, allowed: readonly string[]): string[] {
  const root = join(ROOT, 'src', folder);
  const inside = new RegExp(`^src/(${[folder, ...allowed].join('|')})/`);
  const outside: string[] = [];
  for (const file of readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'))) {
    for (const [, spec] of readFileSync(join(root, file), 'utf8').matchAll(/(?:from|import) '(\.[^']+)'/g)) {
      if (!inside.test(join('src', folder, file, '..', spec!))) outside.push(`${file} → ${spec}`);
    }
  }
  return outside;
}
