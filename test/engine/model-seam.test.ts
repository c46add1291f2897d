// Item 1, the model seam: provider:id specs, keys from the environment, model_params.json and
// --param reaching the wire, harness-owned keys stripped, malformed files refused, cache modes.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveSettings } from '../../src/app/settings.ts';
import { parseModelSpec, PROVIDERS, resolveModel } from '../../src/model/providers.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import type { ModelServer } from '../support/model-server.ts';
import { echoTool, linesOf, OPENAI_KEY, openaiModel, rig, startModelServer, tmpHome } from './helpers.ts';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

describe('provider:id specs', () => {
  it('splits at the first colon, so model ids may themselves hold colons', () => {
    expect(parseModelSpec('openai:gpt-5.4-mini')).toEqual({ provider: 'openai', modelId: 'gpt-5.4-mini' });
    expect(parseModelSpec('ollama:llama3.1:8b')).toEqual({ provider: 'ollama', modelId: 'llama3.1:8b' });
    expect(parseModelSpec('openrouter:z-ai/glm-5.2')).toEqual({ provider: 'openrouter', modelId: 'z-ai/glm-5.2' });
  });

  it('refuses a spec without a provider, and an unknown provider, naming what to write', () => {
    expect(() => parseModelSpec('gpt-4o')).toThrow(/not a model spec/);
    expect(() => parseModelSpec('openai:')).toThrow(/not a model spec/);
    try {
      parseModelSpec('acme:model-1');
      expect.unreachable('an unknown provider must be refused');
    } catch (error) {
      expect((error as Error).message).toMatch(/Unknown model provider "acme"/);
      expect((error as { hint?: string }).hint).toMatch(/openai.*anthropic/);
    }
  });

  it('reads the spec from ACX_MODEL and says so when neither it nor --model is set', async () => {
    const model = await resolveModel({
      env: { ACX_MODEL: 'openai:from-env', OPENAI_API_KEY: OPENAI_KEY, OPENAI_BASE_URL: server.openaiBaseURL },
    });
    expect(model.provider).toBe('openai');
    expect(model.modelId).toBe('from-env');
    await expect(resolveModel({ env: {} })).rejects.toMatchObject({ hint: expect.stringMatching(/ACX_MODEL/) });
  });

  it('a missing key is a clear error naming the environment variable', async () => {
    await expect(resolveModel({ spec: 'openai:m', env: {} })).rejects.toThrow(/OPENAI_API_KEY/);
    await expect(resolveModel({ spec: 'anthropic:claude', env: {} })).rejects.toThrow(/ANTHROPIC_API_KEY/);
    await expect(resolveModel({ spec: 'xai:grok-4', env: {} })).rejects.toThrow(/XAI_API_KEY/);
    await expect(resolveModel({ spec: 'openrouter:x/y', env: {} })).rejects.toThrow(/OPENROUTER_API_KEY/);
    await expect(resolveModel({ spec: 'google:gemini', env: {} })).rejects.toThrow(/GOOGLE_GENERATIVE_AI_API_KEY/);
  });

  it('the openai chat surface speaks Chat Completions, the default speaks Responses', async () => {
    server.setFallback('ok');
    for (const surface of [undefined, 'chat'] as const) {
      const { agent } = rig(await openaiModel(server, surface));
      expect((await agent.generate({ prompt: 'hi' })).text).toBe('ok');
    }
    expect(server.requests.map((r) => r.path)).toEqual(['/v1/responses', '/v1/chat/completions']);
  });

  it('an OpenAI-compatible base URL (llama.cpp, vLLM, Ollama) needs no key', async () => {
    server.setFallback('local ok');
    const model = await resolveModel({ spec: 'llamacpp:qwen3', baseURL: server.openaiBaseURL, env: {} });
    const { agent } = rig(model);
    expect((await agent.generate({ prompt: 'hi' })).text).toBe('local ok');
    expect(server.requests[0]!.path).toBe('/v1/chat/completions');
    expect(server.requests[0]!.body.model).toBe('qwen3');
  });
});

describe('every provider runs a tool turn through its real AI SDK package', () => {
  const cases = [
    { spec: 'openai:gpt-test', env: (s: ModelServer) => ({ OPENAI_API_KEY: 'k', OPENAI_BASE_URL: s.openaiBaseURL }), path: '/v1/responses' },
    { spec: 'anthropic:claude-test', env: (s: ModelServer) => ({ ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: s.anthropicBaseURL }), path: '/v1/messages' },
    { spec: 'xai:grok-test', env: (s: ModelServer) => ({ XAI_API_KEY: 'k', XAI_BASE_URL: s.openaiBaseURL }), path: '/v1/responses' },
    { spec: 'openrouter:vendor/model', env: (s: ModelServer) => ({ OPENROUTER_API_KEY: 'k', OPENROUTER_BASE_URL: s.openaiBaseURL }), path: '/v1/chat/completions' },
    { spec: 'google:gemini-test', env: (s: ModelServer) => ({ GEMINI_API_KEY: 'k', GOOGLE_GENERATIVE_AI_BASE_URL: s.googleBaseURL }), path: '/v1beta/models/gemini-test:generateContent' },
    { spec: 'vllm:qwen-test', env: (s: ModelServer) => ({ ACX_BASE_URL: s.openaiBaseURL }), path: '/v1/chat/completions' },
  ];
  for (const c of cases) {
    it(c.spec, async () => {
      server.enqueue({ toolCalls: [{ name: 'echo', input: { text: 'hi' } }] }, 'done');
      const echo = echoTool();
      const { agent, logger } = rig(await resolveModel({ spec: c.spec, env: c.env(server) }), { agent: { tools: [echo] } });
      const result = await agent.generate({ prompt: 'echo hi' });
      expect(result.text).toBe('done');
      expect(echo.seen).toEqual(['hi']);
      expect(server.requests.map((r) => r.path)).toEqual([c.path, c.path]);
      expect(linesOf(logger.lines, 'INFO', 'llm')[0]).toContain(`provider=${c.spec.split(':')[0]}`);
    });
  }
});

describe('model_params.json and --param', () => {
  async function settingsWith(file: string | undefined, params: string[] = []) {
    const home = tmpHome();
    if (file !== undefined) writeFileSync(join(home, 'model_params.json'), file);
    const logger = createMemoryLogger('debug');
    const settings = await resolveSettings(
      { model: 'openai:m', configHome: home, home, ...(params.length ? { param: params } : {}) },
      { env: {}, logger },
    );
    return { settings, logger };
  }

  it('reach every model call on the wire (temperature and max tokens in the request body)', async () => {
    const { settings } = await settingsWith('{"temperature": 0.3}', ['maxOutputTokens=77']);
    server.enqueue({ toolCalls: [{ name: 'echo', input: { text: 'a' } }] }, 'done');
    const { agent } = rig(await openaiModel(server), { harness: { params: settings.modelParams }, agent: { tools: [echoTool()] } });
    await agent.generate({ prompt: 'go' });
    expect(server.requests).toHaveLength(2);
    for (const request of server.requests) {
      expect(request.body.temperature, 'model_params.json temperature on the wire').toBe(0.3);
      expect(request.body.max_output_tokens, '--param maxOutputTokens on the wire').toBe(77);
    }
  });

  it('--param overrides the file, on the chat wire too', async () => {
    const { settings } = await settingsWith('{"temperature": 0.3}', ['temperature=0.9']);
    server.setFallback('ok');
    const { agent } = rig(await openaiModel(server, 'chat'), { harness: { params: settings.modelParams } });
    await agent.generate({ prompt: 'go' });
    expect(server.requests[0]!.body.temperature).toBe(0.9);
  });

  it('harness-owned keys are stripped with a WARNING and never reach the wire', async () => {
    const { settings, logger } = await settingsWith('{"temperature": 0.5, "model": "gpt-evil", "tools": [], "messages": []}');
    expect(settings.modelParams).toEqual({ temperature: 0.5 });
    const warnings = linesOf(logger.lines, 'WARNING', 'model_params key stripped');
    expect(warnings.map((l) => /key=(\S+)/.exec(l)?.[1]).sort()).toEqual(['messages', 'model', 'tools']);
    server.setFallback('ok');
    const { agent } = rig(await openaiModel(server), { harness: { params: settings.modelParams } });
    await agent.generate({ prompt: 'go' });
    expect(server.requests[0]!.body.model).toBe('m');
    expect(server.requests[0]!.body.temperature).toBe(0.5);
  });

  it('a malformed file fails at start-up, naming the file; a missing file is simply off', async () => {
    await expect(settingsWith('{"temperature": 0.5,')).rejects.toThrow(/model_params\.json is not valid JSON/);
    await expect(settingsWith('[1, 2]')).rejects.toThrow(/model_params\.json must hold one JSON object/);
    await expect(settingsWith('"hot"')).rejects.toThrow(/model_params\.json must hold one JSON object/);
    await expect(settingsWith('{"temprature": 0.5}')).rejects.toThrow(/"temprature" is not a model call setting/);
    expect((await settingsWith(undefined)).settings.modelParams).toEqual({});
  });
});

describe("model_params.json in the providers' own wire names (the seed's example file)", () => {
  const SEED_EXAMPLE = '{"temperature": 0.7, "max_tokens": 4096, "reasoning": {"effort": "high"}}';
  const settingsFrom = async (file: string) => {
    const home = tmpHome();
    writeFileSync(join(home, 'model_params.json'), file);
    return resolveSettings({ model: 'openai:gpt-5.4-mini', configHome: home, home }, { env: {}, logger: createMemoryLogger() });
  };

  it('reads max_tokens, reasoning {effort} and the rest as the AI SDK settings they mean, and keeps the file verbatim', async () => {
    const settings = await settingsFrom(SEED_EXAMPLE);
    expect(settings.modelParams).toEqual({ temperature: 0.7, maxOutputTokens: 4096, reasoning: 'high' });
    expect(settings.modelParamsVerbatim).toEqual(JSON.parse(SEED_EXAMPLE));
    expect((await settingsFrom('{"top_p": 0.9, "stop": "END", "reasoning_effort": "low", "frequency_penalty": 0.1}')).modelParams).toEqual({
      topP: 0.9,
      stopSequences: ['END'],
      reasoning: 'low',
      frequencyPenalty: 0.1,
    });
  });

  it('reach the Responses and the Chat Completions wire under their own names there', async () => {
    const settings = await settingsFrom(SEED_EXAMPLE);
    server.setFallback('ok');
    for (const surface of [undefined, 'chat'] as const) {
      const { agent } = rig(await openaiModel(server, surface, 'gpt-5.4-mini'), { harness: { params: settings.modelParams } });
      await agent.generate({ prompt: 'go' });
    }
    const [responses, chat] = server.requests;
    expect(responses!.body.max_output_tokens).toBe(4096);
    expect(responses!.body.reasoning).toMatchObject({ effort: 'high' });
    expect(chat!.body.max_completion_tokens ?? chat!.body.max_tokens).toBe(4096);
    expect(chat!.body.reasoning_effort).toBe('high');
  });

  it('refuses what it cannot map, naming the key and where it goes instead', async () => {
    await expect(settingsFrom('{"max_tokens": 10, "maxOutputTokens": 20}')).rejects.toThrow(/"max_tokens" and "maxOutputTokens" both set maxOutputTokens/);
    await expect(settingsFrom('{"reasoning": {"effort": "high", "max_tokens": 2000}}')).rejects.toThrow(/"max_tokens", which has no AI SDK call setting/);
    await expect(settingsFrom('{"reasoning_effort": "extreme"}')).rejects.toThrow(/must be a reasoning level/);
    await expect(settingsFrom('{"logit_bias": {}}')).rejects.toThrow(/"logit_bias" is not a model call setting/);
  });
});

describe('prompt-cache affinity by session', () => {
  it('OpenAI gets one prompt_cache_key per session, the same across turns and processes, and the operator\'s own wins', async () => {
    server.setFallback('ok');
    const home = tmpHome();
    for (const sessionId of ['alpha', 'alpha', 'beta']) {
      const { agent } = rig(await openaiModel(server), { home });
      const session = await agent.createSession({ sessionId });
      await agent.generate({ session, prompt: 'hi' });
    }
    const keys = server.requests.map((request) => request.body.prompt_cache_key as string);
    expect(keys[0]).toMatch(/^acx-[0-9a-f]{32}$/);
    expect(keys[1]).toBe(keys[0]);
    expect(keys[2]).not.toBe(keys[0]);
    expect(JSON.stringify(server.requests[0]!.body)).not.toContain('alpha');
    const { agent } = rig(await openaiModel(server), { harness: { params: { providerOptions: { openai: { promptCacheKey: 'mine' } } } } });
    await agent.generate({ prompt: 'hi' });
    expect(server.requests.at(-1)!.body.prompt_cache_key).toBe('mine');
  });

  it('xAI gets the x-grok-conv-id header; providers without such a key get nothing', async () => {
    server.setFallback('ok');
    const xai = await resolveModel({ spec: 'xai:grok-test', env: { XAI_API_KEY: 'k', XAI_BASE_URL: server.openaiBaseURL } });
    const { agent } = rig(xai);
    const session = await agent.createSession({ sessionId: 'gamma' });
    await agent.generate({ session, prompt: 'hi' });
    expect(server.requests[0]!.headers['x-grok-conv-id']).toMatch(/^acx-[0-9a-f]{32}$/);
    expect(server.requests[0]!.body.prompt_cache_key).toBeUndefined();
    const router = await resolveModel({ spec: 'openrouter:vendor/model', env: { OPENROUTER_API_KEY: 'k', OPENROUTER_BASE_URL: server.openaiBaseURL } });
    await rig(router).agent.generate({ prompt: 'hi' });
    expect(server.requests[1]!.headers['x-grok-conv-id']).toBeUndefined();
    expect(server.requests[1]!.body.prompt_cache_key).toBeUndefined();
  });
});

describe('request headers', () => {
  it('carry the AI SDK user-agent suffix after the operator\'s own, with the operator\'s headers kept', async () => {
    server.setFallback('ok');
    const aiVersion = (JSON.parse(readFileSync(join(import.meta.dirname, '../../node_modules/ai/package.json'), 'utf8')) as { version: string }).version;
    await rig(await openaiModel(server)).agent.generate({ prompt: 'hi' });
    expect(server.requests[0]!.headers['user-agent']).toContain(`ai/${aiVersion}`);
    const { agent } = rig(await openaiModel(server), { harness: { params: { headers: { 'User-Agent': 'my-app/2', 'X-Team': 'infra' } } } });
    await agent.generate({ prompt: 'hi' });
    const headers = server.requests[1]!.headers;
    expect(headers['user-agent']).toMatch(new RegExp(`^my-app/2 ai/${aiVersion.replaceAll('.', '\\.')}( |$)`));
    expect(headers['x-team']).toBe('infra');
  });
});

describe('cache modes', () => {
  it('every provider declares a valid cacheMode (a new provider without one fails here)', () => {
    const entries = Object.entries(PROVIDERS);
    expect(entries.length).toBeGreaterThanOrEqual(6);
    for (const [name, definition] of entries) {
      expect(['automatic', 'explicit', 'none'], `provider ${name} must declare cacheMode`).toContain(definition.cacheMode);
    }
    expect(PROVIDERS.anthropic!.cacheMode).toBe('explicit');
    for (const name of ['openai', 'xai', 'openrouter']) expect(PROVIDERS[name]!.cacheMode).toBe('automatic');
  });

  it('the resolved model carries its provider cache mode', async () => {
    expect((await openaiModel(server)).cacheMode).toBe('automatic');
  });
});
