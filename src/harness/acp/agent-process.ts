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

function jsonLinesOnly(child: ChildProcess, onNoise: () => void): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let buffered = '';
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const pass = (line: string) => {
        const trimmed = line.trim();
        if (trimmed === '') return;
        if (trimmed.startsWith('{')) {
          try {
            JSON.parse(trimmed);
            controller.enqueue(encoder.encode(trimmed + '\n'));
            return;
          } catch {}
        }
        onNoise();
      };
      child.stdout!.setEncoding('utf8');
      child.stdout!.on('data', (chunk: string) => {
        buffered += chunk;
        let nl: number;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          pass(buffered.slice(0, nl));
          buffered = buffered.slice(nl + 1);
        }
      });
      child.stdout!.on('end', () => {
        pass(buffered);
        buffered = '';
        try {
          controller.close();
        } catch {}
      });
      child.stdout!.on('error', () => {
        try {
          controller.close();
        } catch {}
      });
    },
  });
}

export function connectAgentProcess(child: ChildProcess, handlers: ClientHandlers, options: { label: string; logger: Logger }): AgentProcess {
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
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>, jsonLinesOnly(child, () => {
    noise += 1;
    if (noise === 1) options.logger.debug('acp agent stdout noise dropped', { agent: options.label });
  }));
  const connection = app.connect(stream);

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
