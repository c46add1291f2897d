import { spawnSync } from 'node:child_process';
import { type Dirent, existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Builds the bundle an installed acx runs (dist/, `npm run build`) when it is missing or older
 * than any file under src/, so a bench that starts it never measures a stale build.
 */
export function ensureBundleBuilt(root: string): void {
  const bundle = join(root, 'dist/cli/main.js');
  const built = existsSync(bundle) ? statSync(bundle).mtimeMs : 0;
  const stale = (readdirSync(join(root, 'src'), { recursive: true, withFileTypes: true }) as Dirent[]).some(
    (entry) => entry.isFile() && statSync(join(entry.parentPath, entry.name)).mtimeMs > built,
  );
  if (!stale) return;
  console.log('dist/cli is missing or older than src/: npm run build ...');
  const build = spawnSync('npm', ['run', 'build'], { cwd: root, encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`npm run build failed: ${build.stderr.slice(-2000)}`);
}
