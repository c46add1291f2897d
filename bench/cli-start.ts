/**
 * What each way of starting acx costs before acx itself runs: `acx --version` (which answers before
 * loading any command) started as a user starts it from a checkout, from a project that installed
 * acx, and from a global install, against a bare start of the same Node in the same run.
 * Run: `npx node bench/cli-start.ts [runs=10]`.
 *
 *   anchor                      node -e 0 (the pinned Node)
 *   checkout: npx acx           npx acx --version, in the checkout (npm finds node_modules/.bin/acx)
 *   checkout: node bin/acx.js   node_modules/.bin/node bin/acx.js --version (the pinned Node, directly)
 *   checkout: npm link          acx --version, `acx` on PATH a link to bin/acx.js as `npm link` makes
 *                               it, with a Node.js >= 22.13 first on PATH
 *   project: npx acx            npx acx --version, in a project whose node_modules holds acx
 *   project: node_modules/.bin  ./node_modules/.bin/acx --version, in that project
 *   global: acx on PATH         acx --version, the installed bin on PATH (what `npm install -g` gives)
 *
 * The project is the package as an install lays it out: bin/, dist/ (built first when missing or
 * older than src/) and package.json under node_modules/acx, its dependencies resolved from above
 * it, node_modules/.bin/acx a link to its bin. Every child gets the caller's environment without
 * what `npx node` added (npm_* variables, node_modules/.bin on PATH), as a shell would run it.
 * Rounds rotate the order. Printed: median wall time and its ratio to the anchor, mean CPU time
 * (user + system of the whole process tree, Linux) and its ratio, and what each launcher adds to
 * starting bin/acx.js directly. Also whether `npm link` works with the `node` first on PATH: the
 * checkout's bin refuses a Node.js older than 22.13.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBundleBuilt } from './support/bundle.ts';
import { median, printTimingTable, rotatedRounds, timeChild, type Timing } from './support/process-timing.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const RUNS = Number(process.argv.slice(2).find((a) => !a.startsWith('--')) ?? 10);
const VERSION = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
const pinnedNode = join(root, 'node_modules/.bin/node');
const nodeDir = dirname(process.execPath);

// A shell's environment: no npm_* variables and no node_modules/.bin that `npx node` put on PATH.
const shellPath = (process.env.PATH ?? '').split(delimiter).filter((dir) => !dir.includes('node_modules/.bin') && !dir.includes('node-gyp-bin'));
const shellEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('npm_') && name !== 'PATH'));
const envWith = (...first: string[]): NodeJS.ProcessEnv => ({ ...shellEnv, PATH: [...first, ...shellPath].join(delimiter) });

ensureBundleBuilt(root);
const scratch = mkdtempSync(join(tmpdir(), 'acx-bench-cli-start-'));
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));

// `npm link` in the checkout: a bin directory whose acx is a link to bin/acx.js.
const linkBin = join(scratch, 'link-bin');
mkdirSync(linkBin);
symlinkSync(join(root, 'bin/acx.js'), join(linkBin, 'acx'));

// A project that installed acx: node_modules/acx as the package ships it, its dependencies above.
const project = join(scratch, 'project');
for (const part of ['bin', 'dist', 'package.json']) cpSync(join(root, part), join(project, 'node_modules/acx', part), { recursive: true });
mkdirSync(join(project, 'node_modules/.bin'));
symlinkSync('../acx/bin/acx.js', join(project, 'node_modules/.bin/acx'));
symlinkSync(join(root, 'node_modules'), join(scratch, 'node_modules'));
const projectBin = join(project, 'node_modules/.bin');

interface Way {
  label: string;
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
}

const WAYS = {
  anchor: { label: 'node -e 0', command: pinnedNode, args: ['-e', '0'], cwd: root, env: envWith() },
  checkoutNpx: { label: 'checkout: npx acx', command: 'npx', args: ['acx', '--version'], cwd: root, env: envWith() },
  checkoutDirect: { label: 'checkout: node bin/acx.js', command: pinnedNode, args: ['bin/acx.js', '--version'], cwd: root, env: envWith() },
  checkoutLink: { label: 'checkout: npm link (acx)', command: 'acx', args: ['--version'], cwd: scratch, env: envWith(linkBin, nodeDir) },
  projectNpx: { label: 'project: npx acx', command: 'npx', args: ['acx', '--version'], cwd: project, env: envWith(nodeDir) },
  projectBin: { label: 'project: node_modules/.bin/acx', command: './node_modules/.bin/acx', args: ['--version'], cwd: project, env: envWith(nodeDir) },
  globalBin: { label: 'global: acx on PATH', command: 'acx', args: ['--version'], cwd: scratch, env: envWith(projectBin, nodeDir) },
} satisfies Record<string, Way>;
type Name = keyof typeof WAYS;
const names = Object.keys(WAYS) as Name[];

function runOnce(way: Way): Timing {
  let child!: SpawnSyncReturns<string>;
  const timing = timeChild(() => (child = spawnSync(way.command, way.args, { cwd: way.cwd, env: way.env, encoding: 'utf8' })));
  const expected = way === WAYS.anchor ? '' : VERSION;
  if (child.status !== 0 || child.stdout.trim() !== expected) {
    throw new Error(`${way.label} exited ${child.status} printing "${child.stdout.trim()}": ${(child.error?.message ?? child.stderr).slice(0, 1000)}`);
  }
  return timing;
}

// Whether `npm link` alone is enough: with the node the shell finds first (no pinned Node ahead).
const linkedAlone = spawnSync('acx', ['--version'], { cwd: scratch, env: envWith(linkBin), encoding: 'utf8' });
const shellNode = spawnSync('node', ['--version'], { env: envWith(), encoding: 'utf8' }).stdout.trim() || 'none';

const timings = rotatedRounds(names, RUNS, (name) => runOnce(WAYS[name]));
const npmVersion = spawnSync('npm', ['--version'], { env: envWith(), encoding: 'utf8' }).stdout.trim();
console.log(`Starting acx --version, ${RUNS} runs each, rotated (Node ${process.version}; npm ${npmVersion} on the shell's node ${shellNode})`);
printTimingTable(names, timings, 'anchor', (name) => WAYS[name].label);
const added = (name: Name, over: Name) => `${(median(timings[name].walls) - median(timings[over].walls)).toFixed(0)} ms`;
console.log(`  npx adds, in the checkout: ${added('checkoutNpx', 'checkoutDirect')} over node bin/acx.js; in a project: ${added('projectNpx', 'projectBin')} over node_modules/.bin/acx`);
console.log(
  `  npm link with the shell's node (${shellNode}) first on PATH: ${linkedAlone.status === 0 ? 'works' : `refused (exit ${linkedAlone.status}: ${linkedAlone.stderr.trim().split('\n')[0]})`}`,
);
