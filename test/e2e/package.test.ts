// The package as npm publishes it: `npm pack` (which builds dist/), unpacked into a project's
// node_modules, where Node refuses to strip TypeScript. The CLI must run, the library must
// import and run a turn, and its type declarations must type-check a consumer (and catch misuse);
// on a Node.js too old for it, both must say so; it ships its license and examples.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUICKSTART_PROMPT } from '../../scripts/quickstart.ts';
import { moduleTrace } from '../support/module-trace.ts';
import { chatModel } from '../support/chat-app/start.ts';
import { type ModelServer, startModelServer } from '../support/model-server.ts';
import { scaled } from '../support/time-scale.ts';

const ROOT = join(import.meta.dirname, '../..');
let app: string;
let packed: string[];
let tarball: string;

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
  tarball = join(base, info!.filename);
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
    // What each chunk holds, from its source map: the AI SDK's gateway provider and OIDC client are
    // for its generateText and media calls (src/model/ai-calls.ts), which a turn does not make.
    const sources = chunks.flatMap((url) => (JSON.parse(readFileSync(`${fileURLToPath(url)}.map`, 'utf8')) as { sources: string[] }).sources);
    expect(sources.filter((source) => source.includes('/node_modules/ai/')).length, 'the source maps name the chunks\' sources').toBeGreaterThan(0);
    expect(sources.filter((source) => /\/node_modules\/(@ai-sdk\/gateway|@vercel\/oidc)\//.test(source))).toEqual([]);
    // zod's messages come in English only: its other locales are left out of the bundle.
    const bundled = readdirSync(join(app, 'node_modules/acx/dist/cli')).filter((file) => file.endsWith('.js')).map((file) => readFileSync(join(app, 'node_modules/acx/dist/cli', file), 'utf8'));
    expect(bundled.some((code) => code.includes('Invalid input: expected')), "zod's English locale").toBe(true);
    expect(bundled.filter((code) => code.includes('ltige Eingabe')), "zod's German locale").toEqual([]);
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
    expect(subpaths).toEqual(['.', './acp', './cartridge', './channel', './contract', './eval', './mcp', './memory', './wake']);
    const named: Record<string, string[]> = {
      acx: ['HarnessAgent', 'createEngineHarness', 'loadAgent', 'tool', 'AcxError'],
      'acx/acp': ['createACP', 'createClaudeCodeACP', 'createCodexACP', 'createGeminiCliACP', 'createOpenCodeACP', 'createCursorACP', 'createGrokBuildACP', 'createAcpServer', 'serveAcp'],
      'acx/cartridge': ['Cartridge', 'buildCartridge', 'verifyCartridge', 'stripCartridge', 'inspectCartridge', 'generateSigningKey', 'loadTrustRegistry'],
      'acx/channel': ['BaseCradleClient', 'verifyWebhookSignature', 'createPlatformTools', 'createIdempotencyKey', 'NotFoundError'],
      'acx/contract': ['parseHarnessRequirements', 'negotiate', 'assertAccepted', 'UnsupportedHarnessError'],
      'acx/eval': ['runEval', 'compareReports', 'loadSuite', 'parseSuite', 'meetsPassRate'],
      'acx/mcp': ['createHostToolServer', 'serveStdio', 'serveHttp', 'connectMcpServers', 'loginMcpServer', 'logoutMcpServer', 'McpCredentialStore'],
      'acx/memory': ['openMemoryStore', 'createSqliteMemoryProvider', 'createMemoryTools'],
      'acx/wake': ['wake', 'openWakeStore', 'SqliteWakeStore', 'turnIdFor', 'createLogger'],
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
  // model key or coding agent) also run, in a project of the user's own: a file a block names must
  // resolve from the installed package (import.meta.resolve('acx/package.json')), not the checkout.
  it('every code block of README.md and docs/ type-checks against the package, and the runnable ones run', () => {
    const blocksDir = join(app, 'docs-blocks');
    mkdirSync(blocksDir, { recursive: true });
    writeFileSync(join(blocksDir, 'package.json'), JSON.stringify({ type: 'module' }));
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
    // acx/mcp and acx/wake each have a block that runs (issue 26 item 10).
    for (const subpath of ['acx/mcp', 'acx/wake']) expect(runnable.filter((block) => block.code.includes(`from '${subpath}'`)).map((block) => block.source)).not.toEqual([]);
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

// acx shares `ai` (and zod and the AI SDK's provider packages, whose types cross its API) with the
// app as peer dependencies. A fresh project installs the packed tarball from the registry's point
// of view (npm install, peers resolved by npm) with the lowest and the newest `ai` the range allows;
// against each, the chat app of docs/ui.md — its server and its useChat page — type-checks (one
// copy of `ai`: two make tsc reject the agent, TS2322 FlexibleSchema<any> … FlexibleSchema<never>)
// and its server answers a chat through an approval, a new message while one waits, and a reload.
describe('installed by npm with each end of its ai range: the chat app of docs/ui.md (e2e)', { timeout: scaled(600_000) }, () => {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { peerDependencies: Record<string, string>; devDependencies: Record<string, string> };
  let model: ModelServer;
  beforeAll(async () => {
    model = await startModelServer({ fallback: chatModel });
  });
  afterAll(() => model?.close());

  /** The lowest version a caret range allows, and the newest the registry has in it. */
  function ends(name: string): { lowest: string; newest: string } {
    const range = manifest.peerDependencies[name]!;
    expect(range, `${name}'s peer range is a caret range`).toMatch(/^\^\d+\.\d+\.\d+$/);
    const listed = JSON.parse(execFileSync('npm', ['view', `${name}@${range}`, 'version', '--json'], { encoding: 'utf8' })) as string | string[];
    return { lowest: range.slice(1), newest: [listed].flat().at(-1)! };
  }

  for (const end of ['lowest', 'newest'] as const) {
    it(`with the ${end} ai and zod the peer ranges allow`, async () => {
      const ai = ends('ai')[end];
      const zod = ends('zod')[end];
      const dir = mkdtempSync(join(tmpdir(), `acx-peers-${end}-`));
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'chat-app', private: true, type: 'module' }));
      const dev = manifest.devDependencies;
      const install = spawnSync(
        'npm',
        ['install', '--no-audit', '--no-fund', '--loglevel=error', tarball, `ai@${ai}`, `zod@${zod}`, ...['@ai-sdk/react', 'react', 'react-dom', '@types/react', '@types/node'].map((name) => `${name}@${dev[name]}`)],
        { cwd: dir, encoding: 'utf8' },
      );
      expect(install.status, install.stderr).toBe(0);
      const version = (name: string, from = dir) => (JSON.parse(readFileSync(join(from, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
      expect(version('ai')).toBe(ai);
      expect(version('zod')).toBe(zod);
      for (const shared of ['ai', 'zod', '@ai-sdk/provider', '@ai-sdk/provider-utils']) {
        expect(existsSync(join(dir, 'node_modules/acx/node_modules', shared)), `acx uses the app's ${shared}, no copy of its own`).toBe(false);
      }

      const blocks = namedBlocks('docs/ui.md');
      expect(Object.keys(blocks)).toEqual(['chat.ts', 'Chat.tsx']);
      for (const [file, code] of Object.entries(blocks)) writeFileSync(join(dir, file), code);
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2023', lib: ['ES2023', 'DOM', 'DOM.Iterable'], jsx: 'react-jsx', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] },
          files: Object.keys(blocks),
        }),
      );
      const check = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir], { cwd: dir, encoding: 'utf8' });
      expect(check.status, check.stdout + check.stderr).toBe(0);

      writeFileSync(join(dir, 'drive.ts'), CHAT_DRIVER);
      // Not spawnSync: the model server answers from this process, so its event loop must run.
      const run = await runNode(['drive.ts'], {
        cwd: dir,
        env: { PATH: process.env.PATH, HOME: dir, OPENAI_API_KEY: 'sk-package-test', OPENAI_BASE_URL: model.openaiBaseURL, ACX_LOG_LEVEL: 'warn' },
      });
      expect(run.status, run.stderr + run.stdout).toBe(0);
      expect(JSON.parse(run.stdout)).toEqual({
        asked: 'approval-requested',
        approved: ['output-available', 'deployed to prod', 'Done: deployed to prod'],
        movedOn: 'You said: hello',
        history: [
          ['user', [], 'please deploy'],
          ['assistant', ['output-available'], 'Done: deployed to prod'],
          ['user', [], 'please deploy again'],
          ['assistant', ['output-denied'], ''],
          ['user', [], 'hello'],
          ['assistant', [], 'You said: hello'],
        ],
        archived: 6,
      });
    });
  }
});

/** Runs node in a child process without blocking this one's event loop. */
function runNode(args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** Drives docs/ui.md's handlers as useChat would: the chat posted, the reply read with the AI SDK's own reader. */
const CHAT_DRIVER = `import { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema, type UIMessage } from 'ai';
import { archive, GET, POST } from './chat.ts';

async function post(id: string, messages: UIMessage[]): Promise<UIMessage> {
  const response = await POST(new Request('http://app.test/api/chat', { method: 'POST', body: JSON.stringify({ id, messages }) }));
  const chunks = parseJsonEventStream({ stream: response.body!, schema: uiMessageChunkSchema }).pipeThrough(
    new TransformStream({ transform(parsed, controller) { if (!parsed.success) throw parsed.error; controller.enqueue(parsed.value); } }),
  );
  const last = messages.at(-1)!;
  let message: UIMessage | undefined = last.role === 'assistant' ? structuredClone(last) : undefined;
  for await (const m of readUIMessageStream({ stream: chunks, ...(message ? { message } : {}), terminateOnError: true })) message = m;
  return message!;
}
const user = (id: string, text: string): UIMessage => ({ id, role: 'user', parts: [{ type: 'text', text }] });
const deploy = (m: UIMessage) => m.parts.find((p) => p.type === 'tool-deploy') as { state: string; output?: unknown } | undefined;
const text = (m: UIMessage) => m.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');

const ask = user('u1', 'please deploy');
const asked = await post('c1', [ask]);
const answer = { ...asked, parts: asked.parts.map((p) => ('approval' in p && p.state === 'approval-requested' ? { ...p, state: 'approval-responded', approval: { id: p.approval.id, approved: true } } : p)) } as UIMessage;
const approved = await post('c1', [ask, answer]);
const again = user('u2', 'please deploy again');
const askedAgain = await post('c1', [ask, approved, again]);
const movedOn = await post('c1', [ask, approved, again, askedAgain, user('u3', 'hello')]);
const history = (await (await GET(new Request('http://app.test/api/chat?id=c1'))).json()) as UIMessage[];
console.log(JSON.stringify({
  asked: deploy(asked)?.state,
  approved: [deploy(approved)?.state, deploy(approved)?.output, text(approved)],
  movedOn: text(movedOn),
  history: history.map((m) => [m.role, m.parts.filter((p) => p.type === 'tool-deploy').map((p) => (p as { state: string }).state), text(m)]),
  archived: archive.get('c1')?.length,
}));
`;

/** The blocks of a doc whose fence names a file (\`\`\`ts file=chat.ts): an app in several files. */
function namedBlocks(doc: string): Record<string, string> {
  const text = readFileSync(join(ROOT, doc), 'utf8');
  return Object.fromEntries([...text.matchAll(/^```(?:ts|tsx) file=(\S+)\n([\s\S]*?)^```$/gm)].map((match) => [match[1]!, match[2]!]));
}

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
  // The library's three-line start in README's "Which entry point" table (it needs a model key: compiled only).
  const row = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').find((line) => line.startsWith('| an agent inside your own TypeScript program |'));
  const start = [...(row?.split(' | ').at(-1) ?? '').matchAll(/`([^`]+)`/g)].map((span) => span[1]!);
  expect(start.length, 'README: the library row of the entry-point table').toBe(3);
  const blocks: DocBlock[] = [{ source: 'README.md entry-point table, library', file: 'README-md-entry-library.ts', code: `${start.join('\n')}\n`, compileOnly: true }];
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

