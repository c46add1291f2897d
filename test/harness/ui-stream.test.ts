// A HarnessAgent served as the AI SDK serves any Agent: createAgentUIStreamResponse in a real
// HTTP server on 127.0.0.1, read back with the AI SDK's own SSE parser and UI message reader, and
// an approval answered the AI SDK way (the chat sent again, its tool part approval-responded).
import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import {
  type Agent,
  createAgentUIStream,
  createAgentUIStreamResponse,
  parseJsonEventStream,
  readUIMessageStream,
  type ToolSet,
  type UIMessage,
  type UIMessageChunk,
  uiMessageChunkSchema,
} from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEngineHarness } from '../../src/harness/engine-harness.ts';
import { type HarnessCallOptions, HarnessAgent } from '../../src/harness/harness-agent.ts';
import type { HarnessOutput } from '../../src/harness/harness-results.ts';
import { fromLanguageModel } from '../../src/model/providers.ts';
import { tool } from '../../src/tools/tool.ts';
import { lastUserText, scriptedModel, toolResultCount } from '../support/scripted-model.ts';

const deployed: string[] = [];
const deploy = tool({
  name: 'deploy',
  description: 'Deploy the service to an environment',
  inputSchema: z.object({ env: z.string() }),
  capabilityScopes: [],
  kind: 'execute', // asks under the default allow-edits
  effect: 'unsafe',
  execute: ({ env }) => (deployed.push(env), `deployed to ${env}`),
});

const model = scriptedModel((options) => {
  if (toolResultCount(options) > 0) return { text: 'Deployed to prod.' };
  if (lastUserText(options).includes('deploy')) return { toolCalls: [{ id: 'call-1', name: 'deploy', input: { env: 'prod' } }] };
  return { text: 'Hello from acx.' };
});
const agent = new HarnessAgent({
  harness: createEngineHarness({ model: fromLanguageModel(model), home: mkdtempSync(join(tmpdir(), 'acx-ui-')) }),
  tools: [deploy],
});

// The type-level claim: a HarnessAgent is an AI SDK Agent.
const asAgent: Agent<HarnessCallOptions | undefined, ToolSet, Record<string, unknown>, HarnessOutput> = agent;

let server: Server;
let url: string;
beforeAll(async () => {
  server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string; messages: UIMessage[] };
    // The chat id picks the session, so the second request finds the turn that asked.
    const response = await createAgentUIStreamResponse({ agent, uiMessages: body.messages, options: { sessionId: body.id } });
    res.writeHead(response.status, Object.fromEntries(response.headers));
    Readable.fromWeb(response.body! as never).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/chat`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** Posts the chat and reads the reply the way the AI SDK's client does: SSE → chunks → one assistant UIMessage. */
async function send(id: string, messages: UIMessage[], continuing?: UIMessage): Promise<{ message: UIMessage; chunks: string[]; contentType: string | null }> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id, messages }) });
  const types: string[] = [];
  const chunks = parseJsonEventStream({ stream: response.body!, schema: uiMessageChunkSchema }).pipeThrough(
    new TransformStream<{ success: boolean; value?: UIMessageChunk; error?: unknown }, UIMessageChunk>({
      transform(parsed, controller) {
        if (!parsed.success) throw parsed.error;
        types.push(parsed.value!.type);
        controller.enqueue(parsed.value!);
      },
    }),
  );
  let message: UIMessage | undefined;
  for await (const m of readUIMessageStream({ stream: chunks, ...(continuing ? { message: continuing } : {}), terminateOnError: true })) message = m;
  return { message: message!, chunks: types, contentType: response.headers.get('content-type') };
}

const user = (text: string): UIMessage => ({ id: `u-${text}`, role: 'user', parts: [{ type: 'text', text }] });

describe('a HarnessAgent through createAgentUIStreamResponse', () => {
  it('is an AI SDK Agent: version agent-v1, an id, its tools by name', () => {
    expect(asAgent.version).toBe('agent-v1');
    expect(asAgent.id).toBe('agent');
    expect(Object.keys(asAgent.tools)).toEqual(['deploy']);
  });

  it('streams a plain reply as a UI message', async () => {
    const { message, chunks, contentType } = await send('chat-hello', [user('hi')]);
    expect(contentType).toBe('text/event-stream');
    expect(message.role).toBe('assistant');
    expect(message.parts.filter((p) => p.type === 'text')).toEqual([expect.objectContaining({ type: 'text', text: 'Hello from acx.', state: 'done' })]);
    expect(chunks).toEqual(['start', 'start-step', 'text-start', 'text-delta', 'text-end', 'finish-step', 'finish']);
  });

  it('asks for approval, and the approval answered in a second request runs the tool and finishes the turn', async () => {
    deployed.length = 0;
    const first = await send('chat-deploy', [user('please deploy')]);
    const asked = first.message.parts.find((p) => p.type === 'tool-deploy') as Extract<UIMessage['parts'][number], { type: `tool-${string}` }>;
    expect(asked).toMatchObject({ type: 'tool-deploy', toolCallId: 'call-1', state: 'approval-requested', input: { env: 'prod' } });
    expect(deployed, 'nothing runs before the answer').toEqual([]);

    // What the AI SDK's addToolApprovalResponse does to the message, then the chat is sent again.
    const answered: UIMessage = {
      ...first.message,
      parts: first.message.parts.map((p) => (p === asked ? ({ ...asked, state: 'approval-responded', approval: { id: asked.approval!.id, approved: true } } as typeof p) : p)),
    };
    const second = await send('chat-deploy', [user('please deploy'), answered], answered);
    expect(deployed).toEqual(['prod']);
    const done = second.message.parts.find((p) => p.type === 'tool-deploy');
    expect(done).toMatchObject({ state: 'output-available', output: 'deployed to prod', approval: { approved: true } });
    expect(second.message.parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text)).toEqual(['Deployed to prod.']);
  });

  it('an approval denied in the UI: the tool never runs, its part ends output-denied, the model is told', async () => {
    deployed.length = 0;
    const first = await send('chat-deny', [user('please deploy')]);
    const asked = first.message.parts.find((p) => p.type === 'tool-deploy') as Extract<UIMessage['parts'][number], { type: `tool-${string}` }>;
    const answered: UIMessage = {
      ...first.message,
      parts: first.message.parts.map((p) => (p === asked ? ({ ...asked, state: 'approval-responded', approval: { id: asked.approval!.id, approved: false, reason: 'not today' } } as typeof p) : p)),
    };
    const second = await send('chat-deny', [user('please deploy'), answered], answered);
    expect(deployed).toEqual([]);
    expect(second.message.parts.find((p) => p.type === 'tool-deploy')).toMatchObject({ state: 'output-denied' });
    expect(second.chunks).toContain('tool-output-denied');
  });

  it('createAgentUIStream takes it too', async () => {
    const stream = await createAgentUIStream({ agent, uiMessages: [user('hi')], options: { sessionId: 'chat-direct' } });
    const types: string[] = [];
    for await (const chunk of stream) types.push(chunk.type);
    expect(types).toEqual(['start', 'start-step', 'text-start', 'text-delta', 'text-end', 'finish-step', 'finish']);
  });
});
