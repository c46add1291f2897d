// The package as npm publishes it: `npm pack` (which builds dist/), unpacked into a project's
// node_modules, where Node refuses to strip TypeScript. The CLI must run, the library must
// import and run a turn, and its type declarations must type-check a consumer (and catch misuse);
// on a Node.js too old for it, both must say so; it ships its license and examples.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { QUICKSTART_PROMPT } from '../../scripts/quickstart.ts';
import { moduleTrace } from '../support/module-trace.ts';
import { scaled } from '../support/time-scale.ts';

const ROOT = join(import.meta.dirname, '../..');
let app: string;
let packed: string[];

/** What `npm pack` reads: the package's files and what its prepack build needs. */
const PACKED_FROM = ['package.json', '.gitignore', 'README.md', 'LICENSE', 'bin', 'docs', 'examples', 'src', 'scripts', 'tsconfig.json', 'tsconfig.build.json'];

// Packed from a copy of the checkout, so the build (prepack) writes its dist/ there: the checkout
// is left as it was, and may be read-only (the tests run as an ordinary user too). A set-up that
// fails fails every test of the file (test/support/set-up-failures.ts); a slow one gets longer.
beforeAll(() => {
  const base = mkdtempSync(join(tmpdir(), 'acx-package-'));
  const checkout = join(base, 'checkout');
  for (const path of PACKED_FROM) cpSync(join(ROOT, path), join(checkout, path), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(checkout, 'node_modules'));
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', base], { cwd: checkout, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const [info] = JSON.parse(out.slice(out.indexOf('['))) as Array<{ filename: string; files: Array<{ path: string }> }>;
  packed = info!.files.map((file) => file.path);
  app = join(base, 'app');
  mkdirSync(join(app, 'node_modules'), { recursive: true });
  execFileSync('tar', ['-xzf', join(base, info!.filename), '-C', join(app, 'node_modules')]);
  renameSync(join(app, 'node_modules/package'), join(app, 'node_modules/acx'));
  // The package's own dependencies resolve from a node_modules above the project, as after an install.
  symlinkSync(join(ROOT, 'node_modules'), join(base, 'node_modules'));
}, scaled(300_000));

const node = (args: string[], cwd = app) => spawnSync(process.execPath, args, { cwd, encoding: 'utf8', env: { ...process.env, ACX_LOG_LEVEL: 'warn' } });

/** A Node.js older than the 22.13 acx needs, if this machine has one (Debian's nodejs package is 20). */
const OLD_NODE = ['/usr/bin/node', '/bin/node', '/usr/local/bin/node'].find((path) => {
  const version = spawnSync(path, ['--version'], { encoding: 'utf8' }).stdout?.trim().slice(1);
  if (!version) return false;
  const [major, minor] = version.split('.').map(Number) as [number, number];
  return major < 22 || (major === 22 && minor < 13);
});
const oldNodeVersion = OLD_NODE ? spawnSync(OLD_NODE, ['--version'], { encoding: 'utf8' }).stdout.trim() : '';

describe('the published package (e2e)', { timeout: scaled(120_000) }, () => {
  it('ships built JavaScript with declarations, the docs and the bin, and no TypeScript sources or tests', () => {
    expect(packed).toContain('dist/index.js');
    expect(packed).toContain('dist/index.d.ts');
    expect(packed).toContain('dist/app/defaults/prompts/system-prompt.md');
    expect(packed).toContain('bin/acx.js');
    expect(packed.filter((path) => path.endsWith('.ts') && !path.endsWith('.d.ts'))).toEqual([]);
    expect(packed.some((path) => path.startsWith('test/') || path.startsWith('src/'))).toBe(false);
    expect(packed).toContain('LICENSE');
    expect(packed).toContain('examples/notes-keeper/agent.json');
    expect(packed).toContain('examples/notes-keeper/cassettes/quickstart.json');
  });

  it('ships the Apache-2.0 license package.json names', () => {
    const license = readFileSync(join(app, 'node_modules/acx/LICENSE'), 'utf8');
    expect(license).toMatch(/^\s*Apache License\s+Version 2\.0, January 2004/);
    expect(JSON.parse(readFileSync(join(app, 'node_modules/acx/package.json'), 'utf8')).license).toBe('Apache-2.0');
  });

  it('its errors point at things the installed package has: the example agent and the layout doc', () => {
    const bin = join(app, 'node_modules/acx/bin/acx.js');
    const home = mkdtempSync(join(tmpdir(), 'acx-package-home-'));
    const run = node([bin, 'run', app, 'hi', '--model', 'openai:m', '--home', home, '--config-home', home]);
    expect(run.status).toBe(1);
    const hint = /→ Create one with `acx init .*`, or run the example agent at (\S+) \(the layout: (\S+)\)\.$/m.exec(run.stderr);
    expect(hint, run.stderr).not.toBeNull();
    expect(hint![1]).toBe(join(app, 'node_modules/acx/examples/notes-keeper'));
    expect(existsSync(join(hint![1]!, 'agent.json'))).toBe(true);
    expect(existsSync(hint![2]!)).toBe(true);
  });

  it.skipIf(!OLD_NODE)(
    OLD_NODE
      ? `on Node.js ${oldNodeVersion} (older than 22.13) the CLI and the library say exactly that`
      : 'on a Node.js older than 22.13 the CLI and the library say exactly that (skipped: this machine has no such Node.js)',
    () => {
    const message = `acx needs Node.js 22.13 or newer (for node:sqlite); this is Node.js ${oldNodeVersion}. Install Node.js 22.13 or newer to use acx.`;
    const cli = spawnSync(OLD_NODE!, [join(app, 'node_modules/acx/bin/acx.js'), 'run', 'default', 'hi'], { cwd: app, encoding: 'utf8' });
    expect(cli.status).toBe(1);
    expect(cli.stderr).toBe(`${message}\n`);
    const lib = spawnSync(OLD_NODE!, ['--input-type=module', '-e', "import('acx').then(() => console.log('imported'), (e) => { console.error(e.message); process.exit(1); })"], { cwd: app, encoding: 'utf8' });
    expect(lib.stdout).toBe('');
    expect(lib.stderr).toBe(`${message}\n`);
    expect(lib.status).toBe(1);
    },
  );

  it('its CLI runs from node_modules: --version and the offline quick start', () => {
    const bin = join(app, 'node_modules/acx/bin/acx.js');
    const version = node([bin, '--version']);
    expect(version.status, version.stderr).toBe(0);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    const home = mkdtempSync(join(tmpdir(), 'acx-package-home-'));
    const run = node([
      bin,
      'run',
      join(ROOT, 'examples/notes-keeper'),
      QUICKSTART_PROMPT,
      '--replay',
      join(ROOT, 'examples/notes-keeper/cassettes/quickstart.json'),
      '--home',
      home,
      '--config-home',
      home,
    ]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/Thursday 10 December/);
    expect(run.stderr, 'node:sqlite is experimental, and the CLI does not say so on every run').not.toContain('ExperimentalWarning');
    // The example the package ships runs from there too.
    const shipped = join(app, 'node_modules/acx/examples/notes-keeper');
    const fromPackage = node([bin, 'run', shipped, QUICKSTART_PROMPT, '--replay', join(shipped, 'cassettes/quickstart.json'), '--home', home, '--config-home', home]);
    expect(fromPackage.status, fromPackage.stderr).toBe(0);
    expect(fromPackage.stdout).toMatch(/Thursday 10 December/);
  });

  it('its CLI runs from the bundle in dist/cli: a replayed turn loads its chunks, not acx, zod and ai module by module', () => {
    const trace = moduleTrace();
    const home = mkdtempSync(join(tmpdir(), 'acx-package-home-'));
    const shipped = join(app, 'node_modules/acx/examples/notes-keeper');
    const run = spawnSync(
      process.execPath,
      [join(app, 'node_modules/acx/bin/acx.js'), 'run', shipped, QUICKSTART_PROMPT, '--replay', join(shipped, 'cassettes/quickstart.json'), '--home', home, '--config-home', home],
      { cwd: app, encoding: 'utf8', env: { ...process.env, ACX_LOG_LEVEL: 'warn', ...trace.env } },
    );
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/Thursday 10 December/);
    const loaded = trace.modules().filter((line) => line.startsWith('file://'));
    const dist = pathToFileURL(join(app, 'node_modules/acx/dist')).href;
    const chunks = loaded.filter((url) => url.startsWith(`${dist}/cli/`));
    expect(chunks.length).toBeGreaterThan(0);
    expect(chunks.length, 'a replayed turn from the sources loads ~280 modules').toBeLessThan(100);
    expect(loaded.filter((url) => url.startsWith(`${dist}/`) && !url.startsWith(`${dist}/cli/`)), 'modules of the unbundled build').toEqual([]);
    expect(loaded.filter((url) => /\/node_modules\/(zod|ai|commander)\//.test(url)), 'dependencies the bundle carries').toEqual([]);
  });

  it("its library imports as 'acx' and runs a turn with a tool on the native engine", () => {
    writeFileSync(
      join(app, 'main.mjs'),
      `import { HarnessAgent, createEngineHarness, tool } from 'acx';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
let calls = 0;
const model = {
  specificationVersion: 'v4', provider: 'local', modelId: 'scripted', supportedUrls: {},
  async doGenerate() {
    calls += 1;
    const usage = { inputTokens: { total: 10 }, outputTokens: { total: 2 } };
    return calls === 1
      ? { content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'add', input: '{"a":2,"b":3}' }], finishReason: { unified: 'tool-calls' }, usage, warnings: [] }
      : { content: [{ type: 'text', text: 'The sum is 5.' }], finishReason: { unified: 'stop' }, usage, warnings: [] };
  },
  async doStream() { throw new Error('not used'); },
};
const add = tool({
  name: 'add', description: 'Add two numbers',
  inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
  capabilityScopes: [], kind: 'read', effect: 'read-only',
  execute: ({ a, b }) => String(a + b),
});
const agent = new HarnessAgent({ harness: createEngineHarness({ model, home: mkdtempSync(join(tmpdir(), 'acx-lib-')) }), tools: [add] });
const result = await agent.generate({ prompt: 'What is 2 + 3?' });
console.log(JSON.stringify({ text: result.text, steps: result.stepCount, tools: result.toolResults.map((r) => r.output) }));
`,
    );
    const run = node(['main.mjs']);
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ text: 'The sum is 5.', steps: 2, tools: ['5'] });
  });

  it('its type declarations type-check a consumer and reject misuse', () => {
    writeFileSync(
      join(app, 'consumer.ts'),
      `import { HarnessAgent, createEngineHarness, type HarnessTurnResult } from 'acx';
import { createAgentUIStreamResponse, type UIMessage } from 'ai';
const agent = new HarnessAgent({ harness: createEngineHarness({ model: 'openai:gpt-5.4-mini' }), permissionMode: 'allow-reads' });
export async function ask(): Promise<string> {
  const result: HarnessTurnResult = await agent.generate({ prompt: 'hi', turnId: 'delivery-1' });
  return result.text;
}
// A HarnessAgent is an AI SDK Agent: the SDK's UI helper takes it as it is.
export async function chat(messages: UIMessage[], chatId: string): Promise<unknown> {
  return createAgentUIStreamResponse({ agent, uiMessages: messages, options: { sessionId: chatId } });
}
// @ts-expect-error an unknown permission mode is a type error
new HarnessAgent({ harness: createEngineHarness({ model: 'openai:x' }), permissionMode: 'yolo' });
`,
    );
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2023', strict: true, noEmit: true, skipLibCheck: true, types: [] },
        files: ['consumer.ts'],
      }),
    );
    const check = node([join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', app]);
    expect(check.status, check.stdout + check.stderr).toBe(0);
  });

  it('every subpath in package.json exports imports from the installed package and exports what its TSDoc names', () => {
    const exportsMap = JSON.parse(readFileSync(join(app, 'node_modules/acx/package.json'), 'utf8')).exports as Record<string, unknown>;
    const subpaths = Object.keys(exportsMap).filter((key) => key !== './package.json');
    expect(subpaths).toEqual(['.', './acp', './cartridge', './channel', './contract', './mcp', './memory', './wake']);
    const named: Record<string, string[]> = {
      acx: ['HarnessAgent', 'createEngineHarness', 'loadAgent', 'tool', 'AcxError'],
      'acx/acp': ['createACP', 'createClaudeCodeACP', 'createCodexACP', 'createGeminiCliACP', 'createOpenCodeACP', 'createCursorACP', 'createGrokBuildACP', 'createAcpServer', 'serveAcp'],
      'acx/cartridge': ['Cartridge', 'buildCartridge', 'verifyCartridge', 'stripCartridge', 'inspectCartridge', 'generateSigningKey', 'loadTrustRegistry'],
      'acx/channel': ['BaseCradleClient', 'verifyWebhookSignature', 'createPlatformTools', 'createIdempotencyKey', 'NotFoundError'],
      'acx/contract': ['parseHarnessRequirements', 'negotiate', 'assertAccepted', 'UnsupportedHarnessError'],
      'acx/mcp': ['createHostToolServer', 'serveStdio', 'serveHttp', 'connectMcpServers'],
      'acx/memory': ['openMemoryStore', 'createSqliteMemoryProvider', 'createMemoryTools'],
      'acx/wake': ['wake', 'openWakeStore', 'SqliteWakeStore', 'turnIdFor'],
    };
    expect(Object.keys(named).map((name) => (name === 'acx' ? '.' : `./${name.slice(4)}`))).toEqual(subpaths);
    const probe = `const named = ${JSON.stringify(named)};
const missing = [];
for (const [spec, names] of Object.entries(named)) {
  const module = await import(spec);
  for (const name of names) if (typeof module[name] !== 'function') missing.push(spec + ' ' + name);
}
console.log(JSON.stringify(missing));`;
    const run = node(['--input-type=module', '-e', probe]);
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual([]);
  });

  // Every TypeScript/JavaScript block of README.md and docs/*.md, against the installed package: all
  // type-check; those not marked `compile-only` in their fence (```ts compile-only: they need a real
  // model key or coding agent) also run, in a project whose examples/ is the package's own.
  it('every code block of README.md and docs/ type-checks against the package, and the runnable ones run', () => {
    const blocksDir = join(app, 'docs-blocks');
    mkdirSync(blocksDir, { recursive: true });
    writeFileSync(join(blocksDir, 'package.json'), JSON.stringify({ type: 'module' }));
    symlinkSync(join(app, 'node_modules/acx/examples'), join(blocksDir, 'examples'));
    const blocks = docCodeBlocks();
    expect(blocks.length).toBeGreaterThanOrEqual(5);
    for (const block of blocks) writeFileSync(join(blocksDir, block.file), block.code);
    writeFileSync(
      join(blocksDir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2023', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] },
        files: blocks.map((block) => block.file),
      }),
    );
    const check = node([join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', blocksDir], blocksDir);
    expect(check.status, `${check.stdout}${check.stderr}\n(blocks are written as ${blocks.map((b) => `${b.file} <- ${b.source}`).join(', ')})`).toBe(0);
    const runnable = blocks.filter((block) => !block.compileOnly);
    expect(runnable.length).toBeGreaterThanOrEqual(3);
    for (const block of runnable) {
      const home = mkdtempSync(join(tmpdir(), 'acx-docs-home-'));
      const run = spawnSync(process.execPath, [block.file], {
        cwd: blocksDir,
        encoding: 'utf8',
        env: { PATH: process.env.PATH, ACX_HOME: home, ACX_CONFIG_HOME: home, HOME: home, ACX_LOG_LEVEL: 'warn' },
        timeout: scaled(60_000),
      });
      expect(run.status, `${block.source} (${block.file}) exited ${run.status}:\n${run.stderr}${run.stdout}`).toBe(0);
      if (block.expect) expect(run.stdout, block.source).toContain(block.expect);
    }
  });
});

interface DocBlock {
  /** Where it is: `docs/acp.md block 1`. */
  source: string;
  file: string;
  code: string;
  compileOnly: boolean;
  /** Text its output must contain: a `// prints: …` line in the block. */
  expect?: string;
}

function docCodeBlocks(): DocBlock[] {
  const files = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const blocks: DocBlock[] = [];
  for (const file of files) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    let n = 0;
    for (const match of text.matchAll(/^```(ts|typescript|js|javascript|mjs)((?: [\w-]+)*)\n([\s\S]*?)^```$/gm)) {
      n += 1;
      const code = match[3]!;
      const expectLine = /\/\/ prints: (.+)$/m.exec(code);
      blocks.push({
        source: `${file} block ${n}`,
        file: `${file.replace(/[/.]/g, '-')}-${n}.ts`,
        code,
        compileOnly: match[2]!.split(' ').includes('compile-only'),
        ...(expectLine ? { expect: expectLine[1]!.trim() } : {}),
      });
    }
  }
  return blocks;
}

