import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn, type IPty } from '@lydell/node-pty';
import { afterEach, describe, expect, it } from 'vitest';
import { QUICKSTART_AGENT, QUICKSTART_CASSETTE, QUICKSTART_PROMPT } from '../../scripts/quickstart.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { scaled } from '../support/time-scale.ts';

/**
 * `acx chat` in a real pseudo-terminal, typed at like a person would: streamed replies, a line
 * per tool call, approvals answered at the prompt, Ctrl-C cancelling the turn (not the process).
 */
const ROOT = join(import.meta.dirname, '../..');

class Terminal {
  readonly pty: IPty;
  output = '';
  readonly exited: Promise<number>;

  constructor(args: string[], env: Record<string, string>) {
    this.pty = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', join(ROOT, 'bin/acx.js'), ...args], {
      cwd: ROOT,
      cols: 200,
      rows: 50,
      env,
    });
    this.pty.onData((data) => (this.output += data));
    this.exited = new Promise((resolve) => this.pty.onExit(({ exitCode }) => resolve(exitCode)));
  }

  /** Waits until the screen shows `text` after position `from`; returns where it ends. */
  async waitFor(text: string | RegExp, from = 0): Promise<number> {
    for (let i = 0; i < scaled(1200); i++) {
      const rest = this.output.slice(from);
      const index = typeof text === 'string' ? rest.indexOf(text) : rest.search(text);
      if (index >= 0) return from + index + (typeof text === 'string' ? text.length : 1);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`the terminal never showed ${String(text)}; it shows:\n${this.output}`);
  }

  type(text: string): void {
    this.pty.write(text);
  }
}

function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/API_KEY|TOKEN|BASE_URL|^ACX_/.test(key)) env[key] = value;
  }
  return { ...env, TERM: 'xterm', ...extra };
}

let server: ModelServer | undefined;
let terminal: Terminal | undefined;
afterEach(async () => {
  terminal?.pty.kill();
  await server?.close();
  server = undefined;
  terminal = undefined;
});

describe('acx chat in a pseudo-terminal (e2e)', { timeout: scaled(120_000) }, () => {
  it('streams a replayed reply with a line per tool call, then leaves on Ctrl-D', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-chat-'));
    terminal = new Terminal(['chat', QUICKSTART_AGENT, '--replay', QUICKSTART_CASSETTE, '--home', home, '--config-home', home], cleanEnv());
    let at = await terminal.waitFor('you> ');
    terminal.type(`${QUICKSTART_PROMPT}\r`);
    at = await terminal.waitFor('↳ memory_write', at);
    at = await terminal.waitFor('↳ memory_search', at);
    at = await terminal.waitFor('agent> Noted: the release freeze starts on 12 December.', at);
    await terminal.waitFor('you> ', at);
    terminal.type('\x04');
    expect(await terminal.exited).toBe(0);
  });

  it('Ctrl-C cancels the running turn, not the process; approvals are answered at the prompt', async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    server = await startModelServer({
      script: [
        { text: 'Thinking about it at length', pauseUntil: held },
        { toolCalls: [{ name: 'memory_write', input: { key: 'team/lunch', value: 'Lunch is at noon.' } }] },
        { text: 'Stored: lunch is at noon.' },
      ],
    });
    const home = mkdtempSync(join(tmpdir(), 'acx-chat-'));
    terminal = new Terminal(
      ['chat', QUICKSTART_AGENT, '--model', 'openai:demo', '--permission-mode', 'allow-reads', '--home', home, '--config-home', home],
      cleanEnv({ OPENAI_API_KEY: 'sk-local-test', OPENAI_BASE_URL: server.openaiBaseURL }),
    );
    let at = await terminal.waitFor('you> ');
    terminal.type('Tell me a long story\r');
    at = await terminal.waitFor('agent> Thinking', at);
    terminal.type('\x03');
    at = await terminal.waitFor('[turn cancelled]', at);
    release();
    at = await terminal.waitFor('you> ', at);

    terminal.type('Remember that lunch is at noon\r');
    at = await terminal.waitFor('memory_write wants to run', at);
    at = await terminal.waitFor('allow? [y/N]', at);
    terminal.type('y\r');
    at = await terminal.waitFor('agent> Stored: lunch is at noon.', at);
    await terminal.waitFor('you> ', at);
    terminal.type('/exit\r');
    expect(await terminal.exited).toBe(0);
    expect(server.requests).toHaveLength(3);
  });

  it('a provider error that echoes the key is shown with the key scrubbed', async () => {
    const key = 'ChatPlainKey-q8Rw2Zt5';
    server = await startModelServer({ script: [{ fail: { status: 401, message: `Incorrect API key provided: ${key}.` } }] });
    const home = mkdtempSync(join(tmpdir(), 'acx-chat-'));
    terminal = new Terminal(['chat', QUICKSTART_AGENT, '--model', 'openai:demo', '--home', home, '--config-home', home], cleanEnv({ OPENAI_API_KEY: key, OPENAI_BASE_URL: server.openaiBaseURL }));
    let at = await terminal.waitFor('you> ');
    terminal.type('are you there?\r');
    at = await terminal.waitFor('[error] OpenAI rejected the API key (HTTP 401): Incorrect API key provided: [REDACTED].', at);
    await terminal.waitFor('you> ', at);
    terminal.type('/exit\r');
    expect(await terminal.exited).toBe(0);
    expect(terminal.output).not.toContain(key);
  });
});
