// Item 8, transient retries: a provider 5xx, a truncated/malformed response or a transport
// failure is re-requested (default 2 extra attempts, each logged); a 429 at most twice within 3 s
// of sleep, honouring Retry-After; nothing else is; exhaustion ends in an ERROR naming the
// attempts. What finally fails is a ProviderError saying what went wrong and what to do.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from 'node:net';
import { APICallError } from 'ai';
import { ProviderError } from '../../src/engine/provider-failure.ts';
import { resolveModel } from '../../src/model/providers.ts';
import type { ModelServer, ScriptedResponse } from '../support/model-server.ts';
import { anthropicModel, linesOf, openaiModel, rig, startModelServer } from './helpers.ts';

/** A base URL on a loopback port nothing listens on (bound, then released). */
async function closedPortUrl(): Promise<string> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return `http://127.0.0.1:${port}/v1`;
}

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

const retryLines = (lines: string[]) => linesOf(lines, 'WARNING', 'model call retry');

describe('transient failures are retried', () => {
  it('a 500 then success: one retry, logged, and the turn succeeds', async () => {
    server.enqueue({ fail: { status: 500 } }, 'recovered');
    const { agent, logger } = rig(await openaiModel(server));
    const result = await agent.generate({ prompt: 'hello' });
    expect(result.text).toBe('recovered');
    expect(server.requests).toHaveLength(2);
    const retries = retryLines(logger.lines);
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatch(/fault=transient-server attempt=1 of=3/);
    expect(linesOf(logger.lines, 'ERROR', 'model call failed')).toEqual([]);
  });

  it('the two requests are the same call re-issued unchanged (apart from the brief clock)', async () => {
    server.enqueue({ fail: { status: 503 } }, 'ok');
    const { agent } = rig(await openaiModel(server), { harness: { clock: () => new Date('2026-01-02T03:04:05Z') } });
    await agent.generate({ prompt: 'hello' });
    expect(server.requests[1]!.body).toEqual(server.requests[0]!.body);
  });

  it('an Anthropic 529 (overloaded) is a provider 5xx and is retried', async () => {
    server.enqueue({ fail: { status: 529 } }, 'recovered');
    const { agent, logger } = rig(await anthropicModel(server));
    expect((await agent.generate({ prompt: 'hello' })).text).toBe('recovered');
    expect(retryLines(logger.lines)).toHaveLength(1);
  });

  for (const surface of ['responses', 'chat'] as const) {
    it(`a truncated response (the stream cut mid-event) is retried on the openai ${surface} wire`, async () => {
      server.enqueue({ text: 'this answer never arrives whole', fail: 'truncated' }, 'the whole answer');
      const { agent, logger } = rig(await openaiModel(server, surface));
      const result = await agent.generate({ prompt: 'hello' }).catch((e: Error) => ({ text: `turn failed: ${e.message}` }));
      expect(result.text, 'a truncated stream (200, cut mid-event) must be retried, not fail the turn').toBe('the whole answer');
      expect(server.requests).toHaveLength(2);
      expect(retryLines(logger.lines)[0]).toMatch(/fault=transient-malformed/);
    });
  }

  it('a truncated response is retried on the Anthropic wire', async () => {
    server.enqueue({ text: 'this answer never arrives whole', fail: 'truncated' }, 'the whole answer');
    const { agent } = rig(await anthropicModel(server));
    const result = await agent.generate({ prompt: 'hello' }).catch((e: Error) => ({ text: `turn failed: ${e.message}` }));
    expect(result.text, 'a truncated stream (200, cut mid-event) must be retried, not fail the turn').toBe('the whole answer');
    expect(server.requests).toHaveLength(2);
  });
});

describe('provider errors reported inside a started stream', () => {
  // Anthropic sends `overloaded_error` mid-stream with a 200; OpenAI sends an `error` event.
  for (const [name, wire, status] of [
    ['an OpenAI in-stream server_error', 'responses', 500],
    ['an Anthropic in-stream overloaded_error (529)', 'anthropic', 529],
  ] as const) {
    it(`${name} is the provider's 5xx and is retried`, async () => {
      server.enqueue({ text: 'PARTIAL answer', fail: { status, inStream: true } }, 'the whole answer');
      const model = wire === 'anthropic' ? await anthropicModel(server) : await openaiModel(server);
      const { agent, logger } = rig(model);
      const result = await agent.generate({ prompt: 'hello' }).catch((e: Error) => ({ text: `turn failed: ${e.message}` }));
      expect(result.text, 'an in-stream provider 5xx must be retried like an HTTP 5xx').toBe('the whole answer');
      expect(server.requests).toHaveLength(2);
      expect(retryLines(logger.lines)[0]).toMatch(/fault=transient-server/);
    });
  }

  it('a retried stream says so: a retry part separates the abandoned partial text from the new attempt', async () => {
    server.enqueue({ text: 'PARTIAL answer that breaks', fail: 'truncated' }, 'the whole answer');
    const { agent } = rig(await openaiModel(server));
    const stream = agent.stream({ prompt: 'hello' });
    const parts: Array<{ type: string; text?: string }> = [];
    for await (const part of stream.harnessStream) parts.push(part as { type: string; text?: string });
    const retryAt = parts.findIndex((p) => p.type === 'retry');
    expect(retryAt, 'a retry part is streamed').toBeGreaterThan(-1);
    const after = parts.slice(retryAt).filter((p) => p.type === 'text-delta').map((p) => p.text).join('');
    expect(after).toBe('the whole answer');
    expect(await stream.text).toBe('the whole answer');
  });
});

describe('nothing else is retried', () => {
  const permanent: Array<[string, ScriptedResponse, { code: string; message: string; hint: RegExp }]> = [
    [
      '401 (auth)',
      { fail: { status: 401 } },
      { code: 'provider-auth', message: 'OpenAI rejected the API key (HTTP 401): Incorrect API key provided.', hint: /^Check OPENAI_API_KEY: it must hold a valid OpenAI API key for http:\/\/127\.0\.0\.1:\d+\/v1\.$/ },
    ],
    [
      '403 (forbidden)',
      { fail: { status: 403 } },
      {
        code: 'provider-forbidden',
        message: 'OpenAI refused access (HTTP 403): You have insufficient permissions for this operation. Missing scopes: model.request.',
        hint: /^The key in OPENAI_API_KEY is valid but may not do this: check that its account, project or region may use the model "m"\.$/,
      },
    ],
    [
      '404 (unknown model)',
      { fail: 'unknown-model' },
      { code: 'provider-model-not-found', message: 'OpenAI has no model "m" (HTTP 404): The model `m` does not exist or you do not have access to it.', hint: /^Check the model id in --model openai:m/ },
    ],
    [
      '429 out of quota',
      { fail: { status: 429, code: 'insufficient_quota', message: 'You exceeded your current quota, please check your plan and billing details.' } },
      { code: 'provider-quota', message: 'OpenAI says the account is out of quota (HTTP 429): You exceeded your current quota, please check your plan and billing details.', hint: /retrying will not help\.$/ },
    ],
    [
      '400 (bad request)',
      { fail: { status: 400, message: 'Unsupported parameter: temperature' } },
      { code: 'provider-rejected', message: 'OpenAI rejected the request (HTTP 400): Unsupported parameter: temperature', hint: /check --param, model_params\.json/ },
    ],
  ];
  for (const [name, failure, expected] of permanent) {
    it(`a ${name} fails the turn on the first attempt with a ProviderError that says what to do`, async () => {
      server.setFallback(failure);
      const { agent, logger, readJournal } = rig(await openaiModel(server));
      const session = await agent.createSession({ sessionId: 's' });
      const error = await agent.generate({ session, prompt: 'hello' }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ProviderError);
      const thrown = error as ProviderError;
      expect({ code: thrown.code, message: thrown.message, attempts: thrown.attempts }).toEqual({ code: expected.code, message: expected.message, attempts: 1 });
      expect(thrown.hint).toMatch(expected.hint);
      expect(APICallError.isInstance(thrown.cause), 'the provider error is kept as the cause').toBe(true);
      expect(server.requests, 'exactly one attempt').toHaveLength(1);
      expect(retryLines(logger.lines)).toEqual([]);
      expect(linesOf(logger.lines, 'ERROR', 'model call failed'), 'nothing was retried, so nothing was exhausted').toEqual([]);
      expect(linesOf(logger.lines, 'INFO', 'turn end')).toEqual([expect.stringMatching(/ outcome=error steps=1\/24 error=/)]);
      expect(readJournal((j) => j.turns('s').map((t) => [t.status, t.error]))).toEqual([['failed', `[turn failed: ${expected.message}]`]]);
    });
  }

  it('an unknown host is not retried: the DNS answer is final, and the error names the host and the variable', async () => {
    const model = await resolveModel({ spec: 'openai:m', env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: 'http://api.acx-test.invalid/v1' } });
    const { agent, logger } = rig(model);
    const error = (await agent.generate({ prompt: 'hello' }).catch((e: unknown) => e)) as ProviderError;
    expect(error).toBeInstanceOf(ProviderError);
    expect(error.code).toBe('provider-unknown-host');
    expect(error.message).toBe('Cannot reach OpenAI: the host "api.acx-test.invalid" does not exist (DNS lookup failed for http://api.acx-test.invalid/v1).');
    expect(error.hint).toBe('Check the host name in OPENAI_BASE_URL (or --base-url); it is set to http://api.acx-test.invalid/v1.');
    expect(retryLines(logger.lines)).toEqual([]);
  });
});

describe('rate limits (429): at most two retries within 3 s of sleep, honouring Retry-After', () => {
  it('retries a 429 after the wait it asks for, and succeeds', async () => {
    server.enqueue({ fail: { status: 429, headers: { 'retry-after-ms': '5' } } }, { fail: { status: 429, headers: { 'retry-after': '0' } } }, 'through');
    const { agent, logger } = rig(await openaiModel(server));
    expect((await agent.generate({ prompt: 'hello' })).text).toBe('through');
    expect(server.requests).toHaveLength(3);
    const retries = retryLines(logger.lines);
    expect(retries).toHaveLength(2);
    expect(retries[0]).toMatch(/^WARNING model call retry fault=rate-limited attempt=1 of=3 wait=0\.01s error=/);
    expect(retries[1]).toMatch(/^WARNING model call retry fault=rate-limited attempt=2 of=3 wait=0\.00s error=/);
  });

  it('gives up after the second retry, with one ERROR naming the attempts', async () => {
    server.setFallback({ fail: { status: 429, headers: { 'retry-after': '0' } } });
    const { agent, logger } = rig(await openaiModel(server));
    const error = (await agent.generate({ prompt: 'hello' }).catch((e: unknown) => e)) as ProviderError;
    expect(error).toBeInstanceOf(ProviderError);
    expect(error.code).toBe('provider-rate-limited');
    expect(error.message).toBe('OpenAI is rate-limiting requests (HTTP 429, after 3 attempts): Rate limit reached. Please try again later.');
    expect(server.requests).toHaveLength(3);
    expect(retryLines(logger.lines)).toHaveLength(2);
    expect(linesOf(logger.lines, 'ERROR', 'model call failed')).toEqual([expect.stringMatching(/^ERROR model call failed fault=rate-limited attempts=3 /)]);
  });

  it('does not retry when the provider asks for a longer wait than the 3 s budget, and says how long it asked', async () => {
    server.setFallback({ fail: { status: 429, headers: { 'retry-after': '4' } } });
    const { agent, logger } = rig(await openaiModel(server));
    const error = (await agent.generate({ prompt: 'hello' }).catch((e: unknown) => e)) as ProviderError;
    expect(error.code).toBe('provider-rate-limited');
    expect(error.hint).toMatch(/^It asks to wait 4 s before the next request: wait that long and run again/);
    expect(server.requests).toHaveLength(1);
    expect(retryLines(logger.lines)).toEqual([]);
  });

  it('counts the sleeps: a second wait that would take the total past 3 s is not taken', async () => {
    server.setFallback({ fail: { status: 429, headers: { 'retry-after-ms': '1600' } } });
    const { agent, logger } = rig(await openaiModel(server));
    const error = (await agent.generate({ prompt: 'hello' }).catch((e: unknown) => e)) as ProviderError;
    expect(error.code).toBe('provider-rate-limited');
    expect(server.requests, '1.6 s + 1.6 s > 3 s: one retry only').toHaveLength(2);
    expect(retryLines(logger.lines)).toEqual([expect.stringMatching(/ attempt=1 of=3 wait=1\.60s /)]);
  });

  it('retries: 0 turns the rate-limit retry off too', async () => {
    server.setFallback({ fail: { status: 429, headers: { 'retry-after': '0' } } });
    const { agent } = rig(await openaiModel(server), { harness: { retries: 0 } });
    await expect(agent.generate({ prompt: 'hello' })).rejects.toMatchObject({ code: 'provider-rate-limited', attempts: 1 });
    expect(server.requests).toHaveLength(1);
  });
});

describe('transport failures are retried like a 5xx', () => {
  it('a dropped connection, then success: one retry, logged as transient-transport', async () => {
    server.enqueue({ fail: 'disconnect' }, 'recovered');
    const { agent, logger } = rig(await openaiModel(server));
    expect((await agent.generate({ prompt: 'hello' })).text).toBe('recovered');
    expect(server.requests).toHaveLength(2);
    expect(retryLines(logger.lines)).toEqual([expect.stringMatching(/^WARNING model call retry fault=transient-transport attempt=1 of=3 /)]);
  });

  it('a refused connection is retried, then reported naming the URL and the variable to check', async () => {
    const closed = await closedPortUrl();
    const model = await resolveModel({ spec: 'openai:m', env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: closed } });
    const { agent, logger } = rig(model);
    const error = (await agent.generate({ prompt: 'hello' }).catch((e: unknown) => e)) as ProviderError;
    expect(error).toBeInstanceOf(ProviderError);
    expect(error.code).toBe('provider-unreachable');
    expect(error.message).toBe(`Cannot connect to OpenAI at ${closed}: the connection was refused, after 3 attempts.`);
    expect(error.hint).toBe('Check that the server is running and that OPENAI_BASE_URL (or --base-url) points at it.');
    expect(retryLines(logger.lines).map((line) => /fault=(\S+) attempt=(\d)/.exec(line)!.slice(1))).toEqual([
      ['transient-transport', '1'],
      ['transient-transport', '2'],
    ]);
  });
});

describe('the same faults while stream() streams every call', () => {
  const streamed = async (agent: ReturnType<typeof rig>['agent']) => {
    const stream = agent.stream({ prompt: 'hello' });
    for await (const _part of stream.harnessStream);
    return stream.result;
  };
  const cases: Array<[string, 'responses' | 'chat' | 'anthropic', ScriptedResponse, string]> = [
    ['a truncated stream on the openai responses wire', 'responses', { text: 'never whole', fail: 'truncated' }, 'transient-malformed'],
    ['a truncated stream on the openai chat wire', 'chat', { text: 'never whole', fail: 'truncated' }, 'transient-malformed'],
    ['a truncated stream on the Anthropic wire', 'anthropic', { text: 'never whole', fail: 'truncated' }, 'transient-malformed'],
    ['an OpenAI in-stream server_error', 'responses', { text: 'PARTIAL', fail: { status: 500, inStream: true } }, 'transient-server'],
    ['an OpenAI chat in-stream 500', 'chat', { text: 'PARTIAL', fail: { status: 500, inStream: true } }, 'transient-server'],
    ['an Anthropic in-stream overloaded_error (529)', 'anthropic', { text: 'PARTIAL', fail: { status: 529, inStream: true } }, 'transient-server'],
    ['a 500 before the stream starts', 'responses', { fail: { status: 500 } }, 'transient-server'],
  ];
  for (const [name, wire, failure, fault] of cases) {
    it(`${name} is retried (${fault})`, async () => {
      server.enqueue(failure, 'the whole answer');
      const model = wire === 'anthropic' ? await anthropicModel(server) : await openaiModel(server, wire);
      const { agent, logger } = rig(model);
      const result = await streamed(agent).catch((e: Error) => ({ text: `turn failed: ${e.message}` }));
      expect(result.text).toBe('the whole answer');
      expect(server.requests).toHaveLength(2);
      expect(retryLines(logger.lines)[0]).toMatch(new RegExp(`fault=${fault}`));
    });
  }

  it('an in-stream client error (400) is not retried', async () => {
    server.enqueue({ text: 'PARTIAL', fail: { status: 400, inStream: true, message: 'Invalid value for temperature' } }, 'never sent');
    const { agent, logger } = rig(await openaiModel(server));
    await expect(streamed(agent)).rejects.toMatchObject({
      code: 'provider-rejected',
      message: 'OpenAI rejected the request (HTTP 400): Invalid value for temperature',
    });
    expect(server.requests).toHaveLength(1);
    expect(retryLines(logger.lines)).toEqual([]);
  });
});
