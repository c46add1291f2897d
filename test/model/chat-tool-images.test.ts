// Vision on the Chat Completions wire (`--surface chat` on OpenAI, and every `openai-compatible:`
// server): an image a tool returned reaches the model as an image part — in a user message right
// after the tool message, since that wire takes no image in a tool message (the local model
// server refuses one, as OpenAI does) — and never as base64 text inside the tool's JSON.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveModel, type ResolvedModel } from '../../src/model/providers.ts';
import { tool } from '../../src/tools/tool.ts';
import { z } from 'zod';
import { type ModelServer, startModelServer } from '../support/model-server.ts';
import { rig } from '../engine/helpers.ts';

const PIXEL = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

const screenshot = tool({
  name: 'screenshot',
  description: 'Takes a screenshot',
  inputSchema: z.object({}),
  capabilityScopes: [],
  kind: 'read',
  effect: 'read-only',
  execute: () => [
    { type: 'text' as const, text: 'The page as it looks now.' },
    { type: 'image' as const, data: PIXEL, mediaType: 'image/png' },
  ],
});

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

const models: Array<[string, (s: ModelServer) => Promise<ResolvedModel>]> = [
  ['openai --surface chat', (s) => resolveModel({ spec: 'openai:gpt-4o', surface: 'chat', env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: s.openaiBaseURL } })],
  ['openai-compatible', (s) => resolveModel({ spec: 'openai-compatible:qwen-vl', env: { ACX_BASE_URL: s.openaiBaseURL } })],
];

describe.each(models)('a tool’s image on the Chat Completions wire (%s)', (_name, model) => {
  it('reaches the model as an image part in a user message after the tool message, not as base64 in the tool’s text', async () => {
    server.enqueue({ toolCalls: [{ id: 'call_shot', name: 'screenshot', input: {} }] }, 'A login form.');
    const { agent } = rig(await model(server), { agent: { tools: [screenshot] } });
    const result = await agent.generate({ prompt: 'what does the page show?' });
    expect(result.text).toBe('A login form.');
    expect(server.requests).toHaveLength(2);
    const messages = server.requests[1]!.body.messages as Array<{ role: string; content: unknown; tool_call_id?: string }>;
    const at = messages.findIndex((m) => m.role === 'tool');
    expect(messages[at]).toMatchObject({ role: 'tool', tool_call_id: 'call_shot', content: 'The page as it looks now.\n[image/png image: shown in the next message]' });
    expect(messages[at + 1]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'The image screenshot returned (call call_shot):' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${PIXEL}` } },
      ],
    });
    // The only place the pixels travel is that image part.
    expect(JSON.stringify(messages).split(PIXEL)).toHaveLength(2);
  });
});
