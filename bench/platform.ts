/**
 * What an agent on the embedded platform costs, against anchors measured in the same run.
 * Run: `npx node bench/platform.ts [rounds=6] [deliveries=2000] [--cold]`.
 *
 * 1. **Wake latency**: a person posts a message that mentions the agent; the platform delivers it
 *    (signed) to the router, which runs `acx wake --timeline`; the scripted model (the local
 *    model server speaking the OpenAI wire) acks it through messages_create. Measured from the
 *    message's `created_at` to the reply's, both stamped by the platform. Anchor: the same
 *    message through `acx wake --session` (a fresh process answering one event, wall time from
 *    spawn to exit). The timeline turn is two model calls (the post, then the final text) and
 *    reads the timeline and the dashboard first; the session turn is one model call. Also timed:
 *    the router accepting the delivery → the model server receiving the wake's first request,
 *    against a bare `node -e 0` start (spawn → exit), the goal being ≤ 1× (issue 31, item 5b):
 *    only a wake process started before the event (the router's warm process) can reach it.
 *    `--cold` runs the router with `warm: false` (a process started per event), for comparison.
 * 2. **Router throughput**: `deliveries` signed message deliveries (20 timelines, 16 senders at
 *    once) POSTed to the router, whose wakes are `/bin/true` (so the router, not the agent, is
 *    measured): events/s accepted (each verified in constant time, deduped and recorded in
 *    router.db), and the wakes it ran once the queue drained (the rest coalesced). Anchor: a bare
 *    node:http server that reads the body, parses it and answers 202.
 * Prints medians and ratios, and PASS/FAIL for the goal; no thresholds fail anything.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { BaseCradleClient, webhookSignature } from '../src/channel/index.ts';
import { startRouter } from '../src/frontends/router/router.ts';
import { addUser, startPlatform } from '../src/platform/index.ts';
import { createLogger, createMemoryLogger, silentLogger } from '../src/util/logger.ts';
import { respondByTurn, startModelServer } from '../test/support/model-server.ts';
import { burstReplies, timelineAgentDir } from '../test/support/timeline-agents.ts';

const positional = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
const COLD = process.argv.includes('--cold');
const ROUNDS = Number(positional[0] ?? 6);
const DELIVERIES = Number(positional[1] ?? 2000);
const ROOT = resolve(import.meta.dirname, '..');
const ACX_BIN = join(ROOT, 'bin/acx.js');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const SECRET = 'bench-platform-secret-0123456789';

// ---- 1. wake latency ---------------------------------------------------------------------------
const home = mkdtempSync(join(tmpdir(), 'acx-bench-platform-'));
// When each model request arrived, and when the router accepted each delivery (its debug line).
const requestsAt: number[] = [];
const acceptedAt: number[] = [];
const reply = respondByTurn(burstReplies);
const model = await startModelServer({
  fallback: (request) => {
    requestsAt.push(performance.now());
    return typeof reply === 'function' ? reply(request) : reply;
  },
});
let platform = await startPlatform({ home: join(home, 'platform'), port: 0, logger: silentLogger });
const ana = addUser(join(home, 'platform'), { handle: 'ana', kind: 'human' });
const nova = addUser(join(home, 'platform'), { handle: 'nova', kind: 'ai', trust: ['ana'] });
const agentDir = timelineAgentDir(home, 'nova');
// Only what a wake needs: no keys or homes of the machine's own. The breaker is set out of reach:
// a bench's back-to-back wakes of one timeline are what it exists to stop (the default trips on
// the eleventh within its window, and a declined wake posts no reply for a round to wait for).
// ACX_RUN_FROM=dist measures the bundle an installed package runs (npm run build first).
const wakeEnv: NodeJS.ProcessEnv = { PATH: process.env.PATH, OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: model.openaiBaseURL, ACX_HOME: home, ACX_CONFIG_HOME: home, HOME: home, ACX_WAKE_BREAKER_MAX: '100000', ...(process.env.ACX_RUN_FROM ? { ACX_RUN_FROM: process.env.ACX_RUN_FROM } : {}) };
const routerLines: string[] = [];
const routerLog = createLogger({
  level: 'debug',
  sink: {
    write: (line) => {
      if (line.includes('router delivery accepted')) acceptedAt.push(performance.now());
      routerLines.push(line);
    },
  },
});
const warmReady = () => routerLines.filter((line) => line.includes('router warm process ready')).length;
const router = await startRouter({
  warm: !COLD,
  agents: [{ name: 'nova', dir: agentDir, token: nova.token, uuid: nova.uuid, secret: SECRET }],
  platformUrl: () => platform.url,
  databasePath: join(home, 'router.db'),
  logger: routerLog,
  env: wakeEnv,
});
const platformPort = platform.port;
await platform.close();
platform = await startPlatform({ home: join(home, 'platform'), port: platformPort, logger: silentLogger, deliverTo: [router.url], webhookSecret: SECRET });
const client = new BaseCradleClient({ env: {}, baseUrl: platform.url, token: ana.token });
const room = await client.timelines.create('bench');
await client.timelines.addParticipant(room.uuid, nova.uuid);

// Timeline rounds run so far: a warm process is started after each, and one before the first.
let timelineRounds = 0;
/**
 * Between events, as a steady router is: the next warm process has had time to get ready. Waited
 * for before every measurement (the anchors too), so none of them shares the cores with a warm
 * process getting ready.
 */
async function untilWarmReady(): Promise<void> {
  if (!COLD) while (warmReady() < timelineRounds + 1) await new Promise((resolve) => setTimeout(resolve, 5));
}

/** Posted → reply posted, and the router's acceptance → the wake's first model request. */
async function timelineRound(n: number): Promise<{ replyMs: number; firstRequestMs: number }> {
  await untilWarmReady();
  timelineRounds += 1;
  const [accepted, requested] = [acceptedAt.length, requestsAt.length];
  const sent = await client.messages.create(room.uuid, `@nova item #B${n}: please ack`, { idempotencyKey: randomUUID() });
  for (;;) {
    await router.idle();
    for await (const message of client.messages.list({ timeline: room.uuid })) {
      if (message.user.handle === 'nova' && message.content.body === `ack #B${n}`) {
        if (acceptedAt.length !== accepted + 1) throw new Error(`expected one accepted delivery for #B${n}, saw ${acceptedAt.length - accepted}`);
        return { replyMs: Date.parse(message.created_at) - Date.parse(sent.created_at), firstRequestMs: requestsAt[requested]! - acceptedAt[accepted]! };
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function sessionRound(n: number): Promise<number> {
  await untilWarmReady();
  const started = performance.now();
  const child = spawn(process.execPath, [ACX_BIN, 'wake', agentDir, '--session', 'bench-session', '--event', `e${n}`, `@nova item #S${n}: please ack`], { cwd: ROOT, env: wakeEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) =>
    child.on('close', (code) => (code === 0 ? resolve(performance.now() - started) : reject(new Error(`acx wake --session exited ${code}: ${stderr}`)))),
  );
}

/** A bare Node start: spawn → exit of `node -e 0`, the goal's anchor. */
async function nodeStart(): Promise<number> {
  await untilWarmReady();
  const started = performance.now();
  const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  return new Promise((resolve, reject) => child.on('close', (code) => (code === 0 ? resolve(performance.now() - started) : reject(new Error(`node -e 0 exited ${code}`)))));
}

// One of each first, unmeasured: the first timeline wake is a first wake, both warm the disk cache.
await timelineRound(0);
await sessionRound(0);
await nodeStart();
const latency = { timeline: [] as number[], firstRequest: [] as number[], session: [] as number[], node: [] as number[] };
for (let round = 1; round <= ROUNDS; round++) {
  const sides = [
    async () => {
      const { replyMs, firstRequestMs } = await timelineRound(round);
      latency.timeline.push(replyMs);
      latency.firstRequest.push(firstRequestMs);
    },
    async () => latency.session.push(await sessionRound(round)),
    async () => latency.node.push(await nodeStart()),
  ];
  for (const side of round % 2 ? sides.reverse() : sides) await side();
}
await router.close();
await platform.close();
await model.close();
const wakesRun = routerLines.filter((line) => line.includes('router wake ')).length;
if (wakesRun !== ROUNDS + 1) console.log(`note: ${wakesRun} router wakes for ${ROUNDS + 1} messages`);

// ---- 2. router throughput ----------------------------------------------------------------------
const AGENT_UUID = randomUUID();
const timelines = Array.from({ length: 20 }, () => randomUUID());
const deliveries = Array.from({ length: DELIVERIES }, (_, i) => {
  const body = JSON.stringify({ event: 'message.created', event_id: randomUUID(), recipient_uuid: AGENT_UUID, timeline_uuid: timelines[i % timelines.length], resource: { type: 'message', uuid: randomUUID() } });
  return { id: randomUUID(), body, signature: webhookSignature(SECRET, body) };
});

async function blast(url: string): Promise<number> {
  let next = 0;
  const started = performance.now();
  const sender = async () => {
    while (next < deliveries.length) {
      const delivery = deliveries[next++]!;
      const response = await fetch(url, {
        method: 'POST',
        body: delivery.body,
        headers: { 'content-type': 'application/json', 'x-basecradle-event': 'message.created', 'x-basecradle-delivery': delivery.id, 'x-basecradle-signature': delivery.signature },
      });
      await response.text();
      if (response.status !== 202) throw new Error(`delivery answered ${response.status}`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, sender));
  return deliveries.length / ((performance.now() - started) / 1000);
}

const bare = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    JSON.parse(Buffer.concat(chunks).toString('utf8'));
    res.writeHead(202, { 'content-type': 'text/plain; charset=utf-8' }).end('accepted\n');
  });
});
await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}`;
const throughput = { router: [] as number[], bare: [] as number[], wakes: [] as number[], drainMs: [] as number[] };
for (let round = 0; round < 3; round++) {
  const log = createMemoryLogger('info');
  const fast = await startRouter({
    agents: [{ name: 'bench', dir: home, token: 'unused', uuid: AGENT_UUID, secret: SECRET }],
    platformUrl: 'http://127.0.0.1:9',
    databasePath: join(mkdtempSync(join(tmpdir(), 'acx-bench-router-')), 'router.db'),
    logger: log,
    wakeCommand: { command: '/bin/true', args: [] },
  });
  const sides = [async () => throughput.router.push(await blast(fast.url)), async () => throughput.bare.push(await blast(bareUrl))];
  for (const side of round % 2 ? sides.reverse() : sides) await side();
  const drained = performance.now();
  await fast.idle();
  throughput.drainMs.push(performance.now() - drained);
  throughput.wakes.push(log.lines.filter((line) => line.includes('router wake ')).length);
  await fast.close();
}
bare.close();

const ms = (value: number) => `${value.toFixed(0)} ms`;
console.log(`platform: ${ROUNDS} latency rounds, ${DELIVERIES} deliveries x 3 throughput rounds (medians)`);
console.log(`wake latency  timeline (posted -> reply posted, via router) ${ms(median(latency.timeline))}   session wake process ${ms(median(latency.session))}   ratio ${(median(latency.timeline) / median(latency.session)).toFixed(2)}x`);
console.log(`  timeline samples ${latency.timeline.map(ms).join(', ')}; session samples ${latency.session.map(ms).join(', ')}`);
const firstRatio = median(latency.firstRequest) / median(latency.node);
console.log(
  `first request  delivery accepted -> the wake's first model request (${COLD ? 'cold: a process per event' : 'warm process'}) ${ms(median(latency.firstRequest))}   node -e 0 ${ms(median(latency.node))}   ratio ${firstRatio.toFixed(2)}x   goal <= 1x ${firstRatio <= 1 ? 'PASS' : 'FAIL'}`,
);
console.log(`  first-request samples ${latency.firstRequest.map(ms).join(', ')}; node -e 0 samples ${latency.node.map(ms).join(', ')}`);
console.log(`router        ${median(throughput.router).toFixed(0)} events/s accepted   bare http ${median(throughput.bare).toFixed(0)} events/s   ratio ${(median(throughput.router) / median(throughput.bare)).toFixed(2)}x`);
console.log(`  after the burst: ${median(throughput.wakes)} wakes run for ${DELIVERIES} deliveries (the rest coalesced), queue drained ${ms(median(throughput.drainMs))} after the last was accepted`);
