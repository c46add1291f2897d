// xAI's Chat Completions surface (`--surface chat`): the call goes to xAI's /v1/chat/completions
// with the xAI key, the log names the endpoint vendor (provider=xai), and without a configured
// ceiling the context window is the one xAI states for the model, not the engine's 128k floor.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveModel } from '../../src/model/providers.ts';
import { type ModelServer, startModelServer } from '../support/model-server.ts';
import { rig } from '../engine/helpers.ts';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

describe('xAI on the Chat Completions surface', () => {
  it('answers through /v1/chat/completions with the xAI key, logged as provider=xai', async () => {
    server.enqueue('Hello from grok.');
    const model = await resolveModel({ spec: 'xai:grok-4', surface: 'chat', env: { XAI_API_KEY: 'xai-test', XAI_BASE_URL: server.openaiBaseURL } });
    expect(model.surface).toBe('chat');
    const { agent, logger } = rig(model);
    expect((await agent.generate({ prompt: 'hi' })).text).toBe('Hello from grok.');
    expect(server.requests.map((r) => [r.path, r.headers.authorization, r.body.model])).toEqual([['/v1/chat/completions', 'Bearer xai-test', 'grok-4']]);
    expect(logger.lines.find((line) => line.startsWith('INFO llm '))).toMatch(/^INFO llm provider=xai model=grok-4 /);
  });

  it('a surface xAI does not have is refused, naming the ones it has', async () => {
    await expect(resolveModel({ spec: 'xai:grok-4', surface: 'native', env: { XAI_API_KEY: 'xai-test' } })).rejects.toThrow(/The xai provider has no "native" surface/);
  });
});
