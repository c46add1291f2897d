// Starts the chat app's server (server.ts) as a child process and says whether it is still alive.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import type { ChatAppConfig } from './server.ts';
import type { RecordedRequest, ResponderResult } from '../model-server.ts';

export interface ChatApp {
  url: string;
  child: ChildProcess;
  /** Everything the server wrote to stderr (what it logged of refused requests, or a crash). */
  stderr(): string;
  /** True while the process runs: a crash (an unhandled 'error' event) ends it. */
  alive(): boolean;
  /** Kills the server outright (SIGKILL: no cleanup runs, as in a crash) and waits until it is gone. */
  crash(): Promise<void>;
  close(): Promise<void>;
}

export function startChatApp(options: ChatAppConfig): Promise<ChatApp> {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'server.ts'), JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ACX_LOG_LEVEL: 'warn' } });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const listening = /listening (\S+)/.exec(out);
      if (listening) {
        resolve({
          url: listening[1]!,
          child,
          stderr: () => err,
          alive: () => child.exitCode === null && child.signalCode === null,
          crash: async () => {
            child.kill('SIGKILL');
            await exited;
          },
          close: async () => {
            if (child.exitCode === null && child.signalCode === null) child.kill();
            await exited;
          },
        });
      }
    });
    child.once('exit', (code) => reject(new Error(`the chat app exited (${code}) before it served:\n${err}`)));
  });
}

/**
 * The model behind the chat app, by rule: a user message naming deploy or weather calls that
 * tool; a tool's result is reported; anything else is echoed. Call ids are the server's, unique.
 */
export function chatModel(request: RecordedRequest): ResponderResult {
  const messages = request.view.messages.filter((m) => !(m.role === 'user' && m.text.startsWith('<acx-brief>')));
  const last = messages.at(-1);
  if (last?.role === 'tool') return { text: `Done: ${(last.toolResults ?? []).map((r) => r.output).join('; ')}` };
  const text = last?.text ?? '';
  if (/deploy/i.test(text)) return { toolCalls: [{ name: 'deploy', input: { env: 'prod' } }] };
  if (/weather/i.test(text)) return { toolCalls: [{ name: 'weather', input: { city: 'Paris' } }] };
  return { text: `You said: ${text}` };
}
