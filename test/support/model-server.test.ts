// Drives the scripted model server through the real AI SDK providers, over real HTTP.
import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { createXai } from '@ai-sdk/xai';
import { createOpenRouter } from '@openrouter/ai-sdk-provider';
import { APICallError, generateText, jsonSchema, stepCountIs, streamText, tool, type LanguageModel } from 'ai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { respondByTurn, startModelServer, type ModelServer, type Wire } from './model-server.ts';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

interface Target {
  name: string;
  wire: Wire;
  model: (s: ModelServer) => LanguageModel;
  /** Whether the provider surfaces reasoning text from this wire. */
  reasoning: boolean;
  /** @ai-sdk/xai maps a non-streamed `status: 'incomplete'` to 'other', whatever the reason. */
  nonStreamingLength?: false;
}

const targets: Target[] = [
  {
    name: 'openai.responses',
    wire: 'openai-responses',
    model: (s) => createOpenAI({ baseURL: s.openaiBaseURL, apiKey: 'sk-test' }).responses('gpt-5-mini'),
    reasoning: true,
  },
  {
    name: 'openai.chat',
    wire: 'openai-chat',
    model: (s) => createOpenAI({ baseURL: s.openaiBaseURL, apiKey: 'sk-test' }).chat('gpt-4o'),
    reasoning: false,
  },
  {
    name: 'anthropic',
    wire: 'anthropic-messages',
    model: (s) => createAnthropic({ baseURL: s.anthropicBaseURL, apiKey: 'sk-ant-test' })('claude-sonnet-4-5'),
    reasoning: true,
  },
  {
    name: 'google',
    wire: 'google',
    model: (s) => createGoogleGenerativeAI({ baseURL: s.googleBaseURL, apiKey: 'g-test' })('gemini-2.5-flash'),
    reasoning: true,
  },
  {
    name: 'openai-compatible',
    wire: 'openai-chat',
    model: (s) =>
      createOpenAICompatible({ name: 'local', baseURL: s.openaiBaseURL, apiKey: 'x', includeUsage: true })('qwen3'),
    reasoning: true,
  },
  {
    name: 'xai',
    wire: 'openai-responses',
    model: (s) => createXai({ baseURL: s.openaiBaseURL, apiKey: 'xai-test' })('grok-4'),
    reasoning: true,
    nonStreamingLength: false,
  },
  {
    name: 'openrouter',
    wire: 'openai-chat',
    model: (s) => createOpenRouter({ baseURL: s.openaiBaseURL, apiKey: 'or-test' })('anthropic/claude-sonnet-4.5'),
    reasoning: true,
  },
];

const weather = tool({
  description: 'Weather for a city',
  inputSchema: jsonSchema<{ city: string }>({
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
  }),
});

const weatherWithExecute = tool({
  ...weather,
  execute: async ({ city }: { city: string }) => ({ city, celsius: city === 'Paris' ? 21 : 25 }),
});

/** Reads a streamText result to the end, collecting error parts. */
async function drain(result: { fullStream: AsyncIterable<{ type: string; error?: unknown }> }): Promise<unknown[]> {
  const errors: unknown[] = [];
  for await (const part of result.fullStream) if (part.type === 'error') errors.push(part.error);
  return errors;
}

describe.each(targets)('$name', (t) => {
  it('answers with text (generateText) and records the request', async () => {
    server.enqueue('Hello from the scripted model.');
    const result = await generateText({ model: t.model(server), system: 'Be brief.', prompt: 'Say hello', maxRetries: 0 });
    expect(result.text).toBe('Hello from the scripted model.');
    expect(result.finishReason).toBe('stop');
    expect(server.requests).toHaveLength(1);
    const req = server.requests[0]!;
    expect(req.wire).toBe(t.wire);
    expect(req.stream).toBe(false);
    expect(req.view.system).toEqual(['Be brief.']);
    expect(req.view.messages).toEqual([{ role: 'user', text: 'Say hello' }]);
    expect(server.queued()).toBe(0);
  });

  it('streams text, reasoning and parallel tool calls with parsed arguments (streamText)', async () => {
    server.enqueue({
      reasoning: 'The user wants two cities.',
      text: 'Checking both cities now.',
      toolCalls: [
        { name: 'weather', input: { city: 'Paris' } },
        { name: 'weather', input: { city: 'Rome' } },
      ],
    });
    const result = streamText({ model: t.model(server), prompt: 'Weather in Paris and Rome?', tools: { weather }, maxRetries: 0 });
    expect(await drain(result)).toEqual([]);
    expect(await result.text).toBe('Checking both cities now.');
    if (t.reasoning) expect(await result.reasoningText).toBe('The user wants two cities.');
    const calls = await result.toolCalls;
    expect(calls.map((c) => [c.toolName, c.input])).toEqual([
      ['weather', { city: 'Paris' }],
      ['weather', { city: 'Rome' }],
    ]);
    expect(new Set(calls.map((c) => c.toolCallId)).size).toBe(2);
    expect(await result.finishReason).toBe('tool-calls');
    const req = server.requests[0]!;
    expect(req.stream).toBe(true);
    expect(req.view.tools).toEqual(['weather']);
  });

  it('runs a tool loop: the second request carries the calls and their results', async () => {
    server.enqueue(
      { toolCalls: [{ name: 'weather', input: { city: 'Paris' } }, { name: 'weather', input: { city: 'Rome' } }] },
      respondByTurn(({ toolResults }) => `Got ${toolResults.length} results.`),
    );
    const result = await generateText({
      model: t.model(server),
      prompt: 'Weather in Paris and Rome?',
      tools: { weather: weatherWithExecute },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    expect(result.text).toBe('Got 2 results.');
    const [first, second] = server.requests;
    expect(first!.view.messages).toHaveLength(1);
    const messages = second!.view.messages;
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    const calls = messages[1]!.toolCalls!;
    expect(calls.map((c) => [c.name, c.input])).toEqual([
      ['weather', { city: 'Paris' }],
      ['weather', { city: 'Rome' }],
    ]);
    const results = messages[2]!.toolResults!;
    expect(results.map((r) => r.callId)).toEqual(calls.map((c) => c.id));
    expect(JSON.parse(results[0]!.output)).toEqual({ city: 'Paris', celsius: 21 });
  });

  it('reports scripted usage incl. cached input tokens, streaming and not', async () => {
    const usage = { inputTokens: 1200, cachedInputTokens: 1000, outputTokens: 30 };
    server.enqueue({ text: 'a', usage }, { text: 'b', usage });
    const generated = await generateText({ model: t.model(server), prompt: 'x', maxRetries: 0 });
    expect(generated.usage.inputTokens).toBe(1200);
    expect(generated.usage.outputTokens).toBe(30);
    expect(generated.usage.inputTokenDetails.cacheReadTokens).toBe(1000);
    expect(generated.usage.inputTokenDetails.noCacheTokens).toBe(200);

    const streamed = streamText({ model: t.model(server), prompt: 'x', maxRetries: 0 });
    await drain(streamed);
    const u = await streamed.usage;
    expect([u.inputTokens, u.outputTokens, u.inputTokenDetails.cacheReadTokens]).toEqual([1200, 30, 1000]);
  });

  it('defaults usage to plausible numbers that grow with the prompt', async () => {
    server.setFallback('ok');
    const short = await generateText({ model: t.model(server), prompt: 'hi', maxRetries: 0 });
    const long = await generateText({ model: t.model(server), prompt: 'hi '.repeat(2000), maxRetries: 0 });
    expect(short.usage.inputTokens).toBeGreaterThan(0);
    expect(long.usage.inputTokens!).toBeGreaterThan(short.usage.inputTokens! + 1000);
    expect(short.usage.outputTokens).toBeGreaterThan(0);
  });

  it('surfaces a 500 as an APICallError with statusCode 500', async () => {
    server.enqueue({ fail: { status: 500 } }, { fail: { status: 500, message: 'boom' } });
    const error = await generateText({ model: t.model(server), prompt: 'x', maxRetries: 0 }).catch((e: unknown) => e);
    expect(APICallError.isInstance(error)).toBe(true);
    expect((error as APICallError).statusCode).toBe(500);

    const streamed = streamText({ model: t.model(server), prompt: 'x', maxRetries: 0, onError: () => {} });
    const errors = await drain(streamed);
    expect(errors).toHaveLength(1);
    expect(APICallError.isInstance(errors[0])).toBe(true);
    expect((errors[0] as APICallError).statusCode).toBe(500);
    expect((errors[0] as APICallError).message).toBe('boom');
  });

  it("returns the provider's own context-overflow error", async () => {
    server.enqueue({ fail: 'context-overflow' });
    const error = await generateText({ model: t.model(server), prompt: 'x', maxRetries: 0 }).catch((e: unknown) => e);
    expect(APICallError.isInstance(error)).toBe(true);
    expect((error as APICallError).statusCode).toBe(400);
    expect((error as APICallError).message).toMatch(/context|too long|exceeds/i);
  });

  it("answers an unknown model with the provider's own 404 naming the requested model", async () => {
    server.enqueue({ fail: 'unknown-model' });
    const model = t.model(server);
    const error = await generateText({ model, prompt: 'x', maxRetries: 0 }).catch((e: unknown) => e);
    expect(APICallError.isInstance(error)).toBe(true);
    expect((error as APICallError).statusCode).toBe(404);
    const id = typeof model === 'string' ? model : model.modelId;
    expect((error as APICallError).message).toBe(
      {
        'openai-responses': `The model \`${id}\` does not exist or you do not have access to it.`,
        'openai-chat': `The model \`${id}\` does not exist or you do not have access to it.`,
        'anthropic-messages': `model: ${id}`,
        google: `models/${id} is not found for API version v1beta, or is not supported for generateContent.`,
      }[t.wire],
    );
  });

  it('drops the connection before any answer when asked to: a transport failure with no status', async () => {
    server.enqueue({ fail: 'disconnect' });
    const error = await generateText({ model: t.model(server), prompt: 'x', maxRetries: 0 }).catch((e: unknown) => e);
    expect(APICallError.isInstance(error)).toBe(true);
    expect((error as APICallError).statusCode).toBeUndefined();
    expect((error as APICallError).isRetryable).toBe(true);
    expect(server.requests, 'the request was received, then its connection closed').toHaveLength(1);
  });

  it('surfaces a body cut mid-JSON as an error', async () => {
    server.enqueue({ text: 'this reply will be cut in half', fail: 'truncated' });
    const error = await generateText({ model: t.model(server), prompt: 'x', maxRetries: 0 }).catch((e: unknown) => e);
    expect(APICallError.isInstance(error)).toBe(true);
    expect((error as APICallError).message).toBe('Invalid JSON response');
  });

  it('surfaces an SSE stream cut mid-event as a stream error from the provider', async () => {
    // Read the provider stream directly: ai@7.0.173 streamText leaves fullStream pending and
    // raises an unhandled rejection when a model stream errors after output (see report).
    server.enqueue({ text: 'one two three four five six seven eight nine ten', fail: 'truncated' });
    const model = t.model(server);
    if (typeof model === 'string') throw new Error('expected a model object');
    const { stream } = await model.doStream({ prompt: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }] });
    const reader = stream.getReader();
    const seen: string[] = [];
    const failure = await (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return undefined;
        seen.push(value.type);
        if (value.type === 'finish') expect(seen).toContain('error');
      }
    })().catch((e: unknown) => e);
    expect(seen).toContain('text-delta');
    // Most providers let the read fail; @openrouter/ai-sdk-provider turns it into an error part.
    if (seen.includes('error')) expect(failure).toBeUndefined();
    else expect(APICallError.isInstance(failure)).toBe(true);
  });

  it('sends a provider error event mid-stream when asked', async () => {
    server.enqueue({ text: 'partial answer that breaks off', fail: { status: 500, inStream: true } });
    const streamed = streamText({ model: t.model(server), prompt: 'x', maxRetries: 0, onError: () => {} });
    const seen: string[] = [];
    for await (const part of streamed.fullStream) {
      if (part.type === 'text-delta' || part.type === 'reasoning-delta' || part.type === 'error') seen.push(part.type);
    }
    expect(seen[0]).toBe('text-delta');
    expect(seen.at(-1)).toBe('error');
    expect(seen.filter((type) => type === 'error')).toHaveLength(1);
    expect(await streamed.finishReason).not.toBe('stop');
  });

  it("maps finishReason 'length'", async () => {
    server.enqueue({ text: 'cut short', finishReason: 'length' }, { text: 'cut short', finishReason: 'length' });
    const streamed = streamText({ model: t.model(server), prompt: 'x', maxRetries: 0 });
    await drain(streamed);
    expect(await streamed.finishReason).toBe('length');
    const result = await generateText({ model: t.model(server), prompt: 'x', maxRetries: 0 });
    expect(result.finishReason).toBe(t.nonStreamingLength === false ? 'other' : 'length');
  });
});

describe('anthropic specifics', () => {
  const anthropic = (s: ModelServer) => createAnthropic({ baseURL: s.anthropicBaseURL, apiKey: 'sk-ant-test' });

  it('returns thinking as reasoning text and records the thinking budget on the wire', async () => {
    server.enqueue({ reasoning: 'Let me think about it.', text: 'Forty-two.' }, { reasoning: 'Streaming thoughts.', text: 'Done.' });
    const providerOptions = { anthropic: { thinking: { type: 'enabled', budgetTokens: 2048 } } } as const;
    const result = await generateText({ model: anthropic(server)('claude-sonnet-4-5'), prompt: 'Meaning?', providerOptions, maxRetries: 0 });
    expect(result.reasoningText).toBe('Let me think about it.');
    expect(result.text).toBe('Forty-two.');
    expect(server.requests[0]!.body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });

    const streamed = streamText({ model: anthropic(server)('claude-sonnet-4-5'), prompt: 'Again', providerOptions, maxRetries: 0 });
    await drain(streamed);
    expect(await streamed.reasoningText).toBe('Streaming thoughts.');
  });

  it('records cache_control placement, headers and sampling settings', async () => {
    server.enqueue('ok');
    await generateText({
      model: anthropic(server)('claude-sonnet-4-5'),
      messages: [
        { role: 'system', content: 'Stable instructions.', providerOptions: { anthropic: { cacheControl: { type: 'ephemeral' } } } },
        { role: 'user', content: 'hi' },
      ],
      allowSystemInMessages: true,
      temperature: 0.3,
      headers: { 'x-trace': 'abc' },
      maxRetries: 0,
    });
    const req = server.requests[0]!;
    expect(req.body.system).toEqual([{ type: 'text', text: 'Stable instructions.', cache_control: { type: 'ephemeral' } }]);
    expect(req.body.temperature).toBe(0.3);
    expect(req.headers['x-api-key']).toBe('sk-ant-test');
    expect(req.headers['x-trace']).toBe('abc');
    expect(req.headers['anthropic-version']).toBeTruthy();
  });

  it('reports cache writes and reads the way the SDK adds them up', async () => {
    server.enqueue({ text: 'ok', usage: { inputTokens: 5000, cachedInputTokens: 3000, cacheWriteInputTokens: 1500 } });
    const result = await generateText({ model: anthropic(server)('claude-sonnet-4-5'), prompt: 'x', maxRetries: 0 });
    expect(result.usage.inputTokens).toBe(5000);
    expect(result.usage.inputTokenDetails).toMatchObject({ cacheReadTokens: 3000, cacheWriteTokens: 1500, noCacheTokens: 500 });
    expect(result.providerMetadata?.anthropic?.usage).toMatchObject({
      input_tokens: 500,
      cache_read_input_tokens: 3000,
      cache_creation_input_tokens: 1500,
    });
  });

  it('answers 529 overloaded with the Anthropic error shape and extra headers', async () => {
    server.enqueue({ fail: { status: 529, headers: { 'retry-after': '0' } } });
    const error = await generateText({ model: anthropic(server)('claude-sonnet-4-5'), prompt: 'x', maxRetries: 0 }).catch((e: unknown) => e);
    expect(APICallError.isInstance(error)).toBe(true);
    const e = error as APICallError;
    expect(e.statusCode).toBe(529);
    expect(e.message).toBe('Overloaded');
    expect(e.responseHeaders?.['retry-after']).toBe('0');
    expect(JSON.parse(e.responseBody!)).toEqual({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
  });
});

describe('server behaviour', () => {
  const chat = (s: ModelServer) => createOpenAI({ baseURL: s.openaiBaseURL, apiKey: 'sk-test' }).chat('gpt-4o');

  it('fails loudly, naming the request, when nothing is scripted', async () => {
    const error = await generateText({ model: chat(server), prompt: 'unplanned question', maxRetries: 0 }).catch((e: unknown) => e);
    expect(APICallError.isInstance(error)).toBe(true);
    expect((error as APICallError).statusCode).toBe(500);
    expect((error as APICallError).message).toMatch(/unexpected request #1 .*\/v1\/chat\/completions.*gpt-4o.*unplanned question/);
    expect(server.requests).toHaveLength(1);
  });

  it('serves the queue in order, then the fallback; a throwing responder becomes a 500', async () => {
    server = await (async () => {
      await server.close();
      return startModelServer({ script: ['first', () => 'second'], fallback: 'fallback' });
    })();
    const ask = async () => (await generateText({ model: chat(server), prompt: 'q', maxRetries: 0 })).text;
    expect([await ask(), await ask(), await ask()]).toEqual(['first', 'second', 'fallback']);
    server.setFallback(() => {
      throw new Error('rule not covered');
    });
    const error = await ask().catch((e: unknown) => e);
    expect((error as APICallError).message).toMatch(/responder threw .*rule not covered/);
  });

  it('records credentials and custom headers per provider', async () => {
    server.setFallback('ok');
    await generateText({ model: chat(server), prompt: 'q', maxRetries: 0, headers: { 'x-cache-key': 'k1' } });
    await generateText({
      model: createGoogleGenerativeAI({ baseURL: server.googleBaseURL, apiKey: 'g-key' })('gemini-2.5-flash'),
      prompt: 'q',
      maxRetries: 0,
    });
    expect(server.requests[0]!.headers.authorization).toBe('Bearer sk-test');
    expect(server.requests[0]!.headers['x-cache-key']).toBe('k1');
    expect(server.requests[1]!.headers['x-goog-api-key']).toBe('g-key');
    expect(server.requests[1]!.path).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
  });

  it('gives unique, deterministic tool-call ids, and keeps scripted ids', async () => {
    const script = [
      { toolCalls: [{ name: 'weather', input: { city: 'A' } }] },
      { toolCalls: [{ name: 'weather', input: { city: 'B' } }, { id: 'my-id', name: 'weather', input: { city: 'C' } }] },
    ];
    const idsFrom = async (s: ModelServer) => {
      const ids: string[] = [];
      for (let i = 0; i < script.length; i++) {
        const r = await generateText({ model: chat(s), prompt: 'q', tools: { weather }, maxRetries: 0 });
        ids.push(...r.toolCalls.map((c) => c.toolCallId));
      }
      return ids;
    };
    server.enqueue(...script);
    const first = await idsFrom(server);
    const other = await startModelServer({ script });
    try {
      expect(await idsFrom(other)).toEqual(first);
    } finally {
      await other.close();
    }
    expect(new Set(first).size).toBe(3);
    expect(first[2]).toBe('my-id');
  });

  it('resolves OpenAI Responses item references (store: true) in the view', async () => {
    const model = createOpenAI({ baseURL: server.openaiBaseURL, apiKey: 'sk-test' }).responses('gpt-5-mini');
    server.enqueue({ reasoning: 'hm', text: 'First answer.' }, 'Second answer.');
    const first = await generateText({ model, prompt: 'one', maxRetries: 0 });
    await generateText({ model, messages: [{ role: 'user', content: 'one' }, ...first.response.messages, { role: 'user', content: 'two' }], maxRetries: 0 });
    const second = server.requests[1]!;
    expect(second.body.input.some((item: any) => item.type === 'item_reference')).toBe(true);
    expect(second.view.messages).toEqual([
      { role: 'user', text: 'one' },
      { role: 'assistant', text: 'First answer.' },
      { role: 'user', text: 'two' },
    ]);
  });

  it('holds a stream after its first delta until released', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    // Record the raw bytes the client has received, to see what the server had sent.
    let received = '';
    const recordingFetch: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      const decoder = new TextDecoder();
      const body = response.body!.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            received += decoder.decode(chunk, { stream: true });
            controller.enqueue(chunk);
          },
        }),
      );
      return new Response(body, { status: response.status, headers: response.headers });
    };
    server.enqueue({ text: 'alpha beta gamma delta', pauseUntil: gate });
    const model = createOpenAI({ baseURL: server.openaiBaseURL, apiKey: 'sk-test', fetch: recordingFetch }).chat('gpt-4o');
    const streamed = streamText({ model, prompt: 'q', maxRetries: 0 });
    const deltas: string[] = [];
    for await (const part of streamed.fullStream) {
      if (part.type !== 'text-delta') continue;
      deltas.push(part.text);
      if (deltas.length === 1) {
        expect(received).toContain('alpha');
        expect(received).not.toContain('gamma');
        expect(received).not.toContain('[DONE]');
        release();
      }
    }
    expect(deltas.join('')).toBe('alpha beta gamma delta');
    expect(received).toContain('[DONE]');
  });

  it('gives the same provider-independent view of one conversation on every wire', async () => {
    server.setFallback('ok');
    const messages = [
      { role: 'system' as const, content: 'You are terse.' },
      { role: 'user' as const, content: 'Weather in Paris?' },
      {
        role: 'assistant' as const,
        content: [
          { type: 'text' as const, text: 'Looking.' },
          { type: 'tool-call' as const, toolCallId: 'c1', toolName: 'weather', input: { city: 'Paris' } },
        ],
      },
      {
        role: 'tool' as const,
        content: [{ type: 'tool-result' as const, toolCallId: 'c1', toolName: 'weather', output: { type: 'text' as const, value: '21C' } }],
      },
      { role: 'user' as const, content: 'Thanks' },
    ];
    for (const t of targets) {
      await generateText({ model: t.model(server), messages, tools: { weather }, maxRetries: 0, allowSystemInMessages: true });
    }
    const views = server.requests.map((r) => ({ ...r.view, model: '' }));
    expect(views[0]).toEqual({
      model: '',
      system: ['You are terse.'],
      messages: [
        { role: 'user', text: 'Weather in Paris?' },
        { role: 'assistant', text: 'Looking.', toolCalls: [{ id: 'c1', name: 'weather', input: { city: 'Paris' } }] },
        { role: 'tool', text: '', toolResults: [{ callId: 'c1', output: '21C' }] },
        { role: 'user', text: 'Thanks' },
      ],
      tools: ['weather'],
    });
    for (const v of views) expect(v).toEqual(views[0]);
  });
});
