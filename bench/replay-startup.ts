/**
 * Whole-process wall time of one offline (replayed) `acx run` turn, against starting Node itself.
 * Run: `npx node bench/replay-startup.ts [runs=8] [--imports] [--no-profile]`.
 *
 * Three commands and an anchor, alternating (rotated each round), each in a fresh child process:
 *   anchor:   node -e 0
 *   version:  node bin/acx.js --version
 *   replay:   node bin/acx.js run examples/notes-keeper "<QUICKSTART_PROMPT from scripts/quickstart.ts>"
 *               --replay examples/notes-keeper/cassettes/quickstart.json --home <tmp> --config-home <tmp>
 *             (a new temporary home and config home for every run: a first run in a fresh place)
 *   wake:     node bin/acx.js wake examples/notes-keeper --session s --event e "<prompt>" ... against a
 *             home where that event was already answered (set up once, outside the timing): what a
 *             router's repeated delivery costs, with no model call
 * Each command runs from both builds of the CLI: [src] the checkout's TypeScript sources, [dist]
 * the bundle the published package runs (ACX_RUN_FROM=dist; built first with `npm run build`
 * when missing or older than src/). The goals are read on [dist].
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
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { QUICKSTART_AGENT, QUICKSTART_CASSETTE, QUICKSTART_PROMPT } from '../scripts/quickstart.ts';
import { ensureBundleBuilt } from './support/bundle.ts';
import { childCpuMs } from './support/child-cpu.ts';
import { mean, median, ms, printTimingTable, rotatedRounds, timeChild, type Timing } from './support/process-timing.ts';
import { summarize, type CpuProfile } from './support/cpu-profile.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const RUNS = Number(args[0] ?? 8);
const IMPORTS = process.argv.includes('--imports');
const PROFILE = !process.argv.includes('--no-profile');
const GOALS = { replay: 4, wake: 3, version: 3 };
const EXPECTED = 'release freeze';

/**
 * Each command runs from both builds of the CLI: the checkout's TypeScript sources (what `npx acx`
 * runs here) and the bundle the published package runs (dist/cli, `npm run build`, chosen with
 * ACX_RUN_FROM=dist). The goals are read on the bundle: it is what an installed acx starts.
 */
type Build = 'src' | 'dist';
type Command = 'version' | 'replay' | 'wake';
type Name = 'anchor' | `${Command}:${Build}`;
const LABELS: Record<Command, string> = { version: 'acx --version', replay: 'acx run (replayed turn)', wake: 'acx wake (answered event)' };
const BUILDS: Build[] = ['src', 'dist'];
const names: Name[] = ['anchor', ...BUILDS.flatMap((build) => (['version', 'replay', 'wake'] as const).map((command): Name => `${command}:${build}`))];
const label = (name: Name) => (name === 'anchor' ? 'node -e 0' : `${LABELS[name.split(':')[0] as Command]} [${name.split(':')[1]}]`);

ensureBundleBuilt(root);

/** The argv of one command; `home` is a fresh temporary directory for this run. */
function argvOf(name: Name, home: string): string[] {
  if (name === 'anchor') return ['-e', '0'];
  const [command, build] = name.split(':') as [Command, Build];
  if (command === 'version') return ['bin/acx.js', '--version'];
  if (command === 'replay') return ['bin/acx.js', 'run', ...replayedTurn(home)];
  return wakeArgv(answeredHomes[build]);
}
const envOf = (name: Name): NodeJS.ProcessEnv => ({ ...process.env, ACX_LOG_LEVEL: 'error', ACX_RUN_FROM: name.endsWith(':dist') ? 'dist' : 'src' });

// The wake row's home: the event is answered once here, before any timing, and every timed run
// delivers it again. The breaker's limit is raised so that the bench's own repeated deliveries
// (more than its default 10 a minute) never trip it: tripped, a wake would decline, not look up.
function wakeArgv(home: string): string[] {
  return ['bin/acx.js', 'wake', ...replayedTurn(home), '--session', 'bench', '--event', 'bench-event-1', '--no-pace', '--breaker-max', '100000'];
}

/** The quick start's agent, prompt and cassette, in a home and config home of its own. */
function replayedTurn(home: string): string[] {
  return [QUICKSTART_AGENT, QUICKSTART_PROMPT, '--replay', QUICKSTART_CASSETTE, '--home', join(home, 'home'), '--config-home', join(home, 'config')];
}

const answeredHomes = Object.fromEntries(BUILDS.map((build) => [build, mkdtempSync(join(tmpdir(), `acx-bench-wake-${build}-`))])) as Record<Build, string>;
process.on('exit', () => Object.values(answeredHomes).forEach((home) => rmSync(home, { recursive: true, force: true })));
for (const build of BUILDS) {
  const first = spawnSync(process.execPath, wakeArgv(answeredHomes[build]), { cwd: root, encoding: 'utf8', env: envOf(`wake:${build}`) });
  if (first.status !== 0 || !first.stdout.includes(EXPECTED)) {
    throw new Error(`the first wake [${build}] did not answer the event (exit ${first.status}): ${first.stderr.slice(0, 2000)}${first.stdout.slice(0, 500)}`);
  }
}

function runOnce(name: Name, extraNodeArgs: string[] = []): Timing {
  const home = mkdtempSync(join(tmpdir(), 'acx-bench-startup-'));
  try {
    let child!: SpawnSyncReturns<string>;
    const timing = timeChild(() => (child = spawnSync(process.execPath, [...extraNodeArgs, ...argvOf(name, home)], { cwd: root, encoding: 'utf8', env: envOf(name) })));
    if (child.status !== 0) {
      throw new Error(`${label(name)} exited ${child.status}: ${child.stderr.slice(0, 2000)}`);
    }
    if (name.startsWith('replay') && !child.stdout.includes(EXPECTED)) {
      throw new Error(`the replayed turn printed an unexpected reply: ${child.stdout.slice(0, 500)}`);
    }
    if (name.startsWith('wake') && child.stdout.trim() !== '') {
      throw new Error(`the repeated delivery was answered again: ${child.stdout.slice(0, 500)}`);
    }
    return timing;
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

const benchStart = performance.now();
const timings = rotatedRounds(names, RUNS, (name) => runOnce(name));
const walls = Object.fromEntries(names.map((name) => [name, timings[name].walls])) as Record<Name, number[]>;
const anchorWall = median(walls.anchor);
console.log(`Process start-up, ${RUNS} runs each, alternating (Node ${process.version}, ${process.execPath})`);
console.log('  [src]: the checkout\'s TypeScript sources; [dist]: the bundle an installed acx runs (ACX_RUN_FROM=dist)');
printTimingTable(names, timings, 'anchor', label);
for (const command of ['replay', 'wake', 'version'] as const) {
  const ratio = median(walls[`${command}:dist`]) / anchorWall;
  console.log(`  ${label(`${command}:dist`)} / node -e 0 = ${ratio.toFixed(1)}x wall, goal <= ${GOALS[command]}x: ${ratio <= GOALS[command] ? 'PASS' : 'FAIL'}`);
}
console.log(`  replay command: ACX_RUN_FROM=src|dist ${process.execPath} ${argvOf('replay:dist', '<tmp>').map((a) => (a.includes(' ') ? JSON.stringify(a) : a)).join(' ')}`);

// ---- where the replayed run's start-up goes ------------------------------------------------------
if (PROFILE) {
  const dir = mkdtempSync(join(tmpdir(), 'acx-bench-startup-prof-'));
  runOnce('replay:src', ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-interval=250']);
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
    console.log(`\nCPU profile of one replayed run from the sources (${summary.totalMs.toFixed(0)} ms sampled), bottom-up by area:`);
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
