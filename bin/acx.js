#!/usr/bin/env node
// node:sqlite still prints an ExperimentalWarning on every start; it is noise for CLI users.
const emitWarning = process.emitWarning;
process.emitWarning = function (warning, ...rest) {
  const type = typeof rest[0] === 'string' ? rest[0] : rest[0]?.type;
  if (type === 'ExperimentalWarning' && /SQLite|Type Stripping/i.test(String(warning))) return;
  return emitWarning.call(process, warning, ...rest);
};
const major = Number(process.versions.node.split('.')[0]);
if (major < 22) {
  process.stderr.write(
    `acx needs Node.js >= 22 (this is ${process.version}). Run it through npm so the pinned Node is used: npx acx ...\n`,
  );
  process.exit(1);
}
// Cache compiled modules between runs (keyed by content): start-up is mostly module loading.
const { enableCompileCache } = await import('node:module');
enableCompileCache?.();
// A checkout runs its TypeScript sources directly; the published package ships them built (Node
// does not strip types inside node_modules).
const { existsSync } = await import('node:fs');
const source = new URL('../src/cli/main.ts', import.meta.url);
await import(existsSync(source) ? source.href : new URL('../dist/cli/main.js', import.meta.url).href);
