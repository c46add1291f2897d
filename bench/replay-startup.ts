/**
 * Whole-process wall time of one offline (replayed) `acx run` turn, against starting Node itself.
 * Run: `npx node bench/replay-startup.ts [runs=8] [--imports] [--no-profile]`.
 *
 * Four commands, alternating (rotated each round), each in a fresh child process:
 *   anchor:   node -e 0
 *   version:  node bin/acx.js --version
 *   replay:   node bin/acx.js run examples/notes-keeper "<QUICKSTART_PROMPT from scripts/quickstart.ts>"
 *               --replay examples/notes-keeper/cassettes/quickstart.json --home <tmp> --config-home <tmp>
 *             (a new temporary home and config home for every run: a first run in a fresh place)
 *   wake:     node bin/acx.js wake examples/notes-keeper --session s --event e "<prompt>" ... against a
 *             home where that event was already answered (set up once, outside the timing): what a
 *             router's repeated delivery costs, with no model call
 * Prints median wall times and the ratios to the anchor, and the mean CPU time (user + system)
 * of each command from the kernel's child accounting (Linux), which other load on the machine
 * disturbs far less than wall time. Goals printed as PASS/FAIL (no build fails on them): a replayed
 * turn within 4x a bare Node start, an already-answered wake within 3x, `--version` within 3x.
 *
 * Then, for finding where start-up goes: a CPU profile of one replayed run (`--cpu-prof`),
 * summarised bottom-up by package (module compile/type-stripping shows as V8/native and node
 * internals), unless --no-profile; and with --imports, the extra CPU time of importing each
 * heavy module on its own in a fresh process.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { QUICKSTART_AGENT, QUICKSTART_CASSETTE, QUICKSTART_PROMPT } from '../scripts/quickstart.ts';
import { childCpuMs } from './support/child-cpu.ts';
import { summarize, type CpuProfile } from './support/cpu-profile.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const RUNS = Number(args[0] ?? 8);
const IMPORTS = process.argv.includes('--imports');
const PROFILE = !process.argv.includes('--no-profile');
const GOALS = { replay: 4, wake: 3, version: 3 };

const EXPECTED = 'release freeze';

type Name = 'anchor' | 'version' | 'replay' | 'wake';
const commands: Record<Name, { label: string; argv: (home: string) => string[] }> = {
  anchor: { label: 'node -e 0', argv: () => ['-e', '0'] },
  version: { label: 'acx --version', argv: () => ['bin/acx.js', '--version'] },
  replay: {
    label: 'acx run (replayed turn)',
    argv: (home) => ['bin/acx.js', 'run', ...replayedTurn(home)],
  },
  wake: {
    label: 'acx wake (answered event)',
    argv: () => wakeArgv(answeredHome),
  },
};

// The wake row's home: the event is answered once here, before any timing, and every timed run
// delivers it again.
function wakeArgv(home: string): string[] {
  return ['bin/acx.js', 'wake', ...replayedTurn(home), '--session', 'bench', '--event', 'bench-event-1', '--no-pace'];
}

/** The quick start's agent, prompt and cassette, in a home and config home of its own. */
function replayedTurn(home: string): string[] {
  return [QUICKSTART_AGENT, QUICKSTART_PROMPT, '--replay', QUICKSTART_CASSETTE, '--home', join(home, 'home'), '--config-home', join(home, 'config')];
}
const answeredHome = mkdtempSync(join(tmpdir(), 'acx-bench-wake-'));
process.on('exit', () => rmSync(answeredHome, { recursive: true, force: true }));
{
  const first = spawnSync(process.execPath, wakeArgv(answeredHome), { cwd: root, encoding: 'utf8', env: { ...process.env, ACX_LOG_LEVEL: 'error' } });
  if (first.status !== 0 || !first.stdout.includes(EXPECTED)) {
    throw new Error(`the first wake did not answer the event (exit ${first.status}): ${first.stderr.slice(0, 2000)}${first.stdout.slice(0, 500)}`);
  }
}

function runOnce(name: Name, extraNodeArgs: string[] = []): { wall: number; cpu: number | undefined } {
  const home = mkdtempSync(join(tmpdir(), 'acx-bench-startup-'));
  try {
    const cpu0 = childCpuMs();
    const start = performance.now();
    const child = spawnSync(process.execPath, [...extraNodeArgs, ...commands[name].argv(home)], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, ACX_LOG_LEVEL: 'error' },
    });
    const wall = performance.now() - start;
    const cpu1 = childCpuMs();
    if (child.status !== 0) {
      throw new Error(`${commands[name].label} exited ${child.status}: ${child.stderr.slice(0, 2000)}`);
    }
    if (name === 'replay' && !child.stdout.includes(EXPECTED)) {
      throw new Error(`the replayed turn printed an unexpected reply: ${child.stdout.slice(0, 500)}`);
    }
    if (name === 'wake' && child.stdout.trim() !== '') {
      throw new Error(`the repeated delivery was answered again: ${child.stdout.slice(0, 500)}`);
    }
    return { wall, cpu: cpu0 === undefined || cpu1 === undefined ? undefined : cpu1 - cpu0 };
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const ms = (x: number) => `${x.toFixed(0).padStart(6)} ms`;

const benchStart = performance.now();
const names: Name[] = ['anchor', 'version', 'replay', 'wake'];
for (const name of names) runOnce(name); // warm the file cache and the disk
const walls: Record<Name, number[]> = { anchor: [], version: [], replay: [], wake: [] };
const cpus: Record<Name, number[]> = { anchor: [], version: [], replay: [], wake: [] };
for (let round = 0; round < RUNS; round++) {
  for (let k = 0; k < names.length; k++) {
    const name = names[(round + k) % names.length]!;
    const { wall, cpu } = runOnce(name);
    walls[name].push(wall);
    if (cpu !== undefined) cpus[name].push(cpu);
  }
}

const anchorWall = median(walls.anchor);
const anchorCpu = cpus.anchor.length ? mean(cpus.anchor) : undefined;
console.log(`Process start-up, ${RUNS} runs each, alternating (Node ${process.version}, ${process.execPath})`);
console.log('                               wall (median)   ratio      CPU (mean)   ratio   wall min..max');
for (const name of names) {
  const wall = median(walls[name]);
  const cpu = cpus[name].length ? mean(cpus[name]) : undefined;
  const cpuText = cpu === undefined || anchorCpu === undefined ? '        n/a        ' : `${ms(cpu)}   ${(cpu / anchorCpu).toFixed(1).padStart(5)}x`;
  console.log(
    `  ${commands[name].label.padEnd(26)} ${ms(wall)}    ${(wall / anchorWall).toFixed(1).padStart(5)}x   ${cpuText}   ` +
      `${Math.min(...walls[name]).toFixed(0)}..${Math.max(...walls[name]).toFixed(0)} ms`,
  );
}
for (const name of ['replay', 'wake', 'version'] as const) {
  const ratio = median(walls[name]) / anchorWall;
  console.log(`  ${commands[name].label} / node -e 0 = ${ratio.toFixed(1)}x wall, goal <= ${GOALS[name]}x: ${ratio <= GOALS[name] ? 'PASS' : 'FAIL'}`);
}
console.log(`  replay command: ${process.execPath} ${commands.replay.argv('<tmp>').map((a) => (a.includes(' ') ? JSON.stringify(a) : a)).join(' ')}`);

// ---- where the replayed run's start-up goes ------------------------------------------------------
if (PROFILE) {
  const dir = mkdtempSync(join(tmpdir(), 'acx-bench-startup-prof-'));
  runOnce('replay', ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-interval=250']);
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (file) {
    const cpu = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
    const area = (url: string): string | undefined => {
      if (!url) return undefined;
      if (url.includes('/node_modules/')) return `package ${/node_modules\/((@[^/]+\/)?[^/]+)/.exec(url)![1]}`;
      if (url.includes('/src/')) return `acx src/${url.split('/src/')[1]!.split('/')[0]}`;
      if (url.startsWith('node:internal/modules') || url.includes('amaro')) return 'node: module loading + type stripping';
      return undefined;
    };
    const summary = summarize(cpu, (frame) => area(frame.url), 12);
    console.log(`\nCPU profile of one replayed run (${summary.totalMs.toFixed(0)} ms sampled), bottom-up by area:`);
    for (const { name, ms: t } of summary.categories.slice(0, 16)) {
      console.log(`  ${name.padEnd(44)} ${ms(t)}  ${((t / summary.totalMs) * 100).toFixed(1).padStart(5)}%`);
    }
    console.log('  hottest functions (self time):');
    for (const { name, ms: t } of summary.hot) console.log(`    ${ms(t)}  ${name}`);
    console.log(`  profile kept at ${join(dir, file)}`);
  }
}

// ---- what importing each heavy module costs on its own -----------------------------------------
if (IMPORTS) {
  const specs = [
    'ai',
    'zod',
    'ajv/dist/2020.js',
    'yaml',
    'commander',
    'html-to-text',
    '@modelcontextprotocol/sdk/client/index.js',
    '@modelcontextprotocol/sdk/server/mcp.js',
    './src/engine/engine.ts',
    './src/mcp/client.ts',
    './src/tools/builtin/web-fetch.ts',
    './src/app/prepare.ts',
    './src/frontends/cli/commands/run.ts',
  ];
  const cpuOf = (code: string) => {
    const before = childCpuMs() ?? 0;
    const child = spawnSync(process.execPath, ['--no-warnings', '--input-type=module', '-e', code], { cwd: root });
    if (child.status !== 0) throw new Error(`${code}: ${child.stderr.toString().slice(0, 500)}`);
    return (childCpuMs() ?? 0) - before;
  };
  const repeat = Math.max(4, Math.ceil(RUNS / 2));
  const meanCpu = (code: string) => mean(Array.from({ length: repeat }, () => cpuOf(code)));
  const base = meanCpu('0');
  console.log(`\nCPU cost of importing each module alone in a fresh process (mean of ${repeat}, minus node -e 0 = ${base.toFixed(0)} ms):`);
  for (const spec of specs) console.log(`  ${ms(meanCpu(`await import(${JSON.stringify(spec)})`) - base)}  ${spec}`);
}
console.log(`\n(total bench time ${((performance.now() - benchStart) / 1000).toFixed(1)} s)`);
