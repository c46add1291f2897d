// Item 8, transient retries: a provider 5xx or a truncated/malformed response is re-requested
// (default 2 extra attempts, each logged); nothing else is; exhaustion ends in an ERROR naming
// the attempts.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ModelServer, ScriptedResponse } from '../support/model-server.ts';
import { anthropicModel, linesOf, openaiModel, rig, startModelServer } from './helpers.ts';

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
    for await (const part of stream.fullStream) parts.push(part as { type: string; text?: string });
    const retryAt = parts.findIndex((p) => p.type === 'retry');
    expect(retryAt, 'a retry part is streamed').toBeGreaterThan(-1);
    const after = parts.slice(retryAt).filter((p) => p.type === 'text-delta').map((p) => p.text).join('');
    expect(after).toBe('the whole answer');
    expect(await stream.text).toBe('the whole answer');
  });
});

describe('nothing else is retried', () => {
  const permanent: Array<[string, ScriptedResponse]> = [
    ['401 (auth)', { fail: { status: 401 } }],
    ['429 (rate limit)', { fail: { status: 429, headers: { 'retry-after': '0' } } }],
    ['400 (bad request)', { fail: { status: 400, message: 'Unsupported parameter: temperature' } }],
  ];
  for (const [name, failure] of permanent) {
    it(`a ${name} fails the turn on the first attempt`, async () => {
      server.setFallback(failure);
      const { agent, logger } = rig(await openaiModel(server));
      await expect(agent.generate({ prompt: 'hello' })).rejects.toThrow();
      expect(server.requests, 'exactly one attempt').toHaveLength(1);
      expect(retryLines(logger.lines)).toEqual([]);
      expect(linesOf(logger.lines, 'ERROR', 'turn end')).toHaveLength(1);
    });
  }
});

describe('retries exhausted', () => {
  it('gives up after 3 attempts by default: a WARNING per retry and an ERROR naming the attempts', async () => {
    server.setFallback({ fail: { status: 500 } });
    const { agent, logger, readJournal } = rig(await openaiModel(server));
    const session = await agent.createSession({ sessionId: 's' });
    await expect(agent.generate({ session, prompt: 'hello' })).rejects.toThrow();
    expect(server.requests).toHaveLength(3);
    expect(retryLines(logger.lines)).toHaveLength(2);
    const errors = linesOf(logger.lines, 'ERROR', 'model call failed');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/attempts=3/);
    expect(errors[0]).toMatch(/fault=transient-server/);
    const turns = readJournal((j) => j.turns('s'));
    expect(turns.map((t) => t.status)).toEqual(['failed']);
    expect(turns[0]!.error).toMatch(/^\[turn failed: /);
  });

  it('retries: 0 makes a single attempt', async () => {
    server.setFallback({ fail: { status: 502 } });
    const { agent } = rig(await openaiModel(server), { harness: { retries: 0 } });
    await expect(agent.generate({ prompt: 'hello' })).rejects.toThrow();
    expect(server.requests).toHaveLength(1);
  });

  it('a failed turn does not wedge the session: the next message works', async () => {
    server.enqueue({ fail: { status: 401 } }, 'back again');
    const { agent } = rig(await openaiModel(server));
    const session = await agent.createSession({ sessionId: 's' });
    await expect(agent.generate({ session, prompt: 'one' })).rejects.toThrow();
    expect((await agent.generate({ session, prompt: 'two' })).text).toBe('back again');
  });
});

describe('the same faults while stream() streams every call', () => {
  const streamed = async (agent: ReturnType<typeof rig>['agent']) => {
    const stream = agent.stream({ prompt: 'hello' });
    for await (const _part of stream.fullStream);
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
    await expect(streamed(agent)).rejects.toThrow(/temperature/);
    expect(server.requests).toHaveLength(1);
    expect(retryLines(logger.lines)).toEqual([]);
  });
});
