/**
 * Whether a step's cost stays flat as a session's history grows (issue 31, item 1).
 * Run: `npx node bench/session-growth.ts [rounds=5] [--profile]`.
 *
 * The engine runs against an in-process model (bench/support/loop-model.ts: it calls the tool
 * `tick` until told to stop, then answers), with its SQLite journal in a temporary directory (or,
 * through `bench/with-postgres.ts`, a throwaway PostgreSQL database), so what is measured is
 * acx's own work. Three goals, each a ratio of CPU time (user + system of this
 * process, GC threads included) measured in the same run:
 *
 * 1. A step at 4,000 messages: 201-call turns in a session that already holds ≥ 4,000 messages
 *    (ten such turns before them, on the same open session, as a long chat keeps it) against the
 *    same turns in fresh sessions, CPU per step, four of each per round, alternating turn by turn
 *    which goes first. Goal ≤ 1.3×.
 * 2. Within one 2,000-step turn: CPU of its last 100 steps against its first 100 (read at the
 *    engine's `model-call` checkpoint). Goal ≤ 1.3×.
 * 3. An event's turn as a worker runs it (the session opened by its id in another harness, a tool
 *    call, then the answer) on the long session against a fresh one, CPU and wall per turn,
 *    twenty of each per round, alternating. Goal ≤ 1.3× (CPU): what a turn reads of its history
 *    before the model is asked must not grow with it.
 *
 * Medians over `rounds`. No threshold fails anything: PASS/FAIL is printed for the reader.
 * `--profile` writes a CPU profile of one 2,000-step turn (Chrome DevTools) and prints its
 * hottest functions.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngineHarness } from '../src/harness/engine-harness.ts';
import { HarnessAgent } from '../src/harness/harness-agent.ts';
import type { Checkpoint } from '../src/engine/engine.ts';
import { fromLanguageModel } from '../src/model/providers.ts';
import { profile, summarize } from './support/cpu-profile.ts';
import { loopModel, loopTool, type LoopModel } from './support/loop-model.ts';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const ROUNDS = Number(args[0] ?? 5);
const PROFILE = process.argv.includes('--profile');
const GOAL = 1.3;
const TURN_CALLS = 201; // the engine-overhead turn: 200 tool steps and the answer
const HISTORY = 4000; // messages the long session holds before its measured turn
const LONG_TURN_CALLS = 2001;
const WINDOW = 100;
const PAIRS = 4; // measured turns per side and round
const PROMPT = 'Tick until you are told to stop, then say done.';

const home = mkdtempSync(join(tmpdir(), 'acx-bench-growth-'));
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const verdict = (ratio: number) => (ratio <= GOAL ? 'PASS' : 'FAIL');

// ACX_BENCH_STORE=postgres://...: every session runs on the PostgreSQL journal instead (with-postgres.ts).
const STORE = process.env.ACX_BENCH_STORE || undefined;
const JOURNAL = STORE ? 'PostgreSQL journal' : 'SQLite journal';

function newAgent(model: LoopModel, dir: string, maxSteps: number, checkpoint?: (event: Checkpoint) => void) {
  const harness = createEngineHarness({ model: fromLanguageModel(model), home: dir, ...(STORE ? { store: STORE } : {}), maxSteps, ...(checkpoint ? { checkpoint } : {}) });
  return { harness, agent: new HarnessAgent({ harness, tools: [loopTool()], permissionMode: 'allow-all' }) };
}

// ---- 1. a step at 4,000 messages vs a step in a fresh session --------------------------------
const model = loopModel(TURN_CALLS - 1);
const { harness, agent } = newAgent(model, join(home, 'sessions'), TURN_CALLS);

/** One 201-call turn on `session`: CPU ms per model call, and the messages the session then holds. */
async function turnOn(session: Awaited<ReturnType<HarnessAgent['createSession']>>): Promise<number> {
  model.reset();
  const before = cpuMs();
  const result = await agent.generate({ prompt: PROMPT, session });
  const cpu = cpuMs() - before;
  if (result.text !== 'done' || model.callCount !== TURN_CALLS) {
    throw new Error(`unexpected turn: text=${JSON.stringify(result.text)}, ${model.callCount} model calls`);
  }
  return cpu / TURN_CALLS;
}
const messagesIn = async (sessionId: string) => (await harness.journal.messages(sessionId)).length;

const started = performance.now();
for (let i = 0; i < 3; i++) await turnOn(await agent.createSession()); // warm up
const fresh: number[] = [];
const long: number[] = [];
const paired: number[] = [];
let held = 0;
let longSessionId = '';
for (let round = 0; round < ROUNDS; round++) {
  const session = await agent.createSession();
  longSessionId = session.id;
  while ((await messagesIn(session.id)) < HISTORY) await turnOn(session);
  held = await messagesIn(session.id);
  // One turn is ~20 ms of CPU, and a major GC landing in it doubles it: each side's sample is the
  // mean of PAIRS turns, the two sides alternating turn by turn so that GC debt is shared out.
  const sum = { fresh: 0, long: 0 };
  for (let pair = 0; pair < PAIRS; pair++) {
    const order = (round + pair) % 2 === 0 ? (['fresh', 'long'] as const) : (['long', 'fresh'] as const);
    for (const which of order) sum[which] += await turnOn(which === 'long' ? session : await agent.createSession());
  }
  fresh.push(sum.fresh / PAIRS);
  long.push(sum.long / PAIRS);
  paired.push(sum.long / sum.fresh);
}
const growthRatio = median(long) / median(fresh);
console.log(`Session growth: CPU per step (user + system, this process), in-process model, ${JOURNAL}, ${ROUNDS} rounds`);
console.log(`1. a ${TURN_CALLS}-call turn in a fresh session vs in one holding ${held} messages (its turns ${Math.round(held / (2 * TURN_CALLS)) + 1}-${Math.round(held / (2 * TURN_CALLS)) + PAIRS} on the open session):`);
console.log(`   fresh session          ${(median(fresh) * 1000).toFixed(0).padStart(6)} µs per step`);
console.log(`   at ${String(held).padEnd(5)} messages      ${(median(long) * 1000).toFixed(0).padStart(6)} µs per step`);
console.log(`   ratio ${growthRatio.toFixed(2)}x (paired median ${median(paired).toFixed(2)}x)   goal <= ${GOAL}x: ${verdict(growthRatio)}`);

// ---- 2. within one 2,000-step turn: the last 100 steps vs the first 100 ------------------------
const marks = new Map<number, number>();
const watched = new Set([1, 1 + WINDOW, LONG_TURN_CALLS - WINDOW, LONG_TURN_CALLS]);
const longModel = loopModel(LONG_TURN_CALLS - 1);
const longTurn = newAgent(longModel, join(home, 'long-turn'), LONG_TURN_CALLS, (event) => {
  if (event.at === 'model-call' && watched.has(event.step)) marks.set(event.step, cpuMs());
});
async function longTurnRatio(): Promise<{ first: number; last: number }> {
  longModel.reset();
  marks.clear();
  const result = await longTurn.agent.generate({ prompt: PROMPT });
  if (result.text !== 'done' || longModel.callCount !== LONG_TURN_CALLS) throw new Error(`unexpected long turn: ${longModel.callCount} model calls`);
  const span = (from: number, to: number) => (marks.get(to)! - marks.get(from)!) / WINDOW;
  return { first: span(1, 1 + WINDOW), last: span(LONG_TURN_CALLS - WINDOW, LONG_TURN_CALLS) };
}
await longTurnRatio(); // warm up
const firsts: number[] = [];
const lasts: number[] = [];
const turnRatios: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const { first, last } = await longTurnRatio();
  firsts.push(first);
  lasts.push(last);
  turnRatios.push(last / first);
}
const withinRatio = median(turnRatios);
console.log(`2. one ${LONG_TURN_CALLS}-call turn, steps 1-${WINDOW} vs ${LONG_TURN_CALLS - WINDOW}-${LONG_TURN_CALLS - 1}:`);
console.log(`   first ${WINDOW} steps         ${(median(firsts) * 1000).toFixed(0).padStart(6)} µs per step`);
console.log(`   last ${WINDOW} steps          ${(median(lasts) * 1000).toFixed(0).padStart(6)} µs per step`);
console.log(`   ratio ${withinRatio.toFixed(2)}x (median of per-turn ratios)   goal <= ${GOAL}x: ${verdict(withinRatio)}`);

// ---- 3. an event's turn (a tool call, then the answer) on the long session vs a fresh one --------
// What a worker does per event: open the session by its id, run a two-call turn. Same journal
// (file or database) as above, another harness, as another process would have.
const eventModel = loopModel(1);
const events = newAgent(eventModel, join(home, 'sessions'), 2);
async function eventOn(sessionId: string | undefined): Promise<{ cpu: number; wall: number }> {
  eventModel.reset();
  const cpu0 = cpuMs();
  const wall0 = performance.now();
  const session = await events.agent.createSession(sessionId ? { sessionId } : {});
  const result = await events.agent.generate({ prompt: PROMPT, session });
  const out = { cpu: cpuMs() - cpu0, wall: performance.now() - wall0 };
  if (result.text !== 'done' || eventModel.callCount !== 2) throw new Error(`unexpected event turn: ${eventModel.callCount} model calls`);
  return out;
}
const EVENT_PAIRS = 20;
for (let i = 0; i < 5; i++) await eventOn(longSessionId); // warm up (a first read of the long session among them)
const eventSide = { fresh: { cpu: [] as number[], wall: [] as number[] }, long: { cpu: [] as number[], wall: [] as number[] } };
for (let round = 0; round < ROUNDS; round++) {
  const sum = { fresh: { cpu: 0, wall: 0 }, long: { cpu: 0, wall: 0 } };
  for (let pair = 0; pair < EVENT_PAIRS; pair++) {
    const order = (round + pair) % 2 === 0 ? (['fresh', 'long'] as const) : (['long', 'fresh'] as const);
    for (const which of order) {
      const { cpu, wall } = await eventOn(which === 'long' ? longSessionId : undefined);
      sum[which].cpu += cpu;
      sum[which].wall += wall;
    }
  }
  for (const which of ['fresh', 'long'] as const) {
    eventSide[which].cpu.push(sum[which].cpu / EVENT_PAIRS);
    eventSide[which].wall.push(sum[which].wall / EVENT_PAIRS);
  }
}
const eventHeld = await messagesIn(longSessionId);
const eventCpuRatio = median(eventSide.long.cpu) / median(eventSide.fresh.cpu);
const eventWallRatio = median(eventSide.long.wall) / median(eventSide.fresh.wall);
console.log(`3. an event's two-call turn, the session opened by its id as a worker does, in a fresh session vs in the one holding ${eventHeld} messages:`);
console.log(`   fresh session          ${(median(eventSide.fresh.cpu) * 1000).toFixed(0).padStart(6)} µs CPU ${(median(eventSide.fresh.wall) * 1000).toFixed(0).padStart(6)} µs wall per turn`);
console.log(`   at ${String(eventHeld).padEnd(5)} messages      ${(median(eventSide.long.cpu) * 1000).toFixed(0).padStart(6)} µs CPU ${(median(eventSide.long.wall) * 1000).toFixed(0).padStart(6)} µs wall per turn`);
console.log(`   ratio CPU ${eventCpuRatio.toFixed(2)}x, wall ${eventWallRatio.toFixed(2)}x   goal <= ${GOAL}x (CPU): ${verdict(eventCpuRatio)}`);
await events.harness.close?.();
await harness.close?.();

if (PROFILE) {
  const { profile: cpu } = await profile(() => longTurnRatio());
  const file = join(tmpdir(), `acx-session-growth-${process.pid}.cpuprofile`);
  writeFileSync(file, JSON.stringify(cpu));
  const summary = summarize(cpu, (frame) => (frame.url.includes('/src/') || frame.url.includes('/node_modules/') ? frame.url.replace(/^.*\/(src|node_modules)\//, '$1/') : undefined), 20);
  console.log(`\nCPU profile of one ${LONG_TURN_CALLS}-call turn (bottom-up, ms):`);
  for (const { name, ms } of summary.categories.slice(0, 15)) console.log(`  ${ms.toFixed(0).padStart(6)}  ${name}`);
  console.log('  hottest functions (self ms):');
  for (const { name, ms } of summary.hot) console.log(`  ${ms.toFixed(0).padStart(6)}  ${name}`);
  console.log(`  profile written to ${file}`);
}
await longTurn.harness.close?.();
rmSync(home, { recursive: true, force: true });
console.log(`\n(total bench time ${((performance.now() - started) / 1000).toFixed(1)} s; load average ${(await import('node:os')).loadavg().map((l) => l.toFixed(1)).join(' ')})`);
