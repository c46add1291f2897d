// OpenRouter's serving endpoint in the `llm` line: every call asks for the router's metadata
// (X-OpenRouter-Metadata: enabled), and `endpoint=` names the endpoint the router flagged as
// selected — never the response's top-level `provider` (the last upstream OpenRouter spoke to) —
// streamed or not; with none selected the field is left out, never guessed.
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

const openrouter = () => resolveModel({ spec: 'openrouter:z-ai/glm-5.2', env: { OPENROUTER_API_KEY: 'sk-or-test', OPENROUTER_BASE_URL: server.openaiBaseURL } });
const routed = { routing: [{ provider: 'Novita' }, { provider: 'StreamLake', selected: true }], provider: 'OpenAI' };
const llmLine = (lines: readonly string[]) => lines.find((line) => line.startsWith('INFO llm '));

describe('the endpoint OpenRouter routed a call to', () => {
  it('is asked for on every call and named in the llm line, from the selected endpoint', async () => {
    server.enqueue({ text: 'hello', ...routed, usage: { inputTokens: 100, outputTokens: 5, cost: 0.0445 } });
    const { agent, logger } = rig(await openrouter());
    expect((await agent.generate({ prompt: 'hi' })).text).toBe('hello');
    expect(server.requests[0]!.headers['x-openrouter-metadata']).toBe('enabled');
    expect(llmLine(logger.lines)).toMatch(/^INFO llm provider=openrouter endpoint=StreamLake model=z-ai\/glm-5\.2 duration=\S+ tokens_in=100 tokens_out=5 tokens_total=105 .*cost=0\.0445/);
  });

  it('is read from the stream’s last chunk when the call streams', async () => {
    server.enqueue({ text: 'streamed hello', ...routed });
    const { agent, logger } = rig(await openrouter());
    const stream = agent.stream({ prompt: 'hi' });
    expect(await stream.text).toBe('streamed hello');
    expect(server.requests[0]!.stream).toBe(true);
    expect(llmLine(logger.lines)).toMatch(/^INFO llm provider=openrouter endpoint=StreamLake model=/);
  });

  it('is left out when the router names no selected endpoint, whatever the top-level provider says', async () => {
    server.enqueue({ text: 'hello', routing: [{ provider: 'Novita' }], provider: 'OpenAI' });
    const { agent, logger } = rig(await openrouter());
    await agent.generate({ prompt: 'hi' });
    expect(llmLine(logger.lines)).toMatch(/^INFO llm provider=openrouter model=z-ai\/glm-5\.2 /);
    expect(llmLine(logger.lines)).not.toMatch(/endpoint=|OpenAI/);
  });
});
