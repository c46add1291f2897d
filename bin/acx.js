#!/usr/bin/env node
// node:sqlite still prints an ExperimentalWarning on every start; it is noise for CLI users.
const emitWarning = process.emitWarning;
process.emitWarning = function (warning, ...rest) {
  const type = typeof rest[0] === 'string' ? rest[0] : rest[0]?.type;
  if (type === 'ExperimentalWarning' && /SQLite|Type Stripping/i.test(String(warning))) return;
  return emitWarning.call(process, warning, ...rest);
};
// A checkout runs its TypeScript sources directly; the published package runs them built and
// bundled (dist/cli, from `npm run build`: Node does not strip types inside node_modules, and one
// file per chunk starts faster than ~280 modules). ACX_RUN_FROM=dist runs a checkout's bundle.
const { existsSync, readFileSync } = await import('node:fs');
const source = new URL('../src/frontends/cli/main.ts', import.meta.url);
const bundle = new URL('../dist/cli/main.js', import.meta.url);
const checkout = existsSync(source);
// The Node.js acx needs is package.json's "engines" (node:sqlite with FTS5); say so before anything
// loads. Only a checkout pins a newer Node of its own (a devDependency), so only there is npx the fix.
const engines = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).engines?.node ?? '>=22.13';
const [needMajor, needMinor] = (/(\d+)\.(\d+)/.exec(engines) ?? [0, '22', '13']).slice(1).map(Number);
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < needMajor || (major === needMajor && minor < needMinor)) {
  const fix = checkout
    ? 'In this checkout, run it through npm so the Node.js it pins is used: npx acx ...'
    : `Install Node.js ${needMajor}.${needMinor} or newer to use acx.`;
  process.stderr.write(`acx needs Node.js ${needMajor}.${needMinor} or newer (for node:sqlite); this is Node.js ${process.version}. ${fix}\n`);
  process.exit(1);
}
// Cache compiled modules between runs (keyed by content): start-up is mostly module loading.
const { enableCompileCache } = await import('node:module');
enableCompileCache?.();
const runFrom = process.env.ACX_RUN_FROM?.trim() || (checkout ? 'src' : 'dist');
const entry = { src: checkout ? source : undefined, dist: existsSync(bundle) ? bundle : undefined }[runFrom];
if (!entry) {
  const why = runFrom === 'dist' ? 'dist/cli/main.js is missing: run `npm run build` first'
    : runFrom === 'src' ? 'this installed package has no sources (src/); unset ACX_RUN_FROM'
    : 'give src (the TypeScript sources of a checkout) or dist (the built bundle)';
  process.stderr.write(`acx: ACX_RUN_FROM=${runFrom} cannot be used: ${why}.\n`);
  process.exit(1);
}
await import(entry.href);
