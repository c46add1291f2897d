// stream() makes its model calls as streams, generate() without: the model must not be able to
// tell. For every wire, a turn with reasoning, a tool call and a final answer is run both ways,
// and the follow-up request (the history as the provider receives it: reasoning items with their
// signatures and ids, the call, its result) and the turn's result must be the same.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveModel } from '../../src/model/providers.ts';
import type { HarnessStreamPart } from '../../src/engine/events.ts';
import type { ModelServer } from '../support/model-server.ts';
import { anthropicModel, echoTool, openaiModel, rig, startModelServer } from './helpers.ts';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

const wires = {
  'openai responses': () => openaiModel(server, 'responses'),
  'openai chat': () => openaiModel(server, 'chat'),
  anthropic: () => anthropicModel(server),
  google: () => resolveModel({ spec: 'google:gemini-test', env: { GEMINI_API_KEY: 'k', GOOGLE_GENERATIVE_AI_BASE_URL: server.googleBaseURL } }),
} as const;

/**
 * The request without what legitimately differs between the two runs: the stream flags, the
 * clock, the ids the server numbered per response, and Anthropic's eager tool-input streaming,
 * which its provider asks for on streamed calls only.
 */
function comparable(body: unknown): string {
  const drop = new Set(['stream', 'stream_options', 'eager_input_streaming']);
  return JSON.stringify(body, (key, value) => (drop.has(key) ? undefined : value))
    .replace(/Current Time[^\\"]*/g, 'Current Time <now>')
    .replace(/\b(rs|call|toolu|sig|msg|fc)_\d+/g, '$1_<n>');
}

describe('stream() and generate() send the model the same requests', () => {
  for (const [wire, model] of Object.entries(wires)) {
    it(`on the ${wire} wire`, async () => {
      const script = () =>
        server.enqueue(
          { reasoning: 'The user wants an echo.', toolCalls: [{ name: 'echo', input: { text: 'kiwi' } }] },
          { reasoning: 'Now answer.', text: 'Echoed kiwi.' },
        );
      const clock = () => new Date('2026-11-30T12:00:00Z');

      script();
      const plain = rig(await model(), { harness: { clock }, agent: { tools: [echoTool()] } });
      const generated = await plain.agent.generate({ session: await plain.agent.createSession({ sessionId: 's' }), prompt: 'echo kiwi' });
      const generatedRequests = server.requests.splice(0);

      script();
      const streaming = rig(await model(), { harness: { clock }, agent: { tools: [echoTool()] } });
      const stream = streaming.agent.stream({ session: await streaming.agent.createSession({ sessionId: 's' }), prompt: 'echo kiwi' });
      const parts: HarnessStreamPart[] = [];
      for await (const part of stream.harnessStream) parts.push(part);
      const streamed = await stream.result;
      const streamedRequests = server.requests.splice(0);

      expect(streamedRequests.map((r) => r.stream)).toEqual([true, true]);
      expect(generatedRequests.map((r) => r.stream)).toEqual([false, false]);
      expect(comparable(streamedRequests[1]!.body)).toBe(comparable(generatedRequests[1]!.body));
      if (wire === 'google') {
        // Gemini 3 rejects a replayed function call without the signature it was given.
        const replayed = JSON.stringify(streamedRequests[1]!.body);
        expect(replayed).toMatch(/"name":"echo","args":\{"text":"kiwi"\}\},"thoughtSignature":"sig-call_\d+"/);
        expect(replayed).not.toContain('skip_thought_signature_validator');
      }
      expect(streamed.text).toBe('Echoed kiwi.');
      expect(streamed.text).toBe(generated.text);
      expect(comparable(streamed.toolResults)).toBe(comparable(generated.toolResults));
      // The server counts input tokens from the raw body, which the stream flags lengthen.
      expect(streamed.usage.outputTokens).toBe(generated.usage.outputTokens);
      expect(streamed.usage.inputTokens).toBeGreaterThan(0);
      expect(parts.filter((p) => p.type === 'text-delta').map((p) => (p as { text: string }).text).join('')).toBe('Echoed kiwi.');
      // OpenAI's Chat Completions provider reads no reasoning off the wire; the others stream it.
      const reasoning = parts.filter((p) => p.type === 'reasoning-delta').map((p) => (p as { text: string }).text).join('');
      expect(reasoning).toBe(wire === 'openai chat' ? '' : 'The user wants an echo.Now answer.');
      const journal = (r: typeof plain) => r.readJournal((j) => j.messages('s').map((m) => m.message));
      expect(comparable(journal(streaming))).toBe(comparable(journal(plain)));
    });
  }
});
