// `npm run build` (and `npm pack`, through prepack): the package as npm ships it, in dist/.
//
//   dist/<layer>/…      the library: tsc's output, one .js and .d.ts per source module, with the
//                       data files the code reads beside it (default prompts, the platform's page)
//   dist/cli/           the CLI: the same sources bundled by esbuild into code-split chunks, so a
//                       replayed run loads ~60 files instead of ~280 modules (an `acx wake`
//                       runs once per event, so its start-up is paid on every message;
//                       bench/replay-startup.ts measures both). bin/acx.js runs it.
//
// The bundle keeps every file path the code derives from import.meta.url: in each source module,
// import.meta.url is rewritten to the URL of that module's tsc output, so a data file, a sibling
// script spawned as its own process (the MCP stdio bridge, the sandbox launcher) or the package
// root is found exactly where the library finds it.
import { execFileSync } from 'node:child_process';
import { cpSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { build, type Plugin } from 'esbuild';

const ROOT = join(import.meta.dirname, '..');
const SRC = join(ROOT, 'src');
const DIST = join(ROOT, 'dist');
const CLI_OUT = join(DIST, 'cli');

rmSync(DIST, { recursive: true, force: true });
execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json')], { stdio: 'inherit' });
cpSync(join(SRC, 'app/defaults'), join(DIST, 'app/defaults'), { recursive: true });
cpSync(join(SRC, 'platform/web'), join(DIST, 'platform/web'), { recursive: true });

/** import.meta.url of src/a/b.ts, inside a chunk in dist/cli/, becomes the URL of dist/a/b.js. */
const moduleUrlsOfTscOutput: Plugin = {
  name: 'acx-module-urls',
  setup(builder) {
    builder.onLoad({ filter: /\.ts$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      const fromSrc = relative(SRC, args.path);
      if (fromSrc.startsWith('..')) return undefined;
      // A bare specifier (import.meta.resolve('html-to-text')) resolves alike from dist/cli/.
      const other = /import\.meta\.(dirname|filename|resolve\(\s*['"`]\.)/.exec(source);
      if (other) {
        return { errors: [{ text: `src/${fromSrc} uses import.meta.${other[1]}…; derive its paths from import.meta.url (new URL('…', import.meta.url)) so the CLI bundle keeps them` }] };
      }
      const tscOutput = `../${fromSrc.replace(/\.ts$/, '.js').split('\\').join('/')}`;
      return { contents: source.replaceAll('import.meta.url', `new URL(${JSON.stringify(tscOutput)}, import.meta.url).href`), loader: 'ts' };
    });
  },
};

/**
 * zod exports every one of its ~75 error-message locales in a namespace (`z.locales`), so a bundle
 * keeps them all (a third of zod's code), parsed on every start. The CLI speaks English and never
 * selects a locale: its bundle keeps zod's English one only. (The library, dist/<layer>/, imports
 * zod itself, locales and all.)
 */
const englishZodLocaleOnly: Plugin = {
  name: 'acx-zod-english-only',
  setup(builder) {
    builder.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]node_modules[\\/]zod[\\/]/.test(args.importer) ? { path: join(args.resolveDir, '../locales/index.js'), namespace: 'acx-zod-locales' } : undefined,
    );
    builder.onLoad({ filter: /.*/, namespace: 'acx-zod-locales' }, (args) => ({
      contents: "export { default as en } from './en.js';",
      resolveDir: dirname(args.path),
      loader: 'js',
    }));
  },
};

/**
 * src/model/ai-calls.ts gets a copy of 'ai' of its own, and that copy one of the gateway provider.
 * A bundler keeps each module's code in one chunk, and 'ai' (like '@ai-sdk/gateway') is one
 * module: with one copy, the SDK's generateText, media and embedding calls, and the gateway
 * provider and OIDC client they resolve models through, would load with every command, since the
 * engine's own imports from 'ai' (and the SDK's retries, from the gateway) live in those same
 * modules. The copies load only with what imports ai-calls.ts (media tools, embeddings, uploads,
 * `acx eval`'s judge). Two copies of the SDK in one process share its global settings (kept on
 * globalThis) and recognise each other's errors (their `isInstance` markers are registered symbols).
 */
const aiCallsOwnCopy: Plugin = {
  name: 'acx-ai-calls-copy',
  setup(builder) {
    const aiCalls = join(SRC, 'model/ai-calls.ts');
    const namespace = 'acx-ai-calls';
    builder.onResolve({ filter: /^(ai|@ai-sdk\/gateway)$/ }, async (args) => {
      const copied = args.path === 'ai' ? args.importer === aiCalls : args.namespace === namespace;
      if (!copied || args.pluginData === namespace) return undefined;
      const resolved = await builder.resolve(args.path, { kind: args.kind, importer: args.importer, resolveDir: args.resolveDir, pluginData: namespace });
      if (resolved.errors.length > 0) return { errors: resolved.errors };
      return { path: resolved.path, namespace };
    });
    builder.onLoad({ filter: /.*/, namespace }, (args) => ({ contents: readFileSync(args.path, 'utf8'), resolveDir: dirname(args.path), loader: 'js' }));
  },
};

const result = await build({
  absWorkingDir: ROOT,
  entryPoints: { main: join(SRC, 'frontends/cli/main.ts') },
  outdir: CLI_OUT,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22.13',
  // CommonJS dependencies require Node's built-ins; an ES module has no `require` of its own.
  // Made on a chunk's first require, not as it loads: createRequire costs ~0.1 ms, and a replayed
  // run loads ~75 chunks, few of which require anything.
  banner: {
    js: "import { createRequire as __acxCreateRequire } from 'node:module';\nvar __acxRequire;\nfunction require(id) { return (__acxRequire ??= __acxCreateRequire(import.meta.url))(id); }",
  },
  // pg's optional native binding: pg loads it only when asked to, and it is not a dependency.
  external: ['pg-native'],
  plugins: [moduleUrlsOfTscOutput, englishZodLocaleOnly, aiCallsOwnCopy],
  sourcemap: 'linked',
  sourcesContent: false,
  legalComments: 'eof',
  metafile: true,
  logLevel: 'warning',
});
const outputs = Object.entries(result.metafile.outputs).filter(([file]) => file.endsWith('.js'));
const bytes = outputs.reduce((sum, [, output]) => sum + output.bytes, 0);
// On stderr: `npm pack --json` prints its JSON on stdout, after the build.
process.stderr.write(`dist/cli: the CLI in ${outputs.length} chunks, ${(bytes / 1024 / 1024).toFixed(1)} MB\n`);
