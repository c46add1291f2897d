// The model's context window, asked of the providers that state it (xAI, OpenRouter, vLLM and other
// OpenAI-compatible servers, llama.cpp, the Gemini API), by a real HTTP request to a local server
// speaking each shape; silence or failure means "unknown", never a failed start.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discoverContextWindow } from '../../src/model/context-window.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';

let server: Server;
let base: string;
const seen: Array<{ url: string; headers: IncomingMessage['headers'] }> = [];
const routes: Record<string, unknown> = {
  '/or/v1/models': { data: [{ id: 'other/model', context_length: 8_000 }, { id: 'anthropic/claude-x', context_length: 200_000 }] },
  '/vllm/v1/models': { object: 'list', data: [{ id: 'qwen-local', object: 'model', max_model_len: 32_768 }] },
  '/cpp/props': { default_generation_settings: { n_ctx: 16_384 } },
  '/g/v1beta/models/gemini-test': { name: 'models/gemini-test', inputTokenLimit: 1_048_576 },
  '/silent/v1/models': { data: [{ id: 'qwen-local' }] },
  '/or/v1/models/z-ai/glm-5.2/endpoints': { data: { id: 'z-ai/glm-5.2', endpoints: [{ provider_name: 'A', context_length: 200_000 }, { provider_name: 'B', context_length: 32_768 }, { provider_name: 'C', context_length: 131_072 }] } },
  '/xai/v1/models': { object: 'list', data: [{ id: 'grok-3', context_length: 131_072 }, { id: 'grok-4-0709', aliases: ['grok-4', 'grok-4-latest'], context_length: 256_000 }] },
};

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    seen.push({ url: req.url ?? '', headers: req.headers });
    const body = routes[req.url ?? ''];
    if (req.url === '/slow/v1/models') return; // never answers
    res.writeHead(body ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(body ?? { error: 'not found' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('discoverContextWindow', () => {
  it('reads each provider shape, sending the key the provider expects', async () => {
    // OpenRouter: the smallest window among the endpoints it routes the model to (any may serve a call)…
    expect(await discoverContextWindow({ provider: 'openrouter', modelId: 'z-ai/glm-5.2', baseURL: `${base}/or/v1`, apiKey: 'or-key' })).toBe(32_768);
    expect(seen.at(-1)!.url).toBe('/or/v1/models/z-ai/glm-5.2/endpoints');
    // …and its model list when the endpoints are not stated.
    expect(await discoverContextWindow({ provider: 'openrouter', modelId: 'anthropic/claude-x', baseURL: `${base}/or/v1`, apiKey: 'or-key' })).toBe(200_000);
    expect(seen.slice(-2).map((s) => s.url)).toEqual(['/or/v1/models/anthropic/claude-x/endpoints', '/or/v1/models']);
    expect(seen.at(-1)!.headers.authorization).toBe('Bearer or-key');
    expect(await discoverContextWindow({ provider: 'vllm', modelId: 'qwen-local', baseURL: `${base}/vllm/v1/`, apiKey: undefined })).toBe(32_768);
    expect(seen.at(-1)!.headers.authorization).toBeUndefined();
    expect(await discoverContextWindow({ provider: 'llamacpp', modelId: 'any', baseURL: `${base}/cpp/v1`, apiKey: undefined })).toBe(16_384);
    expect(await discoverContextWindow({ provider: 'google', modelId: 'gemini-test', baseURL: `${base}/g/v1beta`, apiKey: 'g-key' })).toBe(1_048_576);
    expect(seen.at(-1)!.headers['x-goog-api-key']).toBe('g-key');
    // xAI lists each model's context_length; a model asked for by an alias is found under it.
    expect(await discoverContextWindow({ provider: 'xai', modelId: 'grok-4', baseURL: `${base}/xai/v1`, apiKey: 'xai-key' })).toBe(256_000);
    expect(seen.at(-1)!.url).toBe('/xai/v1/models');
    expect(seen.at(-1)!.headers.authorization).toBe('Bearer xai-key');
    expect(await discoverContextWindow({ provider: 'xai', modelId: 'grok-3', baseURL: `${base}/xai/v1`, apiKey: 'xai-key' })).toBe(131_072);
  });

  it('is unknown, without failing, when the provider is silent, wrong, slow or never asked', async () => {
    const logger = createMemoryLogger('debug');
    const before = seen.length;
    expect(await discoverContextWindow({ provider: 'vllm', modelId: 'qwen-local', baseURL: `${base}/silent/v1`, apiKey: undefined, logger })).toBeUndefined();
    expect(await discoverContextWindow({ provider: 'openai-compatible', modelId: 'missing', baseURL: `${base}/nothing/v1`, apiKey: undefined, logger })).toBeUndefined();
    expect(await discoverContextWindow({ provider: 'vllm', modelId: 'x', baseURL: `${base}/slow/v1`, apiKey: undefined, timeoutMs: 200, logger })).toBeUndefined();
    expect(logger.lines.join('\n')).toMatch(/DEBUG context window query failed provider=openai-compatible model=missing error="HTTP 404"/);
    // OpenAI and Anthropic do not state it: no request is made.
    expect(await discoverContextWindow({ provider: 'openai', modelId: 'gpt', baseURL: `${base}/v1`, apiKey: 'k' })).toBeUndefined();
    expect(await discoverContextWindow({ provider: 'anthropic', modelId: 'claude', baseURL: base, apiKey: 'k' })).toBeUndefined();
    expect(seen.length - before).toBe(3);
  });
});
