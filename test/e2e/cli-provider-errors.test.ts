// Issue 9 item 5: a provider error ends `acx run` with one line saying what went wrong and one
// saying what to do, exit 1, and no stack trace (a stack only at ACX_LOG_LEVEL=debug). Driven
// end to end: the CLI as a child process, the real OpenAI provider, the local model server.
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ModelServer, type ScriptedResponse, startModelServer } from '../support/model-server.ts';
import { cleanEnv, ROOT, runAcx, STACK_FRAME } from '../support/cli.ts';
import { scaled } from '../support/time-scale.ts';

const AGENT = `${ROOT}/examples/notes-keeper`;
const KEY = 'sk-test-PROVIDER-ERRORS-2b7c';

// One server for every case; the model id picks the failure, so the cases run side by side.
const FAILURES: Record<string, ScriptedResponse> = {
  auth: { fail: { status: 401 } },
  forbidden: { fail: { status: 403 } },
  'no-such-model': { fail: 'unknown-model' },
  'rate-limited': { fail: { status: 429, headers: { 'retry-after': '0' } } },
  overloaded: { fail: { status: 503 } },
};

let server: ModelServer;
let closedPort: string;
beforeAll(async () => {
  server = await startModelServer({ fallback: (request) => FAILURES[request.view.model] ?? 'unexpected model' });
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  closedPort = `http://127.0.0.1:${(probe.address() as { port: number }).port}/v1`;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
});
afterAll(async () => {
  await server.close();
});

const run = (model: string, baseURL: string, extra: Record<string, string> = {}, flags: string[] = []) =>
  runAcx(['run', AGENT, 'hello', '--model', `openai:${model}`, ...flags], { env: cleanEnv({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: baseURL, ...extra }) });

describe.concurrent('a provider error ends the CLI with what went wrong and what to do (e2e)', { timeout: scaled(120_000) }, () => {
  const cases: Array<[string, string, () => string, string, string]> = [
    ['a 401', 'auth', () => server.openaiBaseURL, 'OpenAI rejected the API key (HTTP 401): Incorrect API key provided.', 'Check OPENAI_API_KEY: it must hold a valid OpenAI API key for BASE.'],
    [
      'a 403',
      'forbidden',
      () => server.openaiBaseURL,
      'OpenAI refused access (HTTP 403): You have insufficient permissions for this operation. Missing scopes: model.request.',
      'The key in OPENAI_API_KEY is valid but may not do this: check that its account, project or region may use the model "forbidden".',
    ],
    [
      'an unknown model',
      'no-such-model',
      () => server.openaiBaseURL,
      'OpenAI has no model "no-such-model" (HTTP 404): The model `no-such-model` does not exist or you do not have access to it.',
      "Check the model id in --model openai:no-such-model (or ACX_MODEL, or agent.json's model) against OpenAI's list of models.",
    ],
  ];
  for (const [name, model, base, what, todo] of cases) {
    it(`${name}: exactly two lines on stderr, exit 1, on the first attempt`, async () => {
      const before = server.requests.filter((r) => r.view.model === model).length;
      const result = await run(model, base());
      expect(result.status).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe(`acx: ${what}\n  → ${todo.replace('BASE', base())}\n`);
      expect(server.requests.filter((r) => r.view.model === model).length - before, 'not retried').toBe(1);
    });
  }

  it('a 429 retried twice: a WARNING per retry, one ERROR, then the two lines', async () => {
    const result = await run('rate-limited', server.openaiBaseURL);
    expect(result.status).toBe(1);
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines.slice(0, 3).map((line) => line.split(' ').slice(0, 5).join(' '))).toEqual([
      'WARNING model call retry fault=rate-limited',
      'WARNING model call retry fault=rate-limited',
      'ERROR model call failed fault=rate-limited',
    ]);
    expect(lines.slice(3)).toEqual([
      'acx: OpenAI is rate-limiting requests (HTTP 429, after 3 attempts): Rate limit reached. Please try again later.',
      '  → Wait a minute and run again, or check the rate limits of your plan. acx retries a 429 at most 2 times within 3 s.',
    ]);
  });

  it('a 5xx after its retries', async () => {
    const result = await run('overloaded', server.openaiBaseURL);
    expect(result.status).toBe(1);
    expect(result.stderr).not.toMatch(STACK_FRAME);
    expect(result.stderr.trimEnd().split('\n').slice(-2)).toEqual([
      'acx: OpenAI failed with a server error (HTTP 503, after 3 attempts): The engine is currently overloaded, please try again later.',
      "  → The fault is on OpenAI's side: try again later. ACX_RESPONSE_RETRIES sets how many times acx retries it (default 2).",
    ]);
  });

  it('a refused connection, retried like a 5xx, names the URL the user configured', async () => {
    const result = await run('m', closedPort);
    expect(result.status).toBe(1);
    expect(result.stderr).not.toMatch(STACK_FRAME);
    expect(result.stderr.match(/^WARNING model call retry fault=transient-transport /gm)).toHaveLength(2);
    expect(result.stderr.trimEnd().split('\n').slice(-2)).toEqual([
      `acx: Cannot connect to OpenAI at ${closedPort}: the connection was refused, after 3 attempts.`,
      '  → Check that the server is running and that OPENAI_BASE_URL (or --base-url) points at it.',
    ]);
  });

  it('an unknown host (RFC 2606 .invalid) fails at once, naming the host', async () => {
    const result = await run('m', 'http://api.acx-test.invalid/v1');
    expect(result.status).toBe(1);
    expect(result.stderr).toBe(
      'acx: Cannot reach OpenAI: the host "api.acx-test.invalid" does not exist (DNS lookup failed for http://api.acx-test.invalid/v1).\n' +
        '  → Check the host name in OPENAI_BASE_URL (or --base-url); it is set to http://api.acx-test.invalid/v1.\n',
    );
  });

  it('acx chat reports it in the conversation, with what to do, and carries on', async () => {
    const chat = await runAcx(['chat', AGENT, '--model', 'openai:auth'], {
      env: cleanEnv({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: server.openaiBaseURL }),
      input: 'hello\n',
    });
    expect(chat.status).toBe(0);
    expect(chat.stdout).toContain(
      `[error] OpenAI rejected the API key (HTTP 401): Incorrect API key provided.\n  → Check OPENAI_API_KEY: it must hold a valid OpenAI API key for ${server.openaiBaseURL}.\n`,
    );
    expect(chat.stderr).toBe('');
  });

  it('--json prints the error as one JSON object on stdout', async () => {
    const result = await run('auth', server.openaiBaseURL, {}, ['--json']);
    expect(result.status).toBe(1);
    expect(result.stderr).toBe('');
    expect(JSON.parse(result.stdout)).toEqual({
      error: {
        code: 'provider-auth',
        message: 'OpenAI rejected the API key (HTTP 401): Incorrect API key provided.',
        hint: `Check OPENAI_API_KEY: it must hold a valid OpenAI API key for ${server.openaiBaseURL}.`,
      },
    });
  });

  it('ACX_LOG_LEVEL=debug adds the stack trace (of the error and its cause) after the two lines', async () => {
    const result = await run('auth', server.openaiBaseURL, { ACX_LOG_LEVEL: 'debug' });
    expect(result.status).toBe(1);
    const at = result.stderr.indexOf('acx: OpenAI rejected the API key');
    expect(at).toBeGreaterThan(-1);
    const tail = result.stderr.slice(at);
    expect(tail).toMatch(/^acx: .*\n {2}→ .*\nProviderError: OpenAI rejected the API key/);
    expect(tail).toMatch(STACK_FRAME);
    expect(tail).toMatch(/caused by: AI_APICallError: Incorrect API key provided\./);
  });
});
