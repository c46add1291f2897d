// Item 10, what a turn logs: one `llm` line per model call (provider, model, duration, tokens
// in/out/total, cached tokens), bookends, step and tool lines; never prompts, bodies or keys.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { tool } from '../../src/tools/tool.ts';
import type { ModelServer } from '../support/model-server.ts';
import { ANTHROPIC_KEY, anthropicModel, echoTool, linesOf, OPENAI_KEY, openaiModel, rig, startModelServer } from './helpers.ts';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

const LLM = /^INFO llm provider=(\S+) model=(\S+) duration=(\d+\.\d\ds) tokens_in=(\d+) tokens_out=(\d+) tokens_total=(\d+)(?: cached_tokens=(\d+))?/;

describe('the llm line', () => {
  it('one per model call, with provider, model, duration and the provider-reported tokens (cached included)', async () => {
    server.enqueue(
      { toolCalls: [{ name: 'echo', input: { text: 'x' } }], usage: { inputTokens: 1200, outputTokens: 30, cachedInputTokens: 800 } },
      { text: 'done', usage: { inputTokens: 1300, outputTokens: 5, cachedInputTokens: 1100 } },
    );
    const { agent, logger } = rig(await openaiModel(server, undefined, 'gpt-test'), { agent: { tools: [echoTool()] } });
    const result = await agent.generate({ prompt: 'go' });
    const lines = linesOf(logger.lines, 'INFO', 'llm');
    expect(lines, 'one llm line per model call').toHaveLength(server.requests.length);
    const parsed = lines.map((line) => LLM.exec(line));
    expect(parsed.every(Boolean), lines.join('\n')).toBe(true);
    expect(parsed.map((m) => [m![1], m![2], m![4], m![5], m![6], m![7]])).toEqual([
      ['openai', 'gpt-test', '1200', '30', '1230', '800'],
      ['openai', 'gpt-test', '1300', '5', '1305', '1100'],
    ]);
    expect(result.usage).toEqual({
      inputTokens: 2500,
      inputTokenDetails: { noCacheTokens: 600, cacheReadTokens: 1900, cacheWriteTokens: undefined },
      outputTokens: 35,
      outputTokenDetails: { textTokens: 35, reasoningTokens: 0 },
      totalTokens: 2535,
    });
  });

  it('normalises the Anthropic wire (input excludes cache reads there) to the same fields', async () => {
    server.enqueue({ text: 'done', usage: { inputTokens: 5000, outputTokens: 20, cachedInputTokens: 4000 } });
    const { agent, logger } = rig(await anthropicModel(server, 'claude-x'));
    await agent.generate({ prompt: 'go' });
    const m = LLM.exec(linesOf(logger.lines, 'INFO', 'llm')[0] ?? '');
    expect(m, logger.lines.join('\n')).not.toBeNull();
    expect([m![1], m![2], m![4], m![5], m![6], m![7]]).toEqual(['anthropic', 'claude-x', '5000', '20', '5020', '4000']);
  });

  it('bookends the turn and logs each step and tool run', async () => {
    server.enqueue({ toolCalls: [{ name: 'echo', input: { text: 'x' } }] }, 'done');
    const { agent, logger } = rig(await openaiModel(server), { agent: { tools: [echoTool()] } });
    await agent.generate({ prompt: 'go' });
    expect(linesOf(logger.lines, 'INFO', 'turn start')[0]).toMatch(/provider=openai model=m/);
    expect(linesOf(logger.lines, 'INFO', 'turn end')[0]).toMatch(/outcome=ok steps=2\/24 tools=1 duration=\d+\.\d\ds/);
    expect(logger.lines.some((l) => /^INFO step 1\/24: tools=echo duration=/.test(l))).toBe(true);
    expect(logger.lines.some((l) => /^INFO step 2\/24: final reply duration=/.test(l))).toBe(true);
    expect(linesOf(logger.lines, 'INFO', 'tool')[0]).toMatch(/name=echo duration=\d+\.\d\ds outcome=ok/);
  });

  it('a failing tool logs a WARNING carrying its error, flattened to one line and unable to forge a field', async () => {
    const boom = tool({
      name: 'boom',
      description: 'Fails',
      inputSchema: z.object({}),
      capabilityScopes: [],
      kind: 'read',
      effect: 'read-only',
      execute: () => {
        throw new Error('bad thing\noutcome=ok happened');
      },
    });
    server.enqueue({ toolCalls: [{ name: 'boom', input: {} }] }, 'sorry');
    const { agent, logger } = rig(await openaiModel(server), { agent: { tools: [boom] } });
    await agent.generate({ prompt: 'go' });
    const warning = linesOf(logger.lines, 'WARNING', 'tool');
    expect(warning).toHaveLength(1);
    expect(warning[0]).toMatch(/name=boom duration=\S+ outcome=error error="[^"]*bad thing outcome=ok happened"/);
    expect(logger.lines.every((l) => !l.includes('\n'))).toBe(true);
  });
});

describe('what is never logged', () => {
  it('no prompt, instructions, tool output, reply text or API key appears in any line, even at DEBUG and on failure', async () => {
    const PROMPT = 'PROMPT-SECRET-PURPLE-ELEPHANT-7731';
    const SYSTEM = 'SYSTEM-SECRET-CHARTER-4410';
    const OUTPUT = 'TOOL-OUTPUT-SECRET-9920';
    const REPLY = 'REPLY-SECRET-BODY-5521';
    const lookup = tool({
      name: 'lookup',
      description: 'Looks things up',
      inputSchema: z.object({ q: z.string() }),
      capabilityScopes: [],
      kind: 'read',
      effect: 'read-only',
      execute: () => OUTPUT,
    });
    server.enqueue(
      { toolCalls: [{ name: 'lookup', input: { q: 'ARGS-SECRET-3318' } }] },
      { fail: { status: 500 } },
      REPLY,
      { fail: { status: 401 } },
    );
    const lines: string[] = [];
    const outcomes: unknown[] = [];
    for (const model of [await openaiModel(server), await anthropicModel(server)]) {
      const { agent, logger } = rig(model, { agent: { instructions: SYSTEM, tools: [lookup] }, logLevel: 'debug' });
      outcomes.push(
        await agent.generate({ prompt: `${PROMPT} please` }).then(
          (result) => ({ text: result.text }),
          (error: unknown) => ({ name: (error as Error).name, code: (error as { code?: string }).code, message: (error as Error).message }),
        ),
      );
      lines.push(...logger.lines);
    }
    // OpenAI: a tool call, a 500 retried, then the reply. Anthropic: the 401, on its first attempt.
    expect(outcomes).toEqual([
      { text: REPLY },
      { name: 'ProviderError', code: 'provider-auth', message: 'Anthropic rejected the API key (HTTP 401): invalid x-api-key' },
    ]);
    expect(server.requests.length).toBe(4);
    expect(lines.length).toBeGreaterThan(10);
    for (const secret of [PROMPT, SYSTEM, OUTPUT, REPLY, 'ARGS-SECRET-3318', OPENAI_KEY, ANTHROPIC_KEY]) {
      const leaks = lines.filter((line) => line.includes(secret));
      expect(leaks, `"${secret}" must never reach a log line`).toEqual([]);
    }
  });
});
