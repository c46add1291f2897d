// The fleet under test, all real parts on loopback: a throwaway PostgreSQL cluster, the scripted
// model server behind the fault-injecting proxy, the embedded platform (`acx platform serve`) with
// human users and timelines, `acx router --queue` (with --poll as the platform's safety net) and
// `acx worker` processes, each with its own home, as separate hosts would have.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { ACX_BIN, cleanEnv } from '../test/support/cli.ts';
import { type FlakyProxy, startFlakyProxy } from '../test/support/flaky-proxy.ts';
import { type ModelServer, respondByTurn, startModelServer } from '../test/support/model-server.ts';
import { type PostgresCluster, startPostgres } from '../test/support/postgres.ts';
import { AGENTS, chaosReplies, writeAgents } from './agents.ts';
import { type MovableClock, movableClock } from './clock.ts';
import { mountSmallDisk, type SmallDisk } from '../test/support/small-disk.ts';
import { acxService, freePort, type Service } from './processes.ts';

export const HUMANS = ['ana', 'ben'] as const;
const SECRET = 'chaos-webhook-secret-5f0e2a7c91';
/** Wakes per session and per timeline in the breaker's window (a minute by default): far above what the traffic makes. */
const BREAKER_MAX = 200;

export interface FleetOptions {
  dir: string;
  workers: number;
  concurrency: number;
  timelinesPerAgent: number;
  /** The router's --poll interval, seconds. */
  pollSeconds: number;
  /** How long a proxy 'stall' holds a model answer. */
  stallMs: number;
  /** libfaketime, to give each worker a clock the clock-jump fault moves; absent: the workers keep the machine's. */
  faketime?: string;
  /** The platform's home on a disk this small (MB), which the disk-full fault fills; absent: on the run's own disk. */
  smallDiskMb?: number;
  /** The agents' context ceiling in tokens (ACX_MAX_CONTEXT_TOKENS), so a short run's sessions compact too; absent: the engine's own. */
  contextTokens?: number;
}

export interface Timeline {
  uuid: string;
  agent: string;
}

export interface ChaosFleet {
  dir: string;
  postgres: PostgresCluster;
  storeUrl: string;
  model: ModelServer;
  proxy: FlakyProxy;
  platform: Service;
  platformUrl: string;
  platformHome: string;
  /** The platform's small disk (the disk-full fault), when it has one. */
  disk?: SmallDisk;
  /** Runs `sql` on the platform's database, read-only (on its small disk, from inside the disk's namespace). */
  queryPlatform(sql: string): unknown[];
  router: Service;
  routerHome: string;
  workers: Service[];
  /** Each worker's wall clock (by worker name), when the fleet runs with libfaketime. */
  clocks: Map<string, MovableClock>;
  tokens: Record<string, string>;
  timelines: Timeline[];
  effectFile: string;
  controlDir: string;
  close(): Promise<void>;
}

function addUser(platformHome: string, disk: SmallDisk | undefined, handle: string, kind: 'ai' | 'human', trust: readonly string[]): { token: string; uuid: string } {
  const args = [ACX_BIN, 'platform', 'user', 'add', '--handle', handle, '--kind', kind, '--home', platformHome, '--json', ...trust.flatMap((t) => ['--trust', t])];
  const [command, commandArgs] = disk ? disk.inside(process.execPath, args) : [process.execPath, args];
  return JSON.parse(execFileSync(command, commandArgs, { env: cleanEnv(), encoding: 'utf8' })) as { token: string; uuid: string };
}

async function api(url: string, token: string, method: string, path: string, json: unknown): Promise<any> {
  const response = await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(json) });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

export async function startChaosFleet(options: FleetOptions): Promise<ChaosFleet> {
  const { dir } = options;
  const logDir = join(dir, 'logs');
  const controlDir = join(dir, 'control');
  for (const sub of [logDir, controlDir]) mkdirSync(sub, { recursive: true });
  const effectFile = join(dir, 'effects.txt');
  const agentDirs = writeAgents(join(dir, 'agents-home'), effectFile, controlDir);

  const postgres = startPostgres();
  const started: Array<() => unknown> = [];
  try {
    return await startParts(options, postgres, started, { logDir, controlDir, effectFile, agentDirs });
  } catch (error) {
    // Nothing of a fleet that could not start is left running.
    for (const stop of started.reverse()) await stop();
    postgres.stop();
    throw error;
  }
}

async function startParts(
  options: FleetOptions,
  postgres: PostgresCluster,
  started: Array<() => unknown>,
  paths: { logDir: string; controlDir: string; effectFile: string; agentDirs: Record<string, string> },
): Promise<ChaosFleet> {
  const { dir } = options;
  const { logDir, controlDir, effectFile, agentDirs } = paths;
  const storeUrl = postgres.createDatabase('chaos');
  const model = await startModelServer({ fallback: respondByTurn(chaosReplies) });
  started.push(() => model.close());
  const proxy = await startFlakyProxy(model.url, { stallMs: options.stallMs, retryAfterSeconds: 1 });
  started.push(() => proxy.close());

  const platformHome = join(dir, 'platform');
  mkdirSync(platformHome);
  const disk = options.smallDiskMb !== undefined ? await mountSmallDisk(platformHome, options.smallDiskMb) : undefined;
  // Its files are copied out before the disk goes, for a look afterwards.
  const releaseDisk = () => {
    if (!disk) return;
    try {
      cpSync(disk.outside, join(dir, 'platform-disk'), { recursive: true });
    } finally {
      disk.close();
    }
  };
  started.push(releaseDisk);
  const tokens: Record<string, string> = {};
  const uuids: Record<string, string> = {};
  for (const [handle, kind, trust] of [...HUMANS.map((h, i) => [h, 'human', HUMANS.slice(0, i)] as const), ...AGENTS.map((a) => [a, 'ai', HUMANS] as const)]) {
    ({ token: tokens[handle]!, uuid: uuids[handle]! } = addUser(platformHome, disk, handle, kind, trust));
  }
  const [platformPort, routerPort] = [await freePort(), await freePort()];
  const platformUrl = `http://127.0.0.1:${platformPort}`;
  const routerUrl = `http://127.0.0.1:${routerPort}`;
  const base = cleanEnv({ ACX_LOG_LEVEL: 'info', ACX_LOG_TIME: '1' });
  const platform = acxService({
    name: 'platform',
    args: ['platform', 'serve', '--port', String(platformPort), '--home', platformHome, '--deliver-to', routerUrl],
    env: { ...base, ACX_PLATFORM_WEBHOOK_SECRET: SECRET },
    logDir,
    waitForStdoutLine: true,
    ...(disk ? { launch: disk.inside } : {}),
  });
  started.push(() => platform.stop());
  await platform.start();

  const timelines: Timeline[] = [];
  for (const agent of AGENTS) {
    for (let n = 1; n <= options.timelinesPerAgent; n++) {
      const created = await api(platformUrl, tokens.ana!, 'POST', '/timelines', { timeline: { name: `${agent} room ${n}` } });
      const uuid = created.timeline.uuid as string;
      for (const member of [agent, ...HUMANS.slice(1)]) await api(platformUrl, tokens.ana!, 'POST', `/timelines/${uuid}/participations`, { user_id: uuids[member] });
      timelines.push({ uuid, agent });
    }
  }

  const agentList = AGENTS.map((agent) => `${agent}=${agentDirs[agent]}`).join(',');
  const agentTokens = Object.fromEntries(AGENTS.map((agent) => [`BASECRADLE_TOKEN_${agent.toUpperCase()}`, tokens[agent]!]));
  const fleetEnv = {
    ...base,
    ...agentTokens,
    OPENAI_API_KEY: 'sk-test-chaos',
    OPENAI_BASE_URL: `${proxy.url}/v1`,
    BASECRADLE_BASE_URL: platformUrl,
    ACX_ROUTER_WEBHOOK_SECRET: SECRET,
    ACX_STORE: storeUrl,
    ...(options.contextTokens !== undefined ? { ACX_MAX_CONTEXT_TOKENS: String(options.contextTokens) } : {}),
  };
  const routerHome = join(dir, 'router');
  const router = acxService({
    name: 'router',
    args: ['router', '--agents', agentList, '--port', String(routerPort), '--platform', platformUrl, '--queue', storeUrl, '--home', routerHome, '--poll', `${options.pollSeconds}s`],
    env: fleetEnv,
    logDir,
    waitForStdoutLine: true,
  });
  started.push(() => router.stop());
  await router.start();
  const clocks = new Map<string, MovableClock>();
  const workers = Array.from({ length: options.workers }, (_, i) => {
    const name = `worker-${i + 1}`;
    const home = join(dir, name);
    mkdirSync(home);
    const clock = options.faketime ? movableClock(options.faketime, join(home, 'clock-offset')) : undefined;
    if (clock) clocks.set(name, clock);
    // Pacing waits out human reading time: not under test. The breaker is on, with a cap the
    // traffic never reaches, so only a miscount (a clock jump misdating wakes) could trip it.
    const args = ['worker', '--agents', agentList, '--concurrency', String(options.concurrency), '--home', home, '--config-home', home, '--no-pace', '--breaker-max', String(BREAKER_MAX)];
    return acxService({ name, args, env: { ...fleetEnv, ...clock?.env }, logDir });
  });
  for (const worker of workers) {
    started.push(() => worker.stop());
    await worker.start();
  }

  return {
    dir,
    postgres,
    storeUrl,
    model,
    proxy,
    platform,
    platformUrl,
    platformHome,
    ...(disk ? { disk } : {}),
    queryPlatform: (sql) => {
      const database = join(platformHome, 'platform.db');
      if (disk) return disk.query(database, sql);
      const db = new DatabaseSync(database, { readOnly: true });
      try {
        return db.prepare(sql).all();
      } finally {
        db.close();
      }
    },
    router,
    routerHome,
    workers,
    clocks,
    tokens,
    timelines,
    effectFile,
    controlDir,
    async close() {
      // Whatever hangs on its way down (a server waiting out keep-alive connections), the
      // processes are killed and the cluster removed: a run leaves nothing running behind it.
      try {
        for (const service of [...workers, router, platform]) await service.stop(5000);
        await Promise.race([Promise.all([proxy.close(), model.close()]), new Promise((resolve) => setTimeout(resolve, 5000))]);
      } finally {
        postgres.stop();
        releaseDisk();
      }
    },
  };
}
