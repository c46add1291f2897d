// Item 13, `acx run` end to end as a user runs it: a real child process on the pinned Node, the
// example agent replayed from its cassette with no API key in the environment.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUICKSTART_PROMPT } from '../../scripts/quickstart.ts';
import { installConfigHome } from '../../src/app/install.ts';
import { Journal } from '../../src/store/journal.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { ACX_VERSION } from '../../src/util/version.ts';
import { filesHolding } from '../support/files.ts';
import { type ModelServer, respondByTurn, startModelServer } from '../support/model-server.ts';
import { scaled } from '../support/time-scale.ts';

const ROOT = join(import.meta.dirname, '../..');
const AGENT = join(ROOT, 'examples/notes-keeper');
const CASSETTE = join(AGENT, 'cassettes/quickstart.json');

/** The caller's environment minus every model key and acx setting: a fresh machine. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/API_KEY|_TOKEN|^ACX_|_BASE_URL$/.test(key)) continue;
    env[key] = value;
  }
  return { ...env, ...extra };
}

/** Runs acx as a child process (async, so this file's cases run side by side). */
function acx(
  args: string[],
  env = cleanEnv(),
  home = mkdtempSync(join(tmpdir(), 'acx-cli-')),
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'bin/acx.js'), ...args, '--home', home, '--config-home', home], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

// Each case spawns the CLI (~2 s of CPU); on a loaded machine that is slow, hence the timeout.
describe.concurrent('acx run (e2e)', { timeout: scaled(120_000) }, () => {
  it('replays the example agent offline with no API key and prints the answer', async () => {
    const run = await acx(['run', AGENT, QUICKSTART_PROMPT, '--replay', CASSETTE]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/release freeze starts on 12 December/);
    expect(run.stdout).toMatch(/Thursday 10 December/);
    expect(run.stderr, 'no error or warning at the default level').not.toMatch(/ERROR|WARNING/);
  });

  it('the first run after an upgrade re-stamps the config home (acx run reconciles it) and says so', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-cli-'));
    installConfigHome({ configHome: home, version: '0.0.1-old', logger: silentLogger });
    const run = await acx(['run', AGENT, QUICKSTART_PROMPT, '--replay', CASSETTE], cleanEnv({ ACX_LOG_LEVEL: 'info' }), home);
    expect(run.status, run.stderr).toBe(0);
    expect(readFileSync(join(home, '.version'), 'utf8').trim()).toBe(ACX_VERSION);
    expect(run.stderr).toMatch(/config_home_upgrade .*from=0\.0\.1-old/);
  });

  it('--json prints the turn result as one JSON document', async () => {
    const run = await acx(['run', AGENT, QUICKSTART_PROMPT, '--replay', CASSETTE, '--json']);
    expect(run.status, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as Record<string, unknown>;
    // output and unspoken are left out when there are none (structured output, tool speech mode).
    expect(Object.keys(result).sort()).toEqual(['finishReason', 'sessionId', 'steps', 'text', 'toolCalls', 'turnId', 'usage']);
    expect(result).toMatchObject({
      sessionId: expect.any(String),
      turnId: expect.any(String),
      text: expect.stringMatching(/Thursday 10 December/),
      finishReason: 'stop',
      steps: 2,
      usage: { inputTokens: expect.any(Number), outputTokens: expect.any(Number), totalTokens: expect.any(Number) },
    });
    const calls = result.toolCalls as Array<{ toolName: string }>;
    expect(calls.map((c) => c.toolName)).toEqual(['memory_write', 'memory_search']);
  });

  it('replaying with a different prompt fails clearly, naming the model call', async () => {
    const run = await acx(['run', AGENT, 'A completely different question?', '--replay', CASSETTE]);
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/Replay mismatch at model call 1/);
    expect(run.stdout).toBe('');
  });

  it('with no model selected and no replay: exit 1 and a hint naming ACX_MODEL', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'acx-agent-'));
    writeFileSync(join(dir, 'agent.json'), JSON.stringify({ id: 'no-model', name: 'No Model', version: '0.1.0' }));
    mkdirSync(join(dir, 'prompts'));
    writeFileSync(join(dir, 'prompts/system-prompt.md'), 'You are helpful.');
    const run = await acx(['run', dir, 'hello']);
    expect(run.status, run.stderr).toBe(1);
    expect(run.stderr).toMatch(/No model selected/);
    expect(run.stderr).toMatch(/ACX_MODEL/);
    expect(run.stderr, 'a clean error, not a stack trace').not.toMatch(/\n\s+at /);
  });
});

describe.concurrent('acx run against a live model (e2e, the local model server)', { timeout: scaled(120_000) }, () => {
  const KEY = 'sk-test-CLIKEY-5d1e0f9a7b3c';
  let server: ModelServer;
  beforeAll(async () => {
    server = await startModelServer({
      fallback: respondByTurn(({ request }) => {
        // A provider that quotes the key it was sent in its 401, as OpenAI's does.
        if (request.view.messages.some((m) => m.role === 'user' && m.text?.startsWith('AUTH-ECHO'))) {
          return { fail: { status: 401, message: `Incorrect API key provided: ${request.headers.authorization?.replace(/^Bearer /, '')}.` } };
        }
        const tools = request.view.messages.filter((m) => m.role === 'tool').length;
        // Two writes, one after the other: each needs an approval under allow-reads.
        if (request.view.messages.some((m) => m.role === 'user' && m.text?.startsWith('DENY-TWICE')) && tools < 2) {
          return { toolCalls: [{ name: 'memory_write', input: { key: `cli/denied-${tools}`, value: 'x' } }] };
        }
        if (tools === 0) {
          return { toolCalls: [{ name: 'memory_write', input: { key: 'cli/fact', value: 'The build is green.' } }] };
        }
        return `Stored. (${request.view.messages.find((m) => m.role === 'user')?.text})`;
      }),
    });
  });
  afterAll(async () => {
    await server.close();
  });
  const live = () => cleanEnv({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: server.openaiBaseURL, ACX_LOG_LEVEL: 'info' });

  it("with no ceiling configured, a vLLM server's stated context window is the engine's limit", async () => {
    // A vLLM-shaped front: GET /v1/models states the window; everything else goes to the model server.
    let asked = 0;
    const front = createServer(async (req, res) => {
      if (req.method === 'GET' && req.url === '/v1/models') {
        asked += 1;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: [{ id: 'qwen-local', max_model_len: 32_768 }] }));
        return;
      }
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const upstream = await fetch(`${server.url}${req.url}`, { method: req.method, headers: { 'content-type': 'application/json', authorization: req.headers.authorization ?? '' }, body: Buffer.concat(chunks) });
      res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' }).end(Buffer.from(await upstream.arrayBuffer()));
    });
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
    try {
      const home = mkdtempSync(join(tmpdir(), 'acx-cli-'));
      const base = `http://127.0.0.1:${(front.address() as AddressInfo).port}/v1`;
      const run = await acx(['run', AGENT, 'CLI-WINDOW remember that the build is green', '--model', 'vllm:qwen-local'], cleanEnv({ ACX_BASE_URL: base, ACX_LOG_LEVEL: 'info' }), home);
      expect(run.status, run.stderr).toBe(0);
      expect(run.stderr).toMatch(/INFO context limit limit=32768 source=model compact_at=16384/);
      expect(asked).toBe(1);
      const configured = await acx(['run', AGENT, 'CLI-WINDOW again', '--model', 'vllm:qwen-local', '--context-tokens', '100000'], cleanEnv({ ACX_BASE_URL: base, ACX_LOG_LEVEL: 'info' }), home);
      expect(configured.stderr, 'a configured ceiling wins').toMatch(/INFO context limit limit=100000 source=config/);
      expect(asked, 'and nothing is asked').toBe(1);
    } finally {
      front.closeAllConnections();
      await new Promise((resolve) => front.close(resolve));
    }
  });

  it('--model, model_params.json and --param reach the wire; harness-owned keys are stripped; no key or prompt in the log', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-cli-'));
    writeFileSync(join(home, 'model_params.json'), '{"temperature": 0.4, "maxOutputTokens": 300, "model": "hijack"}');
    const prompt = 'CLI-PROMPT-4471 remember that the build is green';
    const run = await acx(['run', AGENT, prompt, '--model', 'openai:cli-model', '--param', 'temperature=0.25'], live(), home);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/WARNING model_params key stripped key=model/);
    expect(run.stdout).toContain(`Stored. (${prompt})`);
    const mine = server.requests.filter((r) => JSON.stringify(r.body).includes('CLI-PROMPT-4471'));
    expect(mine.length).toBe(2);
    for (const request of mine) {
      expect(request.body.model).toBe('cli-model');
      expect(request.body.temperature, '--param overrides the file').toBe(0.25);
      expect(request.body.max_output_tokens, 'the file reaches the wire').toBe(300);
    }
    expect(run.stderr).toMatch(/INFO llm provider=openai model=cli-model/);
    expect(run.stderr).not.toContain(KEY);
    expect(run.stderr).not.toContain('CLI-PROMPT-4471');
  });

  it('a call it must deny for want of an approval is told to the user once, with the remedy', async () => {
    const run = await acx(['run', AGENT, 'DENY-TWICE remember two things', '--model', 'openai:cli-model', '--permission-mode', 'allow-reads'], cleanEnv({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: server.openaiBaseURL }));
    expect(run.status, run.stderr).toBe(0);
    const warnings = run.stderr.split('\n').filter((line) => line.startsWith('WARNING'));
    expect(warnings).toEqual([
      'WARNING tool call denied tool=memory_write permission_mode=allow-reads why="acx run is non-interactive and nobody can approve it" hint="rerun with --yes or --permission-mode allow-all to allow it"',
    ]);
    const yes = await acx(['run', AGENT, 'DENY-TWICE remember two things', '--model', 'openai:cli-model', '--permission-mode', 'allow-reads', '--yes'], cleanEnv({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: server.openaiBaseURL }));
    expect(yes.stderr).not.toMatch(/WARNING/);
  });

  it('--record then --replay: the same answer offline, with no key and no server', async () => {
    const cassette = join(mkdtempSync(join(tmpdir(), 'acx-cassette-')), 'run.json');
    const prompt = 'CLI-RECORD-9902 remember the build';
    const recorded = await acx(['run', AGENT, prompt, '--model', 'openai:cli-model', '--record', cassette], live());
    expect(recorded.status, recorded.stderr).toBe(0);
    const replayed = await acx(['run', AGENT, prompt, '--replay', cassette]);
    expect(replayed.status, replayed.stderr).toBe(0);
    expect(replayed.stdout).toBe(recorded.stdout);
    expect(readFileSync(cassette, 'utf8')).not.toContain(KEY);
  });

  // Keys with no vendor prefix: no pattern knows them, only their live value does.
  const echoCases = [
    { provider: 'an OpenAI-compatible server (ACX_API_KEY)', model: 'openai-compatible:echo-model', key: 'LocalKey-Zq81mLkP04vwRtY6', env: () => ({ ACX_BASE_URL: server.openaiBaseURL }), variable: 'ACX_API_KEY', rejectedBy: 'the OpenAI-compatible server' },
    { provider: 'OpenAI (OPENAI_API_KEY)', model: 'openai:echo-model', key: 'OrgKey-7Hq2bN5xWc3Vt9Ld', env: () => ({ OPENAI_BASE_URL: server.openaiBaseURL }), variable: 'OPENAI_API_KEY', rejectedBy: 'OpenAI' },
  ];
  for (const echo of echoCases) {
    it(`a 401 from ${echo.provider} that echoes the key: the key is nowhere in stderr or the state directory`, async () => {
      const home = mkdtempSync(join(tmpdir(), 'acx-cli-'));
      const run = await acx(['run', AGENT, 'AUTH-ECHO are you there?', '--model', echo.model], cleanEnv({ ...echo.env(), [echo.variable]: echo.key, ACX_LOG_LEVEL: 'debug' }), home);
      expect(run.status).toBe(1);
      expect(run.stderr).toMatch(/^acx: .*Incorrect API key provided: \[REDACTED\]\./m);
      expect(run.stderr).not.toContain(echo.key);
      const journalPath = readdirSync(home, { recursive: true, encoding: 'utf8' }).find((p) => p.endsWith('journal.db'))!;
      const journal = new Journal(join(home, journalPath));
      try {
        const [session] = journal.listSessions();
        expect(journal.turns(session!.id).map((turn) => [turn.status, turn.error])).toEqual([
          ['failed', `[turn failed: ${echo.rejectedBy} rejected the API key (HTTP 401): Incorrect API key provided: [REDACTED].]`],
        ]);
      } finally {
        journal.close();
      }
      expect(filesHolding(home, echo.key)).toEqual([]);
    });
  }

  it('an exchange that quotes AWS credentials is kept in memory with them scrubbed', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-cli-'));
    const secret = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
    const prompt = `CLI-AWS-3310 remember that the deploy uses AKIAIOSFODNN7EXAMPLE ${secret}`;
    const run = await acx(['run', AGENT, prompt, '--model', 'openai:cli-model'], live(), home);
    expect(run.status, run.stderr).toBe(0);
    const memoryPath = readdirSync(home, { recursive: true, encoding: 'utf8' }).find((p) => p.endsWith('memory.db'))!;
    const memory = new DatabaseSync(join(home, memoryPath), { readOnly: true });
    try {
      const rows = memory.prepare("SELECT value FROM memories WHERE key LIKE 'observed/%'").all() as Array<{ value: string }>;
      expect(rows.map((row) => row.value.split('\n')[0])).toEqual(['User: CLI-AWS-3310 remember that the deploy uses [REDACTED] [REDACTED]']);
    } finally {
      memory.close();
    }
    // The transcript keeps what the user wrote; nothing else under the home does.
    expect(filesHolding(home, secret).filter((p) => !/journal\.db(-wal|-shm)?$/.test(p))).toEqual([]);
  });

  it('an MCP server the agent ships that does not start stops the run before its turn; marked optional, or in the config home, it only warns', async () => {
    const agent = join(mkdtempSync(join(tmpdir(), 'acx-run-mcp-')), 'agent');
    cpSync(AGENT, agent, { recursive: true });
    mkdirSync(join(agent, 'mcp'));
    const crashing = { command: process.execPath, args: [join(ROOT, 'test/fixtures/mcp/crash-server.ts')] };
    writeFileSync(join(agent, 'mcp', 'widgets.json'), JSON.stringify(crashing));
    const refused = await acx(['run', agent, QUICKSTART_PROMPT, '--replay', CASSETTE]);
    expect(refused.status, refused.stderr).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/WARNING mcp server skipped server=widgets source=\S+widgets\.json required=true reason="failed to start or initialize: .*fatal: cannot open the widget database/);
    expect(refused.stderr).toMatch(/^acx: No turn was started: the required MCP server "widgets" did not start\. widgets \(\S+widgets\.json\): failed to start or initialize/m);
    expect(refused.stderr).toMatch(/^ {2}→ Fix the server and try again .*To let turns run without it: set "optional": true in \S+widgets\.json\.$/m);

    writeFileSync(join(agent, 'mcp', 'widgets.json'), JSON.stringify({ ...crashing, optional: true }));
    const optional = await acx(['run', agent, QUICKSTART_PROMPT, '--replay', CASSETTE]);
    expect(optional.status, optional.stderr).toBe(0);
    expect(optional.stdout).toMatch(/release freeze starts on 12 December/);
    expect(optional.stderr).toMatch(/WARNING mcp server skipped server=widgets .*required=false/);

    rmSync(join(agent, 'mcp'), { recursive: true });
    const home = mkdtempSync(join(tmpdir(), 'acx-cli-'));
    mkdirSync(join(home, 'mcp'));
    writeFileSync(join(home, 'mcp', 'widgets.json'), JSON.stringify(crashing));
    const hosted = await acx(['run', agent, QUICKSTART_PROMPT, '--replay', CASSETTE], cleanEnv(), home);
    expect(hosted.status, hosted.stderr).toBe(0);
    expect(hosted.stdout).toMatch(/release freeze starts on 12 December/);
    expect(hosted.stderr).toMatch(/WARNING mcp server skipped server=widgets .*required=false/);
  });

  it('a malformed model_params.json fails at start-up, before any model call', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-cli-'));
    writeFileSync(join(home, 'model_params.json'), '{"temperature": ');
    const before = server.requests.length;
    const run = await acx(['run', AGENT, 'CLI-MALFORMED-1', '--model', 'openai:cli-model'], live(), home);
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/model_params\.json is not valid JSON/);
    expect(server.requests.slice(before).some((r) => JSON.stringify(r.body).includes('CLI-MALFORMED-1'))).toBe(false);
  });
});
