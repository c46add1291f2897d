import { type ChildProcess, spawn } from 'node:child_process';
import type { Logger } from '../../util/logger.ts';
import { logWakeOutput } from './wake-process.ts';
import { type EventWakeVariable, isWarmReady, type WarmEvent } from './warm-protocol.ts';

/**
 * The router's warm wake processes: one per hosted acx agent, started before its event arrives
 * (warm-protocol.ts), so a delivery is answered by a process that has already paid Node's and
 * acx's start-up. A warm process is handed one event, runs it as a cold wake would and exits (a
 * crash still loses nothing: the wake's claims and leases are the same), and the next one starts
 * when it has. A warm process that dies while idle is replaced at once the first time, then after
 * a wait that doubles each time it happens again (up to `backoffMs.max`), so a process that
 * cannot start is not restarted in a loop; meanwhile events get cold processes. One that an event
 * has waited `readyTimeoutMs` for without it saying ready is killed (it is stuck, and the agent's
 * wakes must not be) and counted as such a death. `close()` ends the idle ones.
 */
export interface WarmWakesOptions {
  logger: Logger;
  /** The wait before replacing a process that died idle the second time in a row, doubling up to max; default 250 ms to 30 s. */
  backoffMs?: { first: number; max: number };
  /** How long an event waits for a warm process still starting before it is killed and a cold one runs the event; default 30 s. */
  readyTimeoutMs?: number;
  /** The clock (tests). */
  now?: () => number;
}

interface WarmProcess {
  child: ChildProcess;
  /** True once it said ready; false when it ended (or could not start) first. */
  ready: Promise<boolean>;
  /** Its exit code once it has closed (a signal counts as 1, a failed start as 127). */
  closed: Promise<number>;
  readyAt?: number;
}

interface Slot {
  agent: string;
  argv: readonly string[];
  /** The environment each process of the agent starts with, made as it starts. */
  env: () => NodeJS.ProcessEnv;
  /** Started and not handed an event. */
  idle?: WarmProcess | undefined;
  /** Idle deaths in a row, for the backoff. */
  deaths: number;
  restart?: NodeJS.Timeout | undefined;
}

const DEFAULT_BACKOFF = { first: 250, max: 30_000 };
const DEFAULT_READY_TIMEOUT_MS = 30_000;

export class WarmWakes {
  private readonly slots = new Map<string, Slot>();
  private closing = false;
  private readonly backoff: { first: number; max: number };
  private readonly now: () => number;
  private readonly options: WarmWakesOptions;

  constructor(options: WarmWakesOptions) {
    this.options = options;
    this.backoff = options.backoffMs ?? DEFAULT_BACKOFF;
    this.now = options.now ?? Date.now;
  }

  /** Keeps one process of this agent's wake (`argv`, each started with what `env` gives then) warm from now on. */
  keep(agent: string, argv: readonly string[], env: () => NodeJS.ProcessEnv): void {
    const slot: Slot = { agent, argv, env, deaths: 0 };
    this.slots.set(agent, slot);
    this.start(slot);
  }

  /**
   * Runs one wake of `agent` on its warm process, with `args` appended to its command line and
   * the event's variables set: its exit code. Undefined when no warm process could take it (none
   * kept for this agent, one being replaced after dying, or it died before it was ready): then
   * the caller starts a cold one.
   */
  async run(agent: string, args: readonly string[], env: Record<EventWakeVariable, string>, delivery: string): Promise<number | undefined> {
    const slot = this.slots.get(agent);
    const warm = slot?.idle;
    if (!slot || !warm || this.closing) return undefined;
    slot.idle = undefined; // handed: how it ends is the wake's outcome, not an idle death
    if (!(await this.readyWithin(warm))) {
      warm.child.kill('SIGKILL');
      this.died(slot, warm, await warm.closed);
      return undefined;
    }
    const event: WarmEvent = { warm: 'event', args: [...args], env };
    const sent = await new Promise<boolean>((resolve) => {
      try {
        warm.child.send(event, (error) => resolve(!error));
      } catch {
        resolve(false);
      }
    });
    this.options.logger.debug('router warm process handed', { agent, delivery, pid: warm.child.pid, sent, ready_ms: warm.readyAt === undefined ? undefined : this.now() - warm.readyAt });
    // Not sent (it ended between saying ready and the event, or its channel failed): nothing ran,
    // and one still waiting would wait forever, so it is ended and a cold process runs the event.
    if (!sent) warm.child.kill('SIGKILL');
    const code = await warm.closed;
    slot.deaths = 0;
    if (!this.closing) this.start(slot);
    return sent ? code : undefined;
  }

  /** Whether it says ready (or has) before the ready timeout. */
  private async readyWithin(warm: WarmProcess): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), this.options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS)));
    try {
      return await Promise.race([warm.ready, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Stops replacing processes and ends the idle ones (a wake already handed its event runs to its end). */
  async close(): Promise<void> {
    this.closing = true;
    const ending: Array<Promise<number>> = [];
    for (const slot of this.slots.values()) {
      clearTimeout(slot.restart);
      const warm = slot.idle;
      slot.idle = undefined;
      if (warm) {
        warm.child.kill('SIGTERM');
        ending.push(warm.closed);
      }
    }
    await Promise.all(ending);
  }

  private start(slot: Slot): void {
    const { logger } = this.options;
    const [program, ...args] = slot.argv as [string, ...string[]];
    const child = spawn(program, args, { env: slot.env(), stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    logWakeOutput(child, logger, slot.agent);
    const warm: WarmProcess = {
      child,
      ready: new Promise((resolve) => {
        child.on('message', (message: unknown) => {
          if (!isWarmReady(message) || warm.readyAt !== undefined) return;
          warm.readyAt = this.now();
          logger.debug('router warm process ready', { agent: slot.agent, pid: child.pid });
          resolve(true);
        });
        child.once('exit', () => resolve(false));
        child.once('error', () => resolve(false));
      }),
      closed: new Promise((resolve) => {
        child.once('close', (code) => resolve(code ?? 1));
        child.once('error', (error) => {
          logger.warn('router wake not started', { agent: slot.agent, program, error: error.message });
          resolve(127);
        });
      }),
    };
    slot.idle = warm;
    void warm.closed.then((code) => {
      if (slot.idle !== warm) return;
      slot.idle = undefined;
      this.died(slot, warm, code);
    });
  }

  /** A warm process ended without an event: replaced, after a wait that grows while it keeps happening. */
  private died(slot: Slot, warm: WarmProcess, code: number): void {
    if (this.closing) return;
    // One that lived idle longer than the longest wait was not part of a loop.
    if (warm.readyAt !== undefined && this.now() - warm.readyAt >= this.backoff.max) slot.deaths = 0;
    const wait = slot.deaths === 0 ? 0 : Math.min(this.backoff.first * 2 ** (slot.deaths - 1), this.backoff.max);
    slot.deaths++;
    this.options.logger.warn('router warm process exited', { agent: slot.agent, pid: warm.child.pid, exit: code, signal: warm.child.signalCode ?? undefined, restart_in_ms: wait });
    slot.restart = setTimeout(() => {
      slot.restart = undefined;
      if (!this.closing) this.start(slot);
    }, wait);
  }
}
