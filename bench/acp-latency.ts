/**
 * What acx's ACP adapter adds on top of talking ACP directly, measured in one run.
 * Run: `npx node bench/acp-latency.ts [burst=20000] [turns=40] [rounds=5] [--claude]`.
 *
 * Both sides drive the same agent process (the deterministic fake agent,
 * test/fixtures/acp/fake-agent.ts, launched through the same install-command wrapper):
 * - **anchor**: a minimal direct client, `acp.client(...)` + `ndJsonStream` over the child's
 *   stdio, counting `session/update` notifications;
 * - **acx**: `createACP` + `HarnessAgent.stream()`, counting the translated `text-delta` parts
 *   (sandbox, launch env, line filter, translation, stream parts — everything a user gets).
 * Measured per round, in rotated order: session start (spawn + initialize + session/new), the
 * latency of a small text turn (`[[hello]]`: a thought, two chunks, usage), and events per
 * second over a `[[burst:N]]` turn of N message chunks, with this process's CPU time per event
 * over that burst (the host's cost of an event; steadier than wall time when the machine is busy,
 * since the agent process and other load do not count).
 * `--claude` adds the real Claude Code (cached bootstrap) against the local model server: text
 * turn latency through the adapter vs a direct client launching the same binary.
 * Ratios are acx / direct (latency) and direct / acx (throughput); PASS/FAIL is information only.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk';
import { createACP } from '../src/harness/acp/create.ts';
import { claudeCodeProfile } from '../src/harness/acp/profiles/claude-code.ts';
import type { ACPSettings } from '../src/harness/acp/settings.ts';
import { HarnessAgent } from '../src/harness/harness-agent.ts';
import { fakeProfile } from '../test/harness/acp/fake-profile.ts';
import { startModelServer } from '../test/support/model-server.ts';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const BURST = Number(args[0] ?? 20_000);
const TURNS = Number(args[1] ?? 40);
const ROUNDS = Number(args[2] ?? 5);
const WITH_CLAUDE = process.argv.includes('--claude');
// Issue 15's goals: a text turn through the adapter ≤ 1.05× a direct ACP client, and event
// throughput within 1.2× of it.
const LATENCY_GOAL = 1.05; // acx turn latency ≤ 1.05× a direct client
const THROUGHPUT_GOAL = 1.2; // direct events/s ≤ 1.2× acx's

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (x: number) => `${x.toFixed(2)} ms`;

// ---- the direct client: what a minimal ACP integration does ----------------------------------
interface DirectSession {
  prompt(text: string): Promise<number>;
  setMode(modeId: string): Promise<void>;
  close(): Promise<void>;
}

async function directSession(executable: string, argv: readonly string[], env: Record<string, string>, cwd: string): Promise<DirectSession> {
  const child: ChildProcess = spawn(executable, [...argv], { env, cwd, stdio: ['pipe', 'pipe', 'ignore'] });
  let updates = 0;
  const app = acp
    .client({ name: 'bench-direct' })
    .onNotification(acp.methods.client.session.update, () => {
      updates += 1;
    })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => ({
      outcome: { outcome: 'selected', optionId: params.options.find((o) => o.kind === 'allow_once')!.optionId },
    }));
  // The fake agent prints a non-JSON banner on purpose; a direct client has to drop such lines too.
  const lines = Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>;
  const conn = app.connect(acp.ndJsonStream(Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>, jsonOnly(lines)));
  await conn.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false } });
  const { sessionId } = await conn.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  return {
    async prompt(text) {
      updates = 0;
      await conn.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });
      return updates;
    },
    async setMode(modeId) {
      await conn.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId });
    },
    async close() {
      conn.close();
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

/** Keeps lines that start with `{` (a cheap filter, no parse). */
function jsonOnly(input: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let buffered = '';
  return input.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        buffered += decoder.decode(chunk, { stream: true });
        const parts = buffered.split('\n');
        buffered = parts.pop()!;
        const kept = parts.filter((l) => l.trimStart().startsWith('{'));
        if (kept.length) controller.enqueue(encoder.encode(kept.join('\n') + '\n'));
      },
    }),
  );
}

// ---- acx ---------------------------------------------------------------------------------------
async function acxTurn(agent: HarnessAgent, session: Awaited<ReturnType<HarnessAgent['createSession']>>, text: string): Promise<number> {
  const stream = agent.stream({ session, prompt: text });
  let deltas = 0;
  for await (const part of stream.harnessStream) if (part.type === 'text-delta') deltas += 1;
  await stream.result;
  return deltas;
}

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const start = performance.now();
  const value = await fn();
  return [performance.now() - start, value];
}

/** This process's CPU time (user + system, µs) over `fn`: the host's share of a burst, steadier than wall time on a busy machine. */
async function cpuTimed<T>(fn: () => Promise<T>): Promise<[number, number, T]> {
  const cpu = process.cpuUsage();
  const [wall, value] = await timed(fn);
  const used = process.cpuUsage(cpu);
  return [wall, used.user + used.system, value];
}

// ---- fake agent --------------------------------------------------------------------------------
const cacheDir = mkdtempSync(join(tmpdir(), 'acx-bench-acp-'));
const fakeSettings: ACPSettings = fakeProfile(cacheDir, { harnessId: 'bench-fake-acp' });
const harness = createACP(fakeSettings);
const installed = await harness.bootstrap();
const agent = new HarnessAgent({ harness, permissionMode: 'allow-all' });
const workdir = mkdtempSync(join(tmpdir(), 'acx-bench-direct-'));
const directEnv = { PATH: process.env.PATH ?? '', HOME: workdir };

const results = { setup: { acx: [] as number[], direct: [] as number[] }, turn: { acx: [] as number[], direct: [] as number[] }, eps: { acx: [] as number[], direct: [] as number[] }, cpu: { acx: [] as number[], direct: [] as number[] } };

async function roundAcx() {
  const [setup, session] = await timed(() => agent.createSession());
  await acxTurn(agent, session, '[[hello]]'); // warm
  const [turns] = await timed(async () => {
    for (let i = 0; i < TURNS; i++) await acxTurn(agent, session, '[[hello]]');
  });
  const [burst, cpu, deltas] = await cpuTimed(() => acxTurn(agent, session, `[[burst:${BURST}]]`));
  if (deltas !== BURST) throw new Error(`acx saw ${deltas} text deltas, expected ${BURST}`);
  await session.destroy();
  results.setup.acx.push(setup);
  results.turn.acx.push(turns / TURNS);
  results.eps.acx.push(BURST / (burst / 1000));
  results.cpu.acx.push(cpu / BURST);
}

async function roundDirect() {
  const [setup, session] = await timed(() => directSession(installed.executable, [], directEnv, workdir));
  await session.prompt('[[hello]]');
  const [turns] = await timed(async () => {
    for (let i = 0; i < TURNS; i++) await session.prompt('[[hello]]');
  });
  const [burst, cpu, updates] = await cpuTimed(() => session.prompt(`[[burst:${BURST}]]`));
  if (updates !== BURST) throw new Error(`direct client saw ${updates} updates, expected ${BURST}`);
  await session.close();
  results.setup.direct.push(setup);
  results.turn.direct.push(turns / TURNS);
  results.eps.direct.push(BURST / (burst / 1000));
  results.cpu.direct.push(cpu / BURST);
}

await roundDirect(); // warm-up (JIT, page cache)
await roundAcx();
for (const k of Object.keys(results) as Array<keyof typeof results>) (results[k].acx.length = 0), (results[k].direct.length = 0);
for (let r = 0; r < ROUNDS; r++) {
  if (r % 2 === 0) {
    await roundAcx();
    await roundDirect();
  } else {
    await roundDirect();
    await roundAcx();
  }
}
await harness.close?.();

const setupRatio = median(results.setup.acx) / median(results.setup.direct);
const turnRatio = median(results.turn.acx) / median(results.turn.direct);
const epsRatio = median(results.eps.direct) / median(results.eps.acx);
const cpuRatio = median(results.cpu.acx) / median(results.cpu.direct);
console.log(`ACP adapter vs direct ACP SDK client — fake agent (${ROUNDS} rounds, medians)`);
console.log(`  session start (spawn+initialize+session/new): acx ${ms(median(results.setup.acx))}, direct ${ms(median(results.setup.direct))}, ratio ${setupRatio.toFixed(2)}x`);
console.log(`  text turn latency ([[hello]], ${TURNS} turns):     acx ${ms(median(results.turn.acx))}, direct ${ms(median(results.turn.direct))}, ratio ${turnRatio.toFixed(2)}x  (added ${ms(median(results.turn.acx) - median(results.turn.direct))})  ${turnRatio <= LATENCY_GOAL ? 'PASS' : 'FAIL'} (goal ≤ ${LATENCY_GOAL}x)`);
console.log(`  events per second ([[burst:${BURST}]]):        acx ${Math.round(median(results.eps.acx))}/s, direct ${Math.round(median(results.eps.direct))}/s, direct/acx ${epsRatio.toFixed(2)}x  ${epsRatio <= THROUGHPUT_GOAL ? 'PASS' : 'FAIL'} (goal ≤ ${THROUGHPUT_GOAL}x)`);
console.log(`  host CPU per event (same burst):              acx ${median(results.cpu.acx).toFixed(1)} µs, direct ${median(results.cpu.direct).toFixed(1)} µs, acx/direct ${cpuRatio.toFixed(2)}x`);
rmSync(cacheDir, { recursive: true, force: true });
rmSync(workdir, { recursive: true, force: true });

// ---- real Claude Code (optional) ---------------------------------------------------------------
if (WITH_CLAUDE) {
  const server = await startModelServer({ fallback: { text: 'PONG from the model server, a reply of a few words.' } });
  const key = 'sk-bench-0123456789';
  const claude = createACP({ ...claudeCodeProfile, hostEnv: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: key }, progress: null } as ACPSettings);
  const claudeInstalled = await claude.bootstrap();
  const claudeAgent = new HarnessAgent({ harness: claude, permissionMode: 'allow-all' });
  const turns = Math.max(3, Math.floor(TURNS / 8));
  const lat = { acx: [] as number[], direct: [] as number[] };
  const calls = { acx: 0, direct: 0 };
  const home = mkdtempSync(join(tmpdir(), 'acx-bench-claude-'));
  for (let r = 0; r < Math.max(2, Math.floor(ROUNDS / 2)); r++) {
    const session = await claudeAgent.createSession();
    await claudeAgent.generate({ session, prompt: 'warm up' });
    let before = server.requests.length;
    const [a] = await timed(async () => {
      for (let i = 0; i < turns; i++) await claudeAgent.generate({ session, prompt: `ping ${i}` });
    });
    calls.acx += server.requests.length - before;
    await session.destroy();
    lat.acx.push(a / turns);
    // Direct: the same binary, the same kind of isolated environment and mode, no proxy, no MCP.
    const env = { ...(claudeCodeProfile.env as Record<string, string>), PATH: process.env.PATH ?? '', HOME: home, ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: key };
    const direct = await directSession(claudeInstalled.executable, [], env, home);
    await direct.setMode('bypassPermissions');
    await direct.prompt('warm up');
    before = server.requests.length;
    const [d] = await timed(async () => {
      for (let i = 0; i < turns; i++) await direct.prompt(`ping ${i}`);
    });
    calls.direct += server.requests.length - before;
    await direct.close();
    lat.direct.push(d / turns);
  }
  await claude.close?.();
  await server.close();
  rmSync(home, { recursive: true, force: true });
  const ratio = median(lat.acx) / median(lat.direct);
  console.log(`Real Claude Code against the local model server (${lat.acx.length} rounds × ${turns} turns, medians)`);
  console.log(`  model calls per turn: acx ${(calls.acx / (turns * lat.acx.length)).toFixed(1)}, direct ${(calls.direct / (turns * lat.direct.length)).toFixed(1)}`);
  console.log(`  text turn latency: acx ${ms(median(lat.acx))}, direct ${ms(median(lat.direct))}, ratio ${ratio.toFixed(2)}x (added ${ms(median(lat.acx) - median(lat.direct))})  ${ratio <= LATENCY_GOAL ? 'PASS' : 'FAIL'} (goal ≤ ${LATENCY_GOAL}x)`);
}
