// Preloaded with `node --import` to list every module a process loads: each resolved URL is
// appended to the file named by ACX_TEST_MODULE_TRACE. Used to check what a command does NOT load.
import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const out = process.env.ACX_TEST_MODULE_TRACE;
if (out) {
  registerHooks({
    resolve(specifier, context, next) {
      const resolved = next(specifier, context);
      appendFileSync(out, `${resolved.url}\n`);
      return resolved;
    },
  });
}
