import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT, tempDir } from './cli.ts';

const TRACER = pathToFileURL(join(ROOT, 'test/support/module-trace.mjs')).href;

/** Where one acx process lists the modules it loads (module-trace.mjs), and reading that list. */
export interface ModuleTrace {
  /** The child's environment additions that turn the trace on. */
  env: { NODE_OPTIONS: string; ACX_TEST_MODULE_TRACE: string };
  /** Every line in order, with the "first stdout write" mark. */
  lines(): string[];
  /** Each loaded module once. */
  modules(): string[];
}

export function moduleTrace(): ModuleTrace {
  const file = join(tempDir('acx-trace-'), 'modules.txt');
  const lines = () => readFileSync(file, 'utf8').split('\n');
  return {
    env: { NODE_OPTIONS: `--import=${TRACER}`, ACX_TEST_MODULE_TRACE: file },
    lines,
    modules: () => [...new Set(lines().filter(Boolean))],
  };
}
