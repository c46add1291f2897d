// The fleet's long-running acx processes (platform, router, workers) as restartable services:
// each one's stdout and stderr go to its own log file, a start waits for the process to say it is
// ready, and kill() is a SIGKILL — the fault the run injects — that resolves once the process is gone.
// A process that exits on its own is a finding: it is recorded, and restarted a second later, as
// a supervisor (systemd's Restart=) would, so the run goes on to find what else there is.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { ACX_BIN, ROOT } from '../test/support/cli.ts';

export interface Service {
  readonly name: string;
  running(): boolean;
  start(): Promise<void>;
  /** SIGKILL; resolves when the process has exited. */
  kill(): Promise<void>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit status. */
  stop(graceMs?: number): Promise<number | null>;
  /** How many times it was started. */
  readonly starts: number;
  /** Exits nobody asked for. */
  readonly crashes: Crash[];
}

export interface Crash {
  service: string;
  at: number;
  status: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServiceSpec {
  name: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  logDir: string;
  /** Ready once stdout has printed a line (a URL); otherwise ready once spawned. */
  waitForStdoutLine?: boolean;
  /** How the process is started, given the plain command line (the platform: inside its small disk's namespace). */
  launch?: (command: string, args: readonly string[]) => [string, string[]];
}

export function acxService(spec: ServiceSpec): Service {
  let child: ChildProcess | undefined;
  let exited: Promise<number | null> = Promise.resolve(null);
  let starts = 0;
  /** Set while an exit is expected: a kill, a stop, or before the first start. */
  let expectingExit = true;
  const crashes: Crash[] = [];
  const service: Service = {
    name: spec.name,
    get starts() {
      return starts;
    },
    crashes,
    running: () => child !== undefined && child.exitCode === null && child.signalCode === null,
    async start() {
      starts++;
      expectingExit = false;
      const log = openSync(join(spec.logDir, `${spec.name}.log`), 'a');
      const plain: [string, string[]] = [process.execPath, [ACX_BIN, ...spec.args]];
      const [command, args] = spec.launch ? spec.launch(...plain) : plain;
      const started = spawn(command, args, { cwd: ROOT, env: spec.env, stdio: ['ignore', spec.waitForStdoutLine ? 'pipe' : log, log] });
      closeSync(log);
      child = started;
      exited = new Promise((resolve) => started.on('close', (status) => resolve(status)));
      started.on('close', (status, signal) => {
        if (expectingExit || child !== started) return;
        crashes.push({ service: spec.name, at: Date.now(), status, signal });
        setTimeout(() => void (expectingExit || child !== started ? undefined : service.start().catch(() => {})), 1000);
      });
      if (!spec.waitForStdoutLine) return;
      await new Promise<void>((resolve, reject) => {
        started.stdout!.setEncoding('utf8').once('data', () => resolve());
        started.once('close', (status) => reject(new Error(`${spec.name} exited (${status}) before it was ready: see ${join(spec.logDir, `${spec.name}.log`)}`)));
      });
      started.stdout!.resume();
    },
    async kill() {
      expectingExit = true;
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await exited;
    },
    async stop(graceMs = 15_000) {
      expectingExit = true;
      if (!child || child.exitCode !== null || child.signalCode !== null) return child?.exitCode ?? null;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child?.kill('SIGKILL'), graceMs);
      const status = await exited;
      clearTimeout(timer);
      return status;
    },
  };
  return service;
}

/** A loopback port nothing listens on right now (the router and platform must know each other's in advance). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
