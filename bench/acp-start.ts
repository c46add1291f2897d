/**
 * How long an editor waits for `acx acp` before it can talk to it: spawn → `initialize` answered,
 * against an ACP agent spawned the same way in the same run (the ratio is what counts).
 * Run: `npx node bench/acp-start.ts [rounds=10] [--claude-acp=PATH]`.
 *
 * Both are started as an editor starts an agent server: a fresh Node process (the pinned Node
 * running this script), stdio pipes, one `initialize` request with Zed's client capabilities, the
 * clock stopped when its answer arrives, the process ended. Rounds alternate the order.
 * - **acx**: `bin/acx.js acp examples/notes-keeper` with its own empty home.
 * - **anchor**: `claude-agent-acp` (`@agentclientprotocol/claude-agent-acp`), the ACP adapter
 *   editors run for Claude Code, when it is installed: --claude-acp=PATH (its package directory
 *   or dist/index.js), or found below the acx bootstrap cache. Without it the anchor is
 *   bench/support/minimal-acp-agent.ts (the SDK answering initialize, nothing else) and the
 *   output says so.
 * Ratio: acx median / anchor median.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ROUNDS = Number(process.argv.slice(2).find((a) => !a.startsWith('--')) ?? 10);
const CLAUDE_FLAG = process.argv.find((a) => a.startsWith('--claude-acp='))?.slice('--claude-acp='.length);
const CLAUDE_PACKAGE = path.join('node_modules', '@agentclientprotocol', 'claude-agent-acp');

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true, _meta: { terminal_output: true, terminal_auth: true } },
    clientInfo: { name: 'zed', title: 'Zed', version: '0.200.0' },
  },
});

/** The claude-agent-acp entry script: the flag, or an installation below the bootstrap cache. */
function findClaudeAcp(): string | undefined {
  const entry = (dir: string) => {
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { bin?: string | Record<string, string> };
    const bin = typeof pkg.bin === 'string' ? pkg.bin : pkg.bin?.['claude-agent-acp'];
    return bin ? path.join(dir, bin) : undefined;
  };
  if (CLAUDE_FLAG) return fs.statSync(CLAUDE_FLAG).isDirectory() ? entry(CLAUDE_FLAG) : CLAUDE_FLAG;
  const cache = process.env.ACX_CACHE_DIR ?? path.join(os.homedir(), '.cache', 'acx');
  const pending = [cache];
  // The bootstrap cache keeps each installation a few levels down; look no deeper than that.
  for (let depth = 0; depth < 5 && pending.length > 0; depth++) {
    for (const dir of pending.splice(0)) {
      if (fs.existsSync(path.join(dir, CLAUDE_PACKAGE, 'package.json'))) return entry(path.join(dir, CLAUDE_PACKAGE));
      let names: fs.Dirent[] = [];
      try {
        names = fs.readdirSync(dir, { withFileTypes: true });
      } catch {
        continue;
      }
      for (const name of names) if (name.isDirectory() && name.name !== 'node_modules') pending.push(path.join(dir, name.name));
    }
  }
  return undefined;
}

/** Spawns `node <args>`, sends initialize, and times the answer (ms); then ends the process. */
function timeStart(args: readonly string[], env: NodeJS.ProcessEnv, cwd: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [...args], { env, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    let answered: number | undefined;
    let out = '';
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      if (answered !== undefined) return;
      for (const line of out.split('\n')) {
        if (!line.trimStart().startsWith('{')) continue;
        const message = JSON.parse(line) as { id?: number; result?: unknown; error?: unknown };
        if (message.id !== 0) continue;
        if (message.error) return reject(new Error(`initialize failed: ${JSON.stringify(message.error)}`));
        answered = performance.now() - started;
        child.stdin.end();
        child.kill('SIGTERM');
        return;
      }
    });
    child.on('error', reject);
    child.on('exit', () => {
      if (answered === undefined) return reject(new Error(`${args[0]} exited before answering initialize:\n${err.slice(-2000)}`));
      resolve(answered);
    });
    child.stdin.write(`${INITIALIZE}\n`);
  });
}

/** The version in the package.json above an entry script. */
function versionOf(entry: string): string {
  for (let dir = path.dirname(entry); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) return (JSON.parse(fs.readFileSync(file, 'utf8')) as { version?: string }).version ?? '(unknown version)';
  }
  return '(unknown version)';
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'acx-bench-acp-start-'));
  const home = path.join(base, 'home');
  const project = path.join(base, 'project');
  fs.mkdirSync(home);
  fs.mkdirSync(project);
  const env = { PATH: process.env.PATH ?? '', HOME: home, OPENAI_API_KEY: 'sk-bench', ACX_MODEL: 'openai:test', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' };
  const acx = { name: 'acx acp', args: [path.join(ROOT, 'bin/acx.js'), 'acp', path.join(ROOT, 'examples/notes-keeper'), '--home', home, '--config-home', home] };
  const claude = findClaudeAcp();
  const anchor = claude
    ? { name: `claude-agent-acp ${versionOf(claude)}`, args: [claude] }
    : { name: 'minimal SDK ACP agent (bench/support/minimal-acp-agent.ts)', args: [path.join(ROOT, 'bench/support/minimal-acp-agent.ts')] };
  if (claude) console.log(`anchor: ${claude}\n`);
  else {
    console.log('claude-agent-acp is not installed here (no --claude-acp=PATH, none in the acx bootstrap cache):');
    console.log('the anchor is the smallest SDK-based ACP agent instead. Install it with `npm install @agentclientprotocol/claude-agent-acp`');
    console.log('in a scratch directory and pass --claude-acp=<dir>/node_modules/@agentclientprotocol/claude-agent-acp.\n');
  }
  try {
    // One start of each first, unmeasured: file-system caches warm for both.
    await timeStart(acx.args, env, project);
    await timeStart(anchor.args, env, project);
    const times = { acx: [] as number[], anchor: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (['acx', 'anchor'] as const) : (['anchor', 'acx'] as const);
      for (const which of order) {
        const target = which === 'acx' ? acx : anchor;
        times[which].push(await timeStart(target.args, env, project));
      }
    }
    const a = median(times.acx);
    const b = median(times.anchor);
    console.log(`spawn → initialize answered, median of ${ROUNDS} (Node ${process.version}):`);
    console.log(`  ${acx.name.padEnd(60)} ${a.toFixed(1)} ms  (min ${Math.min(...times.acx).toFixed(1)}, max ${Math.max(...times.acx).toFixed(1)})`);
    console.log(`  ${anchor.name.padEnd(60)} ${b.toFixed(1)} ms  (min ${Math.min(...times.anchor).toFixed(1)}, max ${Math.max(...times.anchor).toFixed(1)})`);
    console.log(`  ratio acx / anchor: ${(a / b).toFixed(2)}×`);
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
}

await main();
