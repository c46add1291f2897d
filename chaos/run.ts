// `npm run chaos -- --minutes N --seed S`: the fleet under continuous faults (see chaos/README.md).
// Starts the fleet, lets the humans post while faults are injected, stops the faults, lets the
// fleet drain, checks what must hold and writes the report (report.md, timeline.svg) next to the
// run's logs. Exit 0 on PASS, 1 on any lost, duplicated or stuck item, 2 on a usage error.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { effectCounts, integrityProblems, readPlatform, readQueue } from './checker.ts';
import { findFaketime } from './clock.ts';
import { smallDiskUnavailable } from '../test/support/small-disk.ts';
import { FAULT_KINDS, type FaultKind, scheduleFaults } from './faults.ts';
import { startChaosFleet } from './fleet.ts';
import { seededRandom } from './random.ts';
import { checksAsTestReport, summarize } from './report.ts';
import { startTraffic } from './traffic.ts';

/** The platform's small disk (the disk-full fault): room for a long run's database many times over. */
const SMALL_DISK_MB = 64;

const USAGE = `usage: npm run chaos -- [--minutes 15] [--seed N] [--rate 4] [--fault-every 10] [--faults all|none|kind,kind…]
                      [--workers 2] [--concurrency 2] [--timelines 2] [--poll 5] [--drain 180] [--context-tokens N] [--out DIR] [--json FILE]
faults: ${FAULT_KINDS.join(', ')}`;

function usage(problem: string): never {
  process.stderr.write(`chaos: ${problem}\n${USAGE}\n`);
  process.exit(2);
}

function numberOption(values: Record<string, unknown>, name: string, fallback: number, min: number): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min) usage(`--${name} must be a number ≥ ${min}, not "${String(raw)}"`);
  return value;
}

let parsed: ReturnType<typeof parseArgs<{ options: Record<string, { type: 'string' }>; strict: true }>>;
try {
  parsed = parseArgs({
    options: Object.fromEntries(['minutes', 'seed', 'rate', 'fault-every', 'faults', 'workers', 'concurrency', 'timelines', 'poll', 'drain', 'context-tokens', 'out', 'json'].map((name) => [name, { type: 'string' as const }])),
    strict: true,
  });
} catch (error) {
  usage((error as Error).message);
}
const values = parsed.values;
const minutes = numberOption(values, 'minutes', 15, 0.1);
const seed = numberOption(values, 'seed', Math.floor(Math.random() * 1e9), 0);
const rate = numberOption(values, 'rate', 4, 0.1);
const faultEverySeconds = numberOption(values, 'fault-every', 10, 1);
const drainSeconds = numberOption(values, 'drain', 180, 10);
const faultsFlag = (values.faults as string | undefined) ?? 'all';
const kinds: FaultKind[] =
  faultsFlag === 'all' ? [...FAULT_KINDS] : faultsFlag === 'none' ? [] : faultsFlag.split(',').map((kind) => kind.trim() as FaultKind);
for (const kind of kinds) if (!FAULT_KINDS.includes(kind)) usage(`unknown fault "${kind}"`);
const faketime = findFaketime();
const leftOut: string[] = [];
if (!faketime && kinds.includes('clock-jump')) {
  if (faultsFlag !== 'all') usage('clock-jump needs libfaketime: install it (Debian: apt-get install faketime) or leave that fault out');
  kinds.splice(kinds.indexOf('clock-jump'), 1);
  leftOut.push('clock-jump: libfaketime is not installed (Debian: apt-get install faketime)');
  process.stderr.write(`chaos: ${leftOut[0]}\n`);
}

const noSmallDisk = kinds.includes('disk-full') ? smallDiskUnavailable() : undefined;
if (noSmallDisk) {
  if (faultsFlag !== 'all') usage(`disk-full needs a small disk for the platform: ${noSmallDisk}; or leave that fault out`);
  kinds.splice(kinds.indexOf('disk-full'), 1);
  leftOut.push(`disk-full: ${noSmallDisk}`);
  process.stderr.write(`chaos: ${leftOut.at(-1)}\n`);
}

const dir = mkdtempSync(join(tmpdir(), 'acx-chaos-'));
const out = values.out ? resolve(values.out as string) : dir;
mkdirSync(out, { recursive: true });
const command = `npm run chaos -- --minutes ${minutes} --seed ${seed} --rate ${rate} --fault-every ${faultEverySeconds} --faults ${faultsFlag} --workers ${numberOption(values, 'workers', 2, 1)} --concurrency ${numberOption(values, 'concurrency', 2, 1)}${values['context-tokens'] !== undefined ? ` --context-tokens ${numberOption(values, 'context-tokens', 0, 1000)}` : ''}`;
const log = (line: string) => process.stderr.write(`[chaos ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
log(`${command}\n  fleet and logs in ${dir}`);

const random = seededRandom(seed);
const fleet = await startChaosFleet({
  dir,
  workers: numberOption(values, 'workers', 2, 1),
  concurrency: numberOption(values, 'concurrency', 2, 1),
  timelinesPerAgent: numberOption(values, 'timelines', 2, 1),
  pollSeconds: numberOption(values, 'poll', 5, 1),
  ...(values['context-tokens'] !== undefined ? { contextTokens: numberOption(values, 'context-tokens', 0, 1000) } : {}),
  stallMs: 5000,
  ...(faketime && kinds.includes('clock-jump') ? { faketime } : {}),
  ...(kinds.includes('disk-full') ? { smallDiskMb: SMALL_DISK_MB } : {}),
});
// Stopped early (Ctrl-C, a supervisor's TERM): the fleet goes down with the run, so nothing of it
// (workers, router, platform, the PostgreSQL cluster, the small disk) is left running.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping the fleet`);
    void fleet.close().finally(() => process.exit(130));
  });
}
let exitCode = 1;
try {
  const startedAt = Date.now();
  const traffic = startTraffic(fleet.platformUrl, fleet.tokens, fleet.timelines, rate, random);
  const faultErrors: string[] = [];
  // The first fifth of the run (at most two minutes) has no faults: the fault-free baseline.
  const calmMs = Math.min(0.2 * minutes * 60_000, 120_000);
  const faults = scheduleFaults(fleet, kinds, { calmMs, everyMs: faultEverySeconds * 1000 }, random, (error) => {
    faultErrors.push(error.message);
    log(error.message);
  });
  // The model server records every request; a long run keeps only the recent ones.
  const trim = setInterval(() => fleet.model.requests.splice(0, Math.max(0, fleet.model.requests.length - 100)), 10_000);
  const progress = setInterval(() => log(`${traffic.posts.length} sent, ${faults.records.length} faults recovered`), 30_000);
  await new Promise((resolve) => setTimeout(resolve, minutes * 60_000));
  await faults.stop();
  await traffic.stop();
  const trafficEndedAt = Date.now();
  log(`traffic and faults stopped: ${traffic.posts.length} sent, ${faults.records.length} faults; draining (up to ${drainSeconds} s)`);

  // Drain: every stored message answered (or dead-lettered), or the drain time is up.
  let view = await readPlatform(fleet);
  for (const deadline = Date.now() + drainSeconds * 1000; Date.now() < deadline; ) {
    const waiting = view.asked.filter((a) => a.replies.length === 0).length;
    const queue = await readQueue(fleet);
    const busy = (queue.states.created ?? 0) + (queue.states.retry ?? 0) + (queue.states.active ?? 0) + (queue.deliveries.pending ?? 0);
    if (waiting === 0 && busy === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 3000));
    view = await readPlatform(fleet);
  }
  clearInterval(trim);
  clearInterval(progress);
  const queue = await readQueue(fleet);
  const finishedAt = Date.now();
  for (const service of [...fleet.workers, fleet.router, fleet.platform]) await service.stop();
  const asked = new Set(view.asked.map((a) => a.tag));
  const unknownEffects = [...effectCounts(fleet.effectFile)].filter(([tag]) => !asked.has(tag)).reduce((n, [, c]) => n + c, 0);
  const summary = summarize({
    command,
    startedAt,
    trafficEndedAt,
    finishedAt,
    posts: traffic.posts,
    platform: view,
    queue,
    faults: faults.records,
    faultErrors,
    leftOut,
    crashes: [fleet.platform, fleet.router, ...fleet.workers].flatMap((service) => service.crashes),
    integrity: integrityProblems(fleet),
    unknownEffects,
  });
  writeFileSync(join(out, 'report.md'), `${summary.text}\n![timeline](timeline.svg)\n\nFleet, logs and databases: ${dir}\n`);
  writeFileSync(join(out, 'timeline.svg'), summary.svg);
  writeFileSync(join(out, 'faults.json'), `${JSON.stringify(faults.records, null, 2)}\n`);
  // Each message with its agent, timeline, post time and reply times: where a latency came from,
  // read beside the timed logs (the platform's own database may sit in a namespace gone by now).
  writeFileSync(join(out, 'messages.json'), `${JSON.stringify(view.asked, null, 1)}\n`);
  if (values.json) writeFileSync(resolve(values.json as string), checksAsTestReport(summary.checks, join(out, 'report.md')));
  process.stdout.write(`${summary.text}\nreport: ${join(out, 'report.md')}\ntimeline: ${join(out, 'timeline.svg')}\n`);
  exitCode = summary.ok ? 0 : 1;
} finally {
  await fleet.close();
}
process.exit(exitCode);
