import { spawn } from 'node:child_process';

/**
 * Runs one process in its own process group with a time limit and an output limit. On timeout,
 * cancellation or when the main process exits, the whole group is killed, so a background
 * grandchild cannot outlive the call. Output beyond the limit keeps its head and its tail.
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
  /** Bytes the stream produced in total. */
  totalBytes: number;
  truncated: boolean;
}

export interface ProcessResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  aborted: boolean;
  stdout: CapturedOutput;
  stderr: CapturedOutput;
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

export function killGroup(pid: number | undefined): void {
  if (!pid) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // The group is already gone.
  }
}

export function runProcess(file: string, args: readonly string[], options: RunProcessOptions): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      cwd: options.cwd,
      env: options.env,
      detached: true, // a new process group whose id is the child's pid
      stdio: ['pipe', 'pipe', 'pipe'],
    });
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
      killGroup(child.pid);
      setTimeout(releasePipes, PIPE_GRACE_MS).unref();
    }, options.timeoutMs);
    const onAbort = (): void => {
      aborted = true;
      killGroup(child.pid);
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
      killGroup(child.pid);
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
    const note = captured.truncated ? ` (${captured.totalBytes} bytes, truncated: head and tail kept)` : '';
    lines.push(`--- ${label}${note} ---`, captured.text.replace(/\n$/, ''));
  };
  section('stdout', result.stdout);
  section('stderr', result.stderr);
  return lines.join('\n');
}
