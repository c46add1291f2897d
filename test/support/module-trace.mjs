// Preloaded with `node --import` to list every module a process loads: each resolved URL is
// appended to the file named by ACX_TEST_MODULE_TRACE. Used to check what a command does NOT load.
// The line "first stdout write" marks when the process first wrote to stdout (an answer sent):
// what comes before it was loaded to give that answer. At exit, Node's own internal modules the
// process loaded follow as "node-internal:<id>" lines (undici, behind fetch and Headers, is one).
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
  const write = process.stdout.write;
  let marked = false;
  process.stdout.write = function (...args) {
    if (!marked) appendFileSync(out, 'first stdout write\n');
    marked = true;
    return write.apply(this, args);
  };
  process.on('exit', () => {
    const internal = process.moduleLoadList.filter((entry) => entry.startsWith('NativeModule ')).map((entry) => `node-internal:${entry.slice('NativeModule '.length)}`);
    appendFileSync(out, `${internal.join('\n')}\n`);
  });
}
