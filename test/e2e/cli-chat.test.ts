import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn, type IPty } from '@lydell/node-pty';
import { afterEach, describe, expect, it } from 'vitest';
import { QUICKSTART_AGENT, QUICKSTART_CASSETTE, QUICKSTART_PROMPT } from '../../scripts/quickstart.ts';
import { respondByTurn, startModelServer, type ModelServer } from '../support/model-server.ts';
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

  it('/help lists the chat commands, /session says how to come back, /tools lists the tools; an unknown /word goes nowhere', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-chat-'));
    terminal = new Terminal(['chat', QUICKSTART_AGENT, '--replay', QUICKSTART_CASSETTE, '--home', home, '--config-home', home], cleanEnv());
    let at = await terminal.waitFor('/help lists commands; /exit leaves.');
    at = await terminal.waitFor('you> ', at);
    terminal.type('/help\r');
    at = await terminal.waitFor('/session  this session\'s id, and how to come back to it', at);
    at = await terminal.waitFor('you> ', at);
    terminal.type('/session\r');
    at = await terminal.waitFor(new RegExp(`to come back to it: acx chat ${QUICKSTART_AGENT} --session [\\w-]+`), at);
    at = await terminal.waitFor('you> ', at);
    terminal.type('/tools\r');
    at = await terminal.waitFor('memory_write', at);
    at = await terminal.waitFor('you> ', at);
    // Were it sent, the replay cassette would fail on a prompt it never recorded.
    terminal.type('/frobnicate\r');
    at = await terminal.waitFor('unknown command /frobnicate; /help lists the commands', at);
    at = await terminal.waitFor('you> ', at);
    terminal.type('/quit\r');
    expect(await terminal.exited).toBe(0);
    expect(terminal.output).not.toContain('[error]');
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

  it("an MCP server's question (elicitation) is asked at the prompt, field by field, and the answer reaches the server", async () => {
    server = await startModelServer({
      // Each prompt: call the tool, then say what it returned.
      fallback: respondByTurn(({ request, turn }) => {
        const results = request.view.messages.flatMap((m) => m.toolResults ?? []);
        return turn % 2 === 1 ? `The server said: ${results.at(-1)!.output}` : { toolCalls: [{ name: 'accounts__sign_up', input: {} }] };
      }),
    });
    const home = mkdtempSync(join(tmpdir(), 'acx-chat-'));
    mkdirSync(join(home, 'mcp'));
    writeFileSync(join(home, 'mcp', 'accounts.json'), JSON.stringify({ command: process.execPath, args: [join(ROOT, 'test/fixtures/mcp/elicit-server.ts')] }));
    terminal = new Terminal(
      ['chat', 'default', '--model', 'openai:demo', '--permission-mode', 'allow-all', '--home', home, '--config-home', home],
      cleanEnv({ OPENAI_API_KEY: 'sk-local-test', OPENAI_BASE_URL: server.openaiBaseURL }),
    );
    let at = 0;
    /** Waits for each screen text in turn, typing what follows it (a line) when there is something. */
    const converse = async (...steps: Array<[string, string?]>) => {
      for (const [screen, typed] of steps) {
        at = await terminal!.waitFor(screen, at);
        if (typed !== undefined) terminal!.type(`${typed}\r`);
      }
    };
    await converse(
      ['you> ', 'Sign me up'],
      ['? accounts asks (during accounts__sign_up): Which name and plan should the account have?'],
      ['answer? [y/N] ', 'y'],
      ['Your name (text; required): ', ''],
      ['an answer is required'],
      ['Your name (text; required): ', 'Ada'],
      ['Plan (one of free, team, enterprise; default free): ', 'gold'],
      ['answer one of free, team, enterprise'],
      ['Plan (one of free, team, enterprise; default free): ', 'team'],
      ['Subscribe to the newsletter (y/n; default n): ', ''],
      ['agent> The server said: signed up {"name":"Ada","plan":"team","subscribe":false}'],
      // Said no to, the server hears a decline.
      ['you> ', 'Sign me up again'],
      ['answer? [y/N] ', 'n'],
      ['agent> The server said: not signed up: the user chose decline'],
    );
    await terminal.waitFor('you> ', at);
    terminal.type('/exit\r');
    expect(await terminal.exited).toBe(0);
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
