// Issue 30 items 1, 2 and 4, as a chat app on acx meets them: a real server process
// (test/support/chat-app/server.ts: createAgentUIStreamResponse piped with .pipe(), onFinish
// persistence, the history GET) over the real OpenAI wire to the local model server, read with the
// AI SDK's own UI message reader. A new message while an approval waits is declined by default (or
// refused, when the app says so), the stream is one the client can read in every case, and no
// request takes the server down.
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { UIMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChatApp, chatModel, startChatApp } from '../support/chat-app/start.ts';
import { answered, postChat, texts, toolPart, userMessage } from '../support/chat-app/client.ts';
import { type ModelServer, startModelServer } from '../support/model-server.ts';

let model: ModelServer;
let app: ChatApp;
let strict: ChatApp;
const homes = { app: '', strict: '' };

beforeAll(async () => {
  model = await startModelServer({ fallback: chatModel });
  homes.app = mkdtempSync(join(tmpdir(), 'acx-ui-chat-'));
  homes.strict = mkdtempSync(join(tmpdir(), 'acx-ui-chat-strict-'));
  [app, strict] = await Promise.all([
    startChatApp({ home: homes.app, openaiBaseURL: model.openaiBaseURL }),
    startChatApp({ home: homes.strict, openaiBaseURL: model.openaiBaseURL, policy: 'error' }),
  ]);
});
afterAll(async () => {
  await Promise.all([app?.close(), strict?.close()]);
  await model?.close();
});

/** The last model request's tool results, as the model read them. */
const lastToolResults = () => model.requests.at(-1)!.view.messages.flatMap((m) => m.toolResults ?? []);
/** The environments the chat's deploy calls ran for (the tool's own record). */
const deployed = (home: string, chat: string) =>
  (existsSync(join(home, 'deployed')) ? readFileSync(join(home, 'deployed'), 'utf8') : '')
    .split('\n')
    .flatMap((line) => (line.startsWith(`${chat} `) ? [line.slice(chat.length + 1)] : []));
const history = async (base: string, id: string) => (await fetch(`${base}/api/chat/${id}`)).json() as Promise<UIMessage[]>;

describe('a new message while an approval waits', () => {
  it("declines it by default: the tool never runs, the model is told the user moved on, the reply is the new message's, and the server stays up", async () => {
    const ask = userMessage('u1', 'please deploy');
    const first = await postChat(app.url, 'moved-on', [ask]);
    expect(toolPart(first.message, 'deploy')).toMatchObject({ state: 'approval-requested', input: { env: 'prod' } });

    // The person types instead of clicking: useChat sends the chat with the new message last.
    const second = await postChat(app.url, 'moved-on', [ask, first.message!, userMessage('u2', 'hello')]);
    expect(second.errors).toEqual([]);
    // Only the new message's turn: nothing about the declined call, which this message never had.
    expect(second.chunks.map((c) => c.type).filter((type) => type !== 'text-delta')).toEqual(['start', 'start-step', 'text-start', 'text-end', 'finish-step', 'finish']);
    expect(texts(second.message)).toEqual(['You said: hello']);
    expect(lastToolResults()).toEqual([{ callId: toolPart(first.message, 'deploy')!.toolCallId, output: 'Not run: the turn was abandoned (the user moved on without approving).' }]);
    expect(deployed(homes.app, 'moved-on')).toEqual([]);
    expect(app.alive(), app.stderr()).toBe(true);

    // The chat goes on, and a reload shows the declined call as denied, saying why.
    const third = await postChat(app.url, 'moved-on', [ask, first.message!, userMessage('u2', 'hello'), second.message!, userMessage('u3', 'weather please')]);
    expect(texts(third.message)).toEqual(['Done: sunny in Paris']);
    const reloaded = await history(app.url, 'moved-on');
    expect(reloaded.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user', 'assistant']);
    expect(toolPart(reloaded[1], 'deploy')).toMatchObject({
      state: 'output-denied',
      approval: { approved: false, reason: 'Not run: the turn was abandoned (the user moved on without approving).' },
    });
  });

  it("with pendingApprovalOnNewMessage 'error': the message is refused in words the page can show, and the approval still answers", async () => {
    const ask = userMessage('u1', 'please deploy');
    const first = await postChat(strict.url, 'strict', [ask]);
    const refused = await postChat(strict.url, 'strict', [ask, first.message!, userMessage('u2', 'hello')]);
    expect(refused.errors).toEqual(['A tool call (deploy) is waiting for approval, so the new message was not taken.']);
    expect(refused.chunks.some((c) => c.type.startsWith('tool-')), 'no part about the waiting call').toBe(false);
    expect(strict.alive(), strict.stderr()).toBe(true);

    const approved = await postChat(strict.url, 'strict', [ask, answered(first.message!, true)]);
    expect(approved.errors).toEqual([]);
    expect(toolPart(approved.message, 'deploy')).toMatchObject({ state: 'output-available', output: 'deployed to prod', approval: { approved: true } });
    expect(texts(approved.message)).toEqual(['Done: deployed to prod']);
    expect(deployed(homes.strict, 'strict')).toEqual(['prod']);
  });
});

describe('the history after a reload: session.uiMessages() through uiMessagesResponse', () => {
  it('gives back each turn as useChat holds it, an approval still waiting answerable from the reloaded page', async () => {
    const weather = await postChat(app.url, 'reload', [userMessage('r1', 'weather please')]);
    expect(texts(weather.message)).toEqual(['Done: sunny in Paris']);
    const asked = await postChat(app.url, 'reload', [userMessage('r1', 'weather please'), weather.message!, userMessage('r2', 'please deploy')]);
    const callId = toolPart(asked.message, 'deploy')!.toolCallId;

    const response = await fetch(`${app.url}/api/chat/reload`);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.headers.get('cache-control')).toBe('no-store');
    const reloaded = (await response.json()) as UIMessage[];
    const weatherCall = toolPart(weather.message, 'weather')!.toolCallId;
    expect(reloaded).toEqual([
      { id: expect.any(String), role: 'user', parts: [{ type: 'text', text: 'weather please' }] },
      {
        id: expect.any(String),
        role: 'assistant',
        parts: [
          { type: 'step-start' },
          { type: 'tool-weather', toolCallId: weatherCall, state: 'output-available', input: { city: 'Paris' }, output: 'sunny in Paris' },
          { type: 'step-start' },
          { type: 'text', text: 'Done: sunny in Paris', state: 'done' },
        ],
      },
      { id: expect.any(String), role: 'user', parts: [{ type: 'text', text: 'please deploy' }] },
      {
        id: expect.any(String),
        role: 'assistant',
        parts: [{ type: 'step-start' }, { type: 'tool-deploy', toolCallId: callId, state: 'approval-requested', input: { env: 'prod' }, approval: { id: callId } }],
      },
    ]);

    // The reloaded page approves: the reply continues the reloaded message.
    const approved = await postChat(app.url, 'reload', [...reloaded.slice(0, 3), answered(reloaded[3]!, true)]);
    expect(approved.errors).toEqual([]);
    expect(approved.message!.id).toBe(reloaded[3]!.id);
    expect(toolPart(approved.message, 'deploy')).toMatchObject({ state: 'output-available', output: 'deployed to prod', approval: { approved: true } });
    const after = await history(app.url, 'reload');
    expect(toolPart(after[3], 'deploy')).toEqual({
      type: 'tool-deploy',
      toolCallId: callId,
      state: 'output-available',
      input: { env: 'prod' },
      output: 'deployed to prod',
      approval: { id: callId, approved: true },
    });
    expect(texts(after[3])).toEqual(['Done: deployed to prod']);
  });

  it('a denied call comes back denied, with the reason the person gave', async () => {
    const ask = userMessage('d1', 'please deploy');
    const first = await postChat(app.url, 'denied', [ask]);
    await postChat(app.url, 'denied', [ask, answered(first.message!, false, 'not on a Friday')]);
    const after = await history(app.url, 'denied');
    expect(toolPart(after[1], 'deploy')).toMatchObject({ state: 'output-denied', approval: { approved: false, reason: 'not on a Friday' } });
    expect(after).toHaveLength(2);
  });
});

describe('the server with onFinish persistence, piped with .pipe()', () => {
  it('every path leaves it running, and onFinish stored what the page showed', async () => {
    const ask = userMessage('p1', 'please deploy');
    const first = await postChat(app.url, 'kept', [ask]);
    const next = await postChat(app.url, 'kept', [ask, first.message!, userMessage('p2', 'hello')]);
    expect(next.errors).toEqual([]);
    const stored = (await (await fetch(`${app.url}/api/chat/kept/stored`)).json()) as UIMessage[];
    expect(stored.map((m) => [m.role, texts(m)])).toEqual([
      ['user', ['please deploy']],
      ['assistant', []],
      ['user', ['hello']],
      ['assistant', ['You said: hello']],
    ]);
    expect(app.alive(), app.stderr()).toBe(true);
  });

  it('answers made-up and malformed requests with an error, never a crash', async () => {
    // An approval for a call that was never asked, in a chat with nothing waiting.
    const forged: UIMessage = {
      id: 'a1',
      role: 'assistant',
      parts: [{ type: 'tool-deploy', toolCallId: 'call_forged', state: 'approval-responded', input: { env: 'prod' }, approval: { id: 'call_forged', approved: true } }],
    };
    const reply = await postChat(app.url, 'forged', [userMessage('f1', 'hi'), forged]);
    expect(reply.errors).toEqual(['Session forged has no unfinished turn to continue.']);
    expect(deployed(homes.app, 'forged')).toEqual([]);
    // Messages the AI SDK's validation refuses, and a body that is not JSON.
    const invalid = await fetch(`${app.url}/api/chat`, { method: 'POST', body: JSON.stringify({ id: 'bad', messages: [{ role: 'user' }] }) });
    expect(invalid.status).toBe(400);
    const garbage = await fetch(`${app.url}/api/chat`, { method: 'POST', body: '{not json' });
    expect(garbage.status).toBe(400);
    expect(app.alive(), app.stderr()).toBe(true);
    const after = await postChat(app.url, 'forged', [userMessage('f2', 'still there?')]);
    expect(texts(after.message)).toEqual(['You said: still there?']);
  });

  it('an answer naming another call than the one waiting: the waiting call is asked again in a part the client can place', async () => {
    const ask = userMessage('s1', 'please deploy');
    const first = await postChat(app.url, 'stale', [ask]);
    const waiting = toolPart(first.message, 'deploy')!;
    // A message from another tab, answering a call this chat is not waiting for.
    const stale: UIMessage = {
      id: 'other-tab',
      role: 'assistant',
      parts: [{ type: 'tool-deploy', toolCallId: 'call_elsewhere', state: 'approval-responded', input: { env: 'prod' }, approval: { id: 'call_elsewhere', approved: true } }],
    };
    const reply = await postChat(app.url, 'stale', [ask, stale]);
    expect(reply.errors).toEqual([]);
    expect(reply.message!.parts.filter((p) => p.type === 'tool-deploy')).toEqual([
      expect.objectContaining({ toolCallId: 'call_elsewhere' }),
      expect.objectContaining({ toolCallId: waiting.toolCallId, state: 'approval-requested', input: { env: 'prod' } }),
    ]);
    expect(deployed(homes.app, 'stale')).toEqual([]);
    expect(app.alive(), app.stderr()).toBe(true);
  });
});
