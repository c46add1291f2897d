// The faults, each a switch (--faults), injected at random times while traffic flows. A fault
// takes its target (a worker, the router, the platform, PostgreSQL, the model, the MCP drop-in)
// for as long as it lasts, so two faults never fight over one target, but faults on different
// targets overlap as they would in a real outage.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_CLAIM_LEASE_TTL_MS } from '../src/store/postgres-channel-state.ts';
import type { ChaosFleet } from './fleet.ts';
import type { Service } from './processes.ts';
import type { Random } from './random.ts';

export const FAULT_KINDS = [
  'kill-worker',
  'kill-mid-turn',
  'kill-router',
  'kill-platform',
  'pg-crash-restart',
  'pg-outage',
  'model-cut',
  'model-429',
  'model-503',
  'model-stall',
  'mcp-die-mid-call',
  'mcp-slow-start',
  'clock-jump',
  'disk-full',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultRecord {
  kind: FaultKind;
  target: string;
  /** When it began and when its target was back (ms since the epoch). */
  at: number;
  recoveredAt: number;
  detail: string;
}

/** How long a PostgreSQL outage lasts: longer than a lease (the claims', 15 s; a job's heartbeat, 10 s). */
const OUTAGE_MS = DEFAULT_CLAIM_LEASE_TTL_MS + 2_000;
/** How long a worker's clock stays jumped before it is stepped back. */
const CLOCK_JUMP_MS = 20_000;
/** How long the platform's disk stays full before its space is given back. */
const DISK_FULL_MS = 10_000;
/** How long a fault whose end the run cannot see (a model or MCP failure) is counted as in effect. */
const BLIP_MS = 5_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Injection {
  target: string;
  run(): Promise<string>;
}

function killAndRestart(service: Service, random: Random, before?: () => Promise<string>): Injection {
  return {
    target: service.name,
    async run() {
      const moment = before ? await before() : 'at a random moment';
      await service.kill();
      const pause = Math.round(random.between(500, 5000));
      await sleep(pause);
      await service.start();
      return `SIGKILL ${moment}, restarted after ${pause} ms`;
    },
  };
}

/** Waits (up to 10 s) until a model call is in flight: a turn is mid-way somewhere in the fleet. */
async function modelCallInFlight(fleet: ChaosFleet): Promise<string> {
  for (let waited = 0; waited < 10_000; waited += 20) {
    if (fleet.proxy.inFlight() > 0) return 'while a model call was in flight';
    await sleep(20);
  }
  return 'with no model call in flight (none came within 10 s)';
}

function injection(kind: FaultKind, fleet: ChaosFleet, random: Random): Injection {
  const worker = () => random.pick(fleet.workers);
  const modelFailure = (how: Parameters<ChaosFleet['proxy']['fail']>[1]): Injection => ({
    target: 'model',
    async run() {
      const count = 1 + Math.floor(random.next() * 3);
      fleet.proxy.fail(count, how);
      await sleep(BLIP_MS);
      return `the next ${count} model call(s): ${how}`;
    },
  });
  switch (kind) {
    case 'kill-worker':
      return killAndRestart(worker(), random);
    case 'kill-mid-turn':
      return killAndRestart(worker(), random, () => modelCallInFlight(fleet));
    case 'kill-router':
      return killAndRestart(fleet.router, random);
    case 'kill-platform':
      return killAndRestart(fleet.platform, random);
    case 'pg-crash-restart':
      return { target: 'postgres', run: async () => (await fleet.postgres.crashRestart(), 'pg_ctl restart -m immediate') };
    case 'pg-outage':
      return {
        target: 'postgres',
        async run() {
          await fleet.postgres.halt();
          await sleep(OUTAGE_MS);
          await fleet.postgres.start();
          return `stopped (-m immediate) for ${OUTAGE_MS / 1000} s, longer than a lease`;
        },
      };
    case 'model-cut':
      return modelFailure('cut-mid-body');
    case 'model-429':
      return modelFailure('rate-limit');
    case 'model-503':
      return modelFailure('unavailable');
    case 'model-stall':
      return modelFailure('stall');
    case 'mcp-die-mid-call':
      return {
        target: 'mcp',
        async run() {
          writeFileSync(join(fleet.controlDir, 'die-mid-call'), '');
          await sleep(BLIP_MS);
          return 'the next call performs its effect, then the server exits before answering';
        },
      };
    case 'clock-jump': {
      // Past the channel state's staleness limit (6 h) at times: a host that read times with its
      // own clock would take live claims for stale ones.
      const [name, clock] = random.pick([...fleet.clocks]);
      return {
        target: `${name} clock`,
        async run() {
          const hours = Math.round(random.between(1, 8) * 10) / 10;
          clock.set(hours * 3600);
          await sleep(CLOCK_JUMP_MS);
          clock.set(0);
          return `${name}'s wall clock ${hours} h ahead for ${CLOCK_JUMP_MS / 1000} s, then stepped back`;
        },
      };
    }
    case 'disk-full': {
      const disk = fleet.disk;
      if (!disk) throw new Error('the platform has no small disk to fill (the fleet was started without one)');
      return {
        target: 'platform disk',
        async run() {
          const taken = disk.fill();
          try {
            await sleep(DISK_FULL_MS);
          } finally {
            disk.empty();
          }
          return `the platform's disk full for ${DISK_FULL_MS / 1000} s (the last ${(taken / 2 ** 20).toFixed(1)} MB taken), then given back`;
        },
      };
    }
    case 'mcp-slow-start':
      return {
        target: 'mcp',
        async run() {
          const ms = Math.round(random.between(2000, 8000));
          writeFileSync(join(fleet.controlDir, 'slow-start'), String(ms));
          await sleep(BLIP_MS * 2);
          rmSync(join(fleet.controlDir, 'slow-start'), { force: true });
          return `every server started for ${(BLIP_MS * 2) / 1000} s held its handshake ${ms} ms`;
        },
      };
  }
}

export interface FaultSchedule {
  records: FaultRecord[];
  /** Stops injecting; resolves when every fault in progress has recovered. */
  stop(): Promise<void>;
}

/** Faults begin after `calmMs` (the run's fault-free baseline), then come every `everyMs` on average. */
export function scheduleFaults(fleet: ChaosFleet, kinds: readonly FaultKind[], timing: { calmMs: number; everyMs: number }, random: Random, onError: (error: Error) => void): FaultSchedule {
  const { everyMs } = timing;
  const records: FaultRecord[] = [];
  const busy = new Set<string>();
  const inProgress = new Set<Promise<void>>();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const inject = () => {
    if (stopped || kinds.length === 0) return;
    // A kind whose target is taken is passed over for another; if every target is taken, this tick skips.
    for (let tries = 0; tries < 10; tries++) {
      const kind = random.pick(kinds);
      const planned = injection(kind, fleet, random);
      if (busy.has(planned.target)) continue;
      busy.add(planned.target);
      const at = Date.now();
      const running = planned
        .run()
        .then((detail) => void records.push({ kind, target: planned.target, at, recoveredAt: Date.now(), detail }))
        .catch((error: Error) => onError(new Error(`fault ${kind} on ${planned.target}: ${error.message}`)))
        .finally(() => {
          busy.delete(planned.target);
          inProgress.delete(running);
        });
      inProgress.add(running);
      break;
    }
  };
  const plan = (extraMs: number) => {
    // Jittered around the mean, so faults do not fall into step with the fleet's own periods.
    timer = setTimeout(() => {
      inject();
      if (!stopped) plan(0);
    }, extraMs + random.between(0.5, 1.5) * everyMs);
  };
  plan(timing.calmMs);
  return {
    records,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      while (inProgress.size > 0) await Promise.all(inProgress);
    },
  };
}
