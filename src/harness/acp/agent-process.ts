import type { ChildProcess } from 'node:child_process';
import { Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk';
import { AcxError } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';

/**
 * One ACP agent process and the ACP client connection over its stdio. Agents sometimes print
 * banners or logs on stdout; only lines that are JSON objects reach the protocol (the rest is
 * counted and dropped, never echoed back as parse errors). Exit is observed so a crashed agent
 * turns into a clear error instead of a hang.
 */

export interface ClientHandlers {
  onUpdate(params: acp.SessionNotification): void;
  onPermission(params: acp.RequestPermissionRequest, signal: AbortSignal): Promise<acp.RequestPermissionResponse>;
  onExtRequest?(method: string, params: unknown): Promise<unknown> | undefined;
}

export interface AgentProcess {
  readonly child: ChildProcess;
  readonly connection: acp.ClientConnection;
  /** Settles when the process exits, with a ready-made error describing it. */
  readonly exited: Promise<AcxError>;
  readonly hasExited: boolean;
  readonly noiseLines: number;
  stderrTail(): string;
  /**
   * A request to the agent that fails with the process's exit report when it dies first (a
   * dropped connection usually means the process is exiting), and with an `acp-startup-timeout`
   * error naming `what` when `timeoutMs` is given and passes without an answer.
   */
  call<T>(request: Promise<T>, what: string, timeoutMs?: number): Promise<T>;
  stop(): Promise<void>;
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: () => AcxError): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(message()), ms);
      timer.unref();
    }),
  ]).finally(() => clearTimeout(timer));
}

/** The longest line accepted from the agent, as the SDK's ndJsonStream has it (its default). */
export const MAX_MESSAGE_BYTES = 32 * 1024 * 1024;

/**
 * The agent's stdout as JSON-RPC messages: each line that is a JSON object is parsed once and
 * handed to the connection as it is (the connection checks its JSON-RPC shape and the SDK's
 * schemas validate its params, as they do for ndJsonStream); any other line is noise. A line
 * longer than `maxBytes` ends the stream with an error, so a runaway agent cannot make
 * the host buffer without bound.
 */
function jsonMessages(child: ChildProcess, maxBytes: number, onNoise: () => void): ReadableStream<acp.AnyMessage> {
  const stdout = child.stdout!;
  let buffered = ''; // the line the last chunk left unfinished
  let bufferedBytes = 0;
  let done = false;
  // UTF-8 takes at most 3 bytes per UTF-16 unit: the exact count is needed only near the limit.
  const exceeds = (carried: number, text: string) => carried + text.length * 3 > maxBytes && carried + Buffer.byteLength(text) > maxBytes;
  return new ReadableStream<acp.AnyMessage>({
    start(controller) {
      const finish = (error?: Error) => {
        if (done) return;
        done = true;
        buffered = '';
        stdout.off('data', onData);
        try {
          if (error) controller.error(error);
          else controller.close();
        } catch {}
      };
      const pass = (line: string) => {
        const trimmed = line.trim();
        if (trimmed === '') return;
        if (trimmed.charCodeAt(0) === 0x7b /* { */) {
          let message: acp.AnyMessage | undefined;
          try {
            message = JSON.parse(trimmed) as acp.AnyMessage;
          } catch {}
          if (message !== undefined) return controller.enqueue(message);
        }
        onNoise();
      };
      const tooLarge = () => finish(new AcxError('acp-message-too-large', `The ACP agent sent a line longer than ${maxBytes} bytes; the connection is closed.`));
      const onData = (chunk: string) => {
        let start = 0;
        let nl = chunk.indexOf('\n');
        while (nl >= 0 && !done) {
          const part = chunk.slice(start, nl);
          if (exceeds(bufferedBytes, part)) return tooLarge();
          pass(buffered === '' ? part : buffered + part);
          buffered = '';
          bufferedBytes = 0;
          start = nl + 1;
          nl = chunk.indexOf('\n', start);
        }
        if (done || start === chunk.length) return;
        const rest = start === 0 ? chunk : chunk.slice(start);
        if (exceeds(bufferedBytes, rest)) return tooLarge();
        buffered += rest;
        bufferedBytes += Buffer.byteLength(rest);
      };
      stdout.setEncoding('utf8');
      stdout.on('data', onData);
      stdout.on('end', () => {
        if (!done) pass(buffered);
        finish();
      });
      stdout.on('error', () => finish());
    },
    cancel() {
      done = true;
      buffered = '';
    },
  });
}

/** Messages to the agent, one JSON line each (what the SDK's ndJsonStream writes). */
function jsonLinesTo(child: ChildProcess): WritableStream<acp.AnyMessage> {
  const encoder = new TextEncoder();
  const writer = (Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>).getWriter();
  return new WritableStream<acp.AnyMessage>({
    write: (message) => writer.write(encoder.encode(JSON.stringify(message) + '\n')),
  });
}

export function connectAgentProcess(child: ChildProcess, handlers: ClientHandlers, options: { label: string; logger: Logger; maxMessageBytes?: number }): AgentProcess {
  let stderr = '';
  let noise = 0;
  let exited = false;
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-8000);
  });
  const exitedPromise = new Promise<AcxError>((resolve) => {
    const done = (code: number | null, signal: NodeJS.Signals | null, cause?: Error) => {
      if (exited) return;
      exited = true;
      const how = cause ? `could not start: ${cause.message}` : signal ? `was killed by ${signal}` : `exited with code ${code}`;
      const tail = stderr.trim().split('\n').slice(-15).join('\n');
      resolve(
        new AcxError('acp-agent-exited', `The ACP agent ${options.label} ${how}.${tail ? `\nIts last stderr lines:\n${tail}` : ''}`, {
          hint: 'Check the agent\'s credentials and configuration; open a new session to start it again.',
          ...(cause ? { cause } : {}),
        }),
      );
    };
    child.once('exit', (code, signal) => done(code, signal));
    child.once('error', (error) => done(null, null, error));
  });
  child.stdin?.on('error', () => {}); // writes after exit must not crash the host

  const app = acp
    .client({ name: 'acx' })
    .onNotification(acp.methods.client.session.update, ({ params }) => handlers.onUpdate(params))
    .onRequest(acp.methods.client.session.requestPermission, ({ params, signal }) => handlers.onPermission(params, signal))
    .onRequest('*', async ({ method, params }) => {
      const answer = handlers.onExtRequest?.(method, params);
      if (answer) return answer;
      throw acp.RequestError.methodNotFound(method);
    });
  const readable = jsonMessages(child, options.maxMessageBytes ?? MAX_MESSAGE_BYTES, () => {
    noise += 1;
    if (noise === 1) options.logger.debug('acp agent stdout noise dropped', { agent: options.label });
  });
  const connection = app.connect({ readable, writable: jsonLinesTo(child) });

  return {
    child,
    connection,
    exited: exitedPromise,
    get hasExited() {
      return exited;
    },
    get noiseLines() {
      return noise;
    },
    stderrTail: () => stderr,
    call(request, what, timeoutMs) {
      const settled = request.catch(async (error: unknown) => {
        const exit = await Promise.race([exitedPromise, new Promise<undefined>((r) => setTimeout(() => r(undefined), 2000).unref())]);
        throw exit ?? error;
      });
      const raced = Promise.race([settled, exitedPromise.then((e) => Promise.reject(e))]);
      return timeoutMs === undefined
        ? raced
        : withTimeout(raced, timeoutMs, () => new AcxError('acp-startup-timeout', `${options.label} did not answer ${what} within ${timeoutMs} ms.`, { hint: 'Raise startupTimeoutMs, or check the agent\'s stderr and configuration.' }));
    },
    async stop() {
      connection.close();
      const pid = child.pid;
      if (exited) return reapGroup(pid);
      const signalTree = (signal: NodeJS.Signals) => {
        try {
          if (pid !== undefined && process.platform !== 'win32') process.kill(-pid, signal);
          else child.kill(signal);
        } catch {
          try {
            child.kill(signal);
          } catch {}
        }
      };
      child.stdin?.end();
      signalTree('SIGTERM');
      const killer = setTimeout(() => signalTree('SIGKILL'), 3000);
      await exitedPromise;
      clearTimeout(killer);
      await reapGroup(pid);
    },
  };
}

/**
 * The agent's own children (Claude Code's CLI, MCP servers it started) can outlive it for a
 * moment and keep writing below $HOME. Wait for its process group to empty, then kill what is left.
 */
async function reapGroup(pid: number | undefined, graceMs = 2000): Promise<void> {
  if (pid === undefined || process.platform === 'win32') return;
  const alive = () => {
    try {
      process.kill(-pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  const deadline = Date.now() + graceMs;
  while (alive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
  if (alive()) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {}
  }
}
