// Issue 32 §3: a streamed reply survives a dropped connection, a reload and a server restart. The
// chat app (test/support/chat-app/server.ts, a real server process) serves the resume GET with
// resumeUIStreamResponse from the kept streams (SQLite beside the journal, no Redis); the client is
// the AI SDK's own: DefaultChatTransport sends and reconnects as useChat does, readUIMessageStream
// assembles the message. The model holds its reply after its first delta, so each test cuts in
// while the turn is deterministically mid-reply; the message assembled after the cut is compared
// with the one a client that was never cut off got.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DefaultChatTransport, type UIMessage, type UIMessageChunk } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChatApp, chatModel, startChatApp } from '../support/chat-app/start.ts';
import { startGate } from '../support/chat-app/gate.ts';
import { tempCache } from './acp/fake-profile.ts';
import { POSTGRES_SKIP, postgresForSuite } from '../support/postgres.ts';
import { answered, follow, postChat, streamedText, toolPart, userMessage } from '../support/chat-app/client.ts';
import { type ModelServer, startModelServer } from '../support/model-server.ts';

let model: ModelServer;
const postgres = postgresForSuite();
const apps: ChatApp[] = [];
const held: Array<() => void> = [];

beforeAll(async () => {
  model = await startModelServer({ fallback: chatModel });
});
afterAll(async () => {
  for (const release of held) release();
  await Promise.all(apps.map((app) => app.close()));
  await model?.close();
});

async function app(home: string, options: { store?: string; acpCache?: string; gateUrl?: string } = {}): Promise<ChatApp> {
  const started = await startChatApp({ home, openaiBaseURL: model.openaiBaseURL, ...options });
  apps.push(started);
  return started;
}

/** The model's next two answers: a weather call, then its report, held after its first delta until released (when `hold`). */
function weatherTurn(hold: boolean): () => void {
  let release = () => {};
  const pauseUntil = hold ? new Promise<void>((resolve) => (release = resolve)) : undefined;
  held.push(release);
  model.enqueue({ toolCalls: [{ id: 'call_weather', name: 'weather', input: { city: 'Paris' } }] }, { text: 'Done: sunny in Paris', ...(pauseUntil ? { pauseUntil } : {}) });
  return release;
}

const transport = (base: string) => new DefaultChatTransport({ api: `${base}/api/chat` });
const send = (base: string, chatId: string, messages: UIMessage[], abortSignal?: AbortSignal) =>
  transport(base).sendMessages({ chatId, messages, trigger: 'submit-message', messageId: undefined, abortSignal });
const isTextDelta = (chunk: UIMessageChunk) => chunk.type === 'text-delta';

/**
 * Sends the chat and reads the reply until its first text delta, then drops the connection (the
 * client goes away mid-reply). As useChat, the reply continues the last message if it is the assistant's.
 */
async function sendAndDrop(base: string, chatId: string, messages: UIMessage[], until: (chunk: UIMessageChunk) => boolean = isTextDelta): Promise<UIMessageChunk[]> {
  const abort = new AbortController();
  const last = messages.at(-1);
  const reply = follow(await send(base, chatId, messages, abort.signal), last?.role === 'assistant' ? last : undefined);
  await reply.seen(until);
  abort.abort();
  await reply.message.catch(() => undefined);
  return reply.chunks;
}

/** Reconnects as useChat({ resume: true }) does; resolves with the reply, or null for the 204 (nothing streaming). */
async function reconnect(base: string, chatId: string) {
  const stream = await transport(base).reconnectToStream({ chatId });
  return stream ? follow(stream) : null;
}

const history = async (base: string, chatId: string) => (await fetch(`${base}/api/chat/${chatId}`)).json() as Promise<UIMessage[]>;

describe('a reply that streams on after the client drops (SQLite beside the journal)', () => {
  let server: ChatApp;
  let uncut: UIMessage;
  beforeAll(async () => {
    server = await app(mkdtempSync(join(tmpdir(), 'acx-resume-')));
    weatherTurn(false);
    uncut = (await postChat(server.url, 'uncut', [userMessage('u1', 'weather please')])).message!;
    expect(toolPart(uncut, 'weather')).toMatchObject({ state: 'output-available', output: 'sunny in Paris' });
  });

  it('nothing streaming: the resume GET answers 204 and useChat stays as it is', async () => {
    const response = await fetch(`${server.url}/api/chat/uncut/stream`);
    expect(response.status).toBe(204);
    expect(await reconnect(server.url, 'never-used')).toBeNull();
  });

  it('drop mid-reply and reconnect: every part again from the first, then the live rest, no part twice: the message the uncut client got', async () => {
    const release = weatherTurn(true);
    const before = await sendAndDrop(server.url, 'dropped', [userMessage('u1', 'weather please')]);
    expect(streamedText(before), 'cut off after the first delta').not.toBe('Done: sunny in Paris');

    const resumed = (await reconnect(server.url, 'dropped'))!;
    expect(resumed).not.toBeNull();
    // The kept part is replayed while the model still holds the rest; then the rest comes live.
    await resumed.seen(isTextDelta);
    release();
    const message = await resumed.message;
    expect(message!.parts).toEqual(uncut.parts);
    expect(resumed.chunks.filter((c) => c.type === 'start')).toHaveLength(1);
    expect(resumed.chunks.filter((c) => c.type === 'tool-output-available')).toHaveLength(1);
    expect(streamedText(resumed.chunks)).toBe('Done: sunny in Paris');
    expect(resumed.chunks.at(-1)).toEqual({ type: 'finish', finishReason: 'stop' });
    // Done: nothing to resume any more, and the history has the reply.
    expect(await reconnect(server.url, 'dropped')).toBeNull();
    expect((await history(server.url, 'dropped')).at(-1)!.parts).toEqual(uncut.parts);
  });

  it('reload mid-reply: the history leaves the streaming reply out, and the resumed stream brings it whole', async () => {
    const release = weatherTurn(true);
    await sendAndDrop(server.url, 'reloaded', [userMessage('u1', 'weather please')]);
    // The page loads again: the history first (the reply is still streaming), then the resume GET.
    expect(await history(server.url, 'reloaded')).toEqual([{ id: expect.any(String), role: 'user', parts: [{ type: 'text', text: 'weather please' }] }]);
    const resumed = (await reconnect(server.url, 'reloaded'))!;
    await resumed.seen(isTextDelta);
    release();
    expect((await resumed.message)!.parts).toEqual(uncut.parts);
    expect((await history(server.url, 'reloaded')).map((m) => m.role)).toEqual(['user', 'assistant']);
  });

  it('two readers at once, one of them late, each get the whole reply once', async () => {
    const release = weatherTurn(true);
    const abort = new AbortController();
    const live = follow(await send(server.url, 'shared', [userMessage('u1', 'weather please')], abort.signal));
    await live.seen(isTextDelta);
    const [first, second] = [(await reconnect(server.url, 'shared'))!, (await reconnect(server.url, 'shared'))!];
    await Promise.all([first.seen(isTextDelta), second.seen(isTextDelta)]);
    release();
    const [uncutLive, one, two] = await Promise.all([live.message, first.message, second.message]);
    expect(uncutLive!.parts).toEqual(uncut.parts);
    expect(one!.parts).toEqual(uncut.parts);
    expect(two!.parts).toEqual(uncut.parts);
  });

  it('an approved call whose continuation drops: the reconnect replays the whole turn, the answer included, as the page held it', async () => {
    const ask = userMessage('a1', 'please deploy');
    // Uncut: asked, approved, reported.
    model.enqueue({ toolCalls: [{ id: 'call_deploy', name: 'deploy', input: { env: 'prod' } }] });
    const asked = (await postChat(server.url, 'approve-uncut', [ask])).message!;
    model.enqueue({ text: 'Deployed to prod as you approved.' });
    const whole = (await postChat(server.url, 'approve-uncut', [ask, answered(asked, true)])).message!;
    expect(toolPart(whole, 'deploy')).toMatchObject({ state: 'output-available', approval: { approved: true } });

    model.enqueue({ toolCalls: [{ id: 'call_deploy', name: 'deploy', input: { env: 'prod' } }] });
    const asked2 = (await postChat(server.url, 'approve-cut', [ask])).message!;
    let release = () => {};
    model.enqueue({ text: 'Deployed to prod as you approved.', pauseUntil: new Promise<void>((resolve) => (release = resolve)) });
    held.push(release);
    await sendAndDrop(server.url, 'approve-cut', [ask, answered(asked2, true)]);
    const resumed = (await reconnect(server.url, 'approve-cut'))!;
    await resumed.seen(isTextDelta);
    release();
    expect((await resumed.message)!.parts).toEqual(whole.parts);
  });
});

/**
 * The server dies mid-reply and a second one on the same store takes the turn up: on SQLite at
 * once (its writer's process is gone), on PostgreSQL once the writer's and the session's leases
 * have lapsed unrenewed (15 s each by default).
 */
async function restartMidReply(store?: string): Promise<void> {
  {
    const home = mkdtempSync(join(tmpdir(), 'acx-resume-restart-'));
    const first = await app(home, store ? { store } : {});
    weatherTurn(false);
    const uncut = (await postChat(first.url, 'uncut', [userMessage('u1', 'weather please')])).message!;

    weatherTurn(true); // never released for the first server: it dies holding the model call
    await sendAndDrop(first.url, 'restarted', [userMessage('u1', 'weather please')]);
    // The first delta is kept (a reader of the kept stream sees it) before the server dies.
    const kept = (await reconnect(first.url, 'restarted'))!;
    await kept.seen(isTextDelta);
    await first.crash();

    const second = await app(home, store ? { store } : {});
    const resumed = (await reconnect(second.url, 'restarted'))!;
    expect(resumed).not.toBeNull();
    const message = await resumed.message;
    expect(message!.parts).toEqual(uncut.parts);
    // The step the crash cut short was taken up again: what it had shown was dropped, then shown once.
    expect(resumed.chunks.filter((c) => c.type === 'reset-step')).toHaveLength(1);
    expect(streamedText(resumed.chunks.slice(resumed.chunks.findIndex((c) => c.type === 'reset-step')))).toBe('Done: sunny in Paris');
    expect((await history(second.url, 'restarted')).at(-1)!.parts).toEqual(uncut.parts);
    expect(await reconnect(second.url, 'restarted')).toBeNull();
    expect(second.alive(), second.stderr()).toBe(true);
  }
}

describe('a reply that streams on after its server dies', () => {
  it('a second server on the same SQLite store takes the turn up; the client reconnected to it gets the message the uncut client got', () => restartMidReply());

  it.skipIf(POSTGRES_SKIP !== '')(`the same on PostgreSQL, once the dead server's leases have lapsed${POSTGRES_SKIP}`, () => restartMidReply(postgres.database('resume')), 180_000);

  it.skipIf(POSTGRES_SKIP !== '')(`on PostgreSQL, a client reconnected to another server while the first still streams gets the reply from the shared store${POSTGRES_SKIP}`, async () => {
    const store = postgres.database('resume-two');
    const home = () => mkdtempSync(join(tmpdir(), 'acx-resume-pg-'));
    const [one, two] = [await app(home(), { store }), await app(home(), { store })];
    weatherTurn(false);
    const uncut = (await postChat(one.url, 'uncut', [userMessage('u1', 'weather please')])).message!;
    const release = weatherTurn(true);
    await sendAndDrop(one.url, 'elsewhere', [userMessage('u1', 'weather please')]);
    const resumed = (await reconnect(two.url, 'elsewhere'))!;
    await resumed.seen(isTextDelta);
    release();
    expect((await resumed.message)!.parts).toEqual(uncut.parts);
  });
});

describe('on an ACP harness (the fake ACP agent), its streams kept in a store the app names', () => {
  const cache = tempCache();
  const isToolInput = (chunk: UIMessageChunk) => chunk.type === 'tool-input-available';
  const ask = () => [userMessage('g1', '[[mcp:gate {}]]')];

  it('drop mid-turn and reconnect: the same message as without the drop', async () => {
    const gate = await startGate();
    try {
      const server = await app(mkdtempSync(join(tmpdir(), 'acx-resume-acp-')), { acpCache: cache, gateUrl: gate.url });
      await sendAndDrop(server.url, 'acp-cut', ask(), isToolInput);
      const resumed = (await reconnect(server.url, 'acp-cut'))!;
      await resumed.seen(isToolInput);
      await gate.reached();
      gate.open();
      const message = await resumed.message;
      const uncut = (await postChat(server.url, 'acp-uncut', ask())).message!;
      expect(uncut.parts.some((p) => p.type === 'text' && p.text.includes('result=gate open'))).toBe(true);
      expect(message!.parts).toEqual(uncut.parts);
    } finally {
      await gate.close();
    }
  }, 120_000);

  it('its server dies mid-turn: the reconnected client is told the turn cannot be taken up, and nothing is left streaming', async () => {
    const gate = await startGate();
    try {
      const home = mkdtempSync(join(tmpdir(), 'acx-resume-acp-restart-'));
      const first = await app(home, { acpCache: cache, gateUrl: gate.url });
      await sendAndDrop(first.url, 'acp-restart', ask(), isToolInput);
      await gate.reached();
      await first.crash();
      const second = await app(home, { acpCache: cache, gateUrl: gate.url });
      const resumed = (await reconnect(second.url, 'acp-restart'))!;
      const message = await resumed.message;
      expect(resumed.chunks.filter((c) => c.type === 'error')).toEqual([
        { type: 'error', errorText: 'The process streaming this turn stopped, and acp:fake-acp cannot take up a turn its process left unfinished.' },
      ]);
      expect(message!.parts.filter((p) => p.type === 'tool-gate')).toEqual([expect.objectContaining({ state: 'input-available' })]);
      expect(await reconnect(second.url, 'acp-restart')).toBeNull();
    } finally {
      gate.open();
      await gate.close();
    }
  }, 120_000);
});
