import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';

/**
 * Runs one process in its own session and process group with a time limit and an output limit.
 * On timeout, cancellation or when the main process exits, every process of the call is killed,
 * so a background grandchild cannot outlive the call (see callProcesses for how they are found).
 * Output beyond the limit keeps its head and its tail.
 */
export interface RunProcessOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  stdin?: string;
  timeoutMs: number;
  /** Bytes kept per stream (half head, half tail). */
  maxOutputBytes: number;
  signal?: AbortSignal;
}

export interface CapturedOutput {
  text: string;
  /** Bytes the stream produced in total (a runner that only knows what it kept gives that). */
  totalBytes: number;
  truncated: boolean;
  /** What a truncated stream kept: its head and tail (acx's own buffer), or only its end (an editor's terminal). */
  kept?: 'head and tail' | 'tail';
}

export interface ProcessResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  aborted: boolean;
  stdout: CapturedOutput;
  stderr: CapturedOutput;
  /** stdout holds both streams, interleaved as a terminal shows them (stderr is then empty). */
  combined?: boolean;
}

/** Keeps the first and last `limit/2` bytes of a stream. */
export class HeadTailBuffer {
  private readonly headLimit: number;
  private readonly tailLimit: number;
  private head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer = Buffer.alloc(0);
  total = 0;

  constructor(limit: number) {
    this.headLimit = Math.ceil(limit / 2);
    this.tailLimit = Math.floor(limit / 2);
  }

  push(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.headBytes < this.headLimit) {
      const take = Math.min(chunk.length, this.headLimit - this.headBytes);
      this.head.push(chunk.subarray(0, take));
      this.headBytes += take;
      chunk = chunk.subarray(take);
    }
    if (chunk.length === 0 || this.tailLimit === 0) return;
    const joined = Buffer.concat([this.tail, chunk]);
    this.tail = joined.length > this.tailLimit ? joined.subarray(joined.length - this.tailLimit) : joined;
  }

  result(): CapturedOutput {
    const head = Buffer.concat(this.head).toString('utf8');
    const kept = this.headBytes + this.tail.length;
    if (kept >= this.total) return { text: head + this.tail.toString('utf8'), totalBytes: this.total, truncated: false };
    const omitted = this.total - kept;
    const text = `${head}\n[… ${omitted} bytes of output omitted …]\n${this.tail.toString('utf8')}`;
    return { text, totalBytes: this.total, truncated: true };
  }
}

const PIPE_GRACE_MS = 2000;

/**
 * The environment variable that marks every process of one call. A process that leaves the
 * call's session (setsid) or is re-parented keeps it, because children inherit the environment;
 * only a command that deliberately clears its environment loses it.
 */
const CALL_MARKER = 'ACX_CALL_ID';

interface CallIdentity {
  /** The leader's pid: its process group and session id. */
  leader: number;
  marker: string;
  /** The leader's start time (clock ticks since boot): anything of the call started later. */
  startTicks: number;
}

/**
 * Kills every process of the call: the process group first (portable), then, where /proc
 * exists, whatever is still in the call's session or carries its marker, until none is left.
 */
function killCall(call: CallIdentity): void {
  killGroup(call.leader);
  // A process can fork while the previous round is being killed; a few rounds catch its children.
  for (let round = 0; round < 10; round++) {
    const found = callProcesses(call);
    if (found.length === 0) return;
    for (const pid of found) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }
}

function killGroup(pid: number | undefined): void {
  if (!pid) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // The group is already gone.
  }
}

/**
 * Live processes of the call, from /proc: those in its process group or its session (a process
 * that made itself a group of its own with setpgid is still in the session), and those started
 * after the leader whose environment carries the call's marker (which catches `setsid`).
 */
function callProcesses(call: CallIdentity): number[] {
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return [];
  }
  const tag = `${CALL_MARKER}=${call.marker}`;
  const found: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    const stat = readStat(pid);
    if (!stat || stat.state === 'Z') continue;
    if (stat.group === call.leader || stat.session === call.leader) {
      found.push(pid);
    } else if (stat.startTicks >= call.startTicks && readEnviron(pid).includes(tag)) {
      found.push(pid);
    }
  }
  return found;
}

/** The fields of /proc/<pid>/stat this needs; the command name may hold spaces and parentheses. */
function readStat(pid: number): { state: string; group: number; session: number; startTicks: number } | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // After "pid (comm)": state ppid pgrp session ... with starttime the 20th.
  return { state: fields[0]!, group: Number(fields[2]), session: Number(fields[3]), startTicks: Number(fields[19]) };
}

function readEnviron(pid: number): string[] {
  try {
    return fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  } catch {
    return [];
  }
}

export function runProcess(file: string, args: readonly string[], options: RunProcessOptions): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const marker = randomBytes(12).toString('hex');
    const child = spawn(file, args, {
      cwd: options.cwd,
      env: { ...options.env, [CALL_MARKER]: marker },
      detached: true, // setsid: a new session and process group whose id is the child's pid
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    // Read at once: the leader's start time bounds which processes need their environment read.
    const call: CallIdentity | undefined = child.pid
      ? { leader: child.pid, marker, startTicks: readStat(child.pid)?.startTicks ?? 0 }
      : undefined;
    const kill = (): void => {
      if (call) killCall(call);
    };
    const stdout = new HeadTailBuffer(options.maxOutputBytes);
    const stderr = new HeadTailBuffer(options.maxOutputBytes);
    let timedOut = false;
    let aborted = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    // A process that left our group (setsid) may still hold the pipes; stop waiting for it.
    const releasePipes = (): void => {
      child.stdout.destroy();
      child.stderr.destroy();
    };

    const timer = setTimeout(() => {
      timedOut = exit === undefined;
      kill();
      setTimeout(releasePipes, PIPE_GRACE_MS).unref();
    }, options.timeoutMs);
    const onAbort = (): void => {
      aborted = true;
      kill();
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.signal?.aborted) onAbort();

    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.stdin.on('error', () => {}); // the command may not read its stdin
    child.stdin.end(options.stdin ?? '');

    child.on('error', (error) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      reject(error);
    });
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      // Stateless: nothing the command started may keep running (or hold our pipes open).
      kill();
      setTimeout(releasePipes, PIPE_GRACE_MS).unref();
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      resolve({
        exitCode: exit?.code ?? code,
        signal: exit?.signal ?? signal,
        timedOut,
        aborted,
        stdout: stdout.result(),
        stderr: stderr.result(),
      });
    });
  });
}

/** A compact report for the model: exit status, then stdout and stderr. */
export function formatProcessResult(result: ProcessResult, timeoutMs: number): string {
  const lines: string[] = [];
  if (result.timedOut) lines.push(`Timed out after ${timeoutMs} ms; the command and everything it started were killed.`);
  else if (result.aborted) lines.push('Cancelled; the command and everything it started were killed.');
  else if (result.exitCode !== null) lines.push(`Exit code: ${result.exitCode}`);
  else lines.push(`Killed by signal ${result.signal ?? 'unknown'}`);
  const section = (label: string, captured: CapturedOutput): void => {
    if (captured.totalBytes === 0) return;
    const note = !captured.truncated
      ? ''
      : captured.kept === 'tail'
        ? ' (truncated: the end kept)'
        : ` (${captured.totalBytes} bytes, truncated: head and tail kept)`;
    lines.push(`--- ${label}${note} ---`, captured.text.replace(/\n$/, ''));
  };
  section(result.combined ? 'output (stdout and stderr)' : 'stdout', result.stdout);
  section('stderr', result.stderr);
  return lines.join('\n');
}
