import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { rehearseHttp, rehearseModelCall, rehearseRecall, rehearseToolSchemas } from '../../../src/frontends/cli/warm-rehearsal.ts';

interface Received {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
}

/** A loopback server that answers every request as no model would ({"ok":true}) and keeps what it was sent. */
async function recordingServer(): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString()));
    request.on('end', () => {
      received.push({ method: request.method!, path: request.url!, headers: request.headers, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} });
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    received,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** Open sockets and servers of this process, by kind. */
const network = () => process.getActiveResourcesInfo().filter((kind) => /TCP|Pipe/.test(kind)).sort();

/** `network()` once it is `expected` again, or after 50 turns of the event loop (a closed handle is released a turn or two later). */
async function networkSettledAt(expected: string[]): Promise<string[]> {
  for (let turn = 0; turn < 50 && network().join() !== expected.join(); turn++) await new Promise((resolve) => setImmediate(resolve));
  return network();
}

// A warm wake process rehearses before its event (src/frontends/cli/warm.ts); what it does must
// leave it as idle as it was, holding nothing open but the router's channel.
describe('a warm wake process rehearsing before its event', () => {
  it('the HTTP rehearsal closes its own server and every connection to it', async () => {
    const before = network();
    await rehearseHttp();
    expect(await networkSettledAt(before)).toEqual(before);
  });

  it('the tool schema and recall rehearsals open nothing either', async () => {
    const before = network();
    await rehearseToolSchemas();
    await rehearseRecall();
    expect(await networkSettledAt(before)).toEqual(before);
  });

  it('rehearses the agent\'s model request as the engine makes it: the provider\'s own path and wire, the agent\'s parameters, a made-up key and none of its headers', async () => {
    const server = await recordingServer();
    closers.push(server.close);
    const signal = AbortSignal.timeout(10_000);
    await rehearseModelCall({ spec: 'openai:gpt-4.1-mini', vision: true, params: { temperature: 0.25, headers: { 'x-agent-secret': 'kept-from-rehearsals' } } }, server.url, signal);
    await rehearseModelCall({ spec: 'anthropic:claude-sonnet-4-5', vision: true, params: {} }, server.url, signal);
    await rehearseModelCall({ spec: 'openai-compatible:local-model', surface: 'chat', vision: false, params: { maxOutputTokens: 64 } }, server.url, signal);
    expect(server.received.map(({ method, path }) => `${method} ${path}`)).toEqual(['POST /v1/responses', 'POST /v1/messages', 'POST /v1/chat/completions']);
    const [openai, anthropic, compatible] = server.received as [Received, Received, Received];
    expect(openai.headers.authorization).toBe('Bearer rehearsal');
    expect(openai.headers['x-agent-secret']).toBeUndefined();
    expect(openai.body).toMatchObject({ model: 'gpt-4.1-mini', temperature: 0.25, tools: [{ type: 'function', name: 'rehearsal' }] });
    expect(anthropic.headers['x-api-key']).toBe('rehearsal');
    expect(anthropic.body).toMatchObject({ model: 'claude-sonnet-4-5', tools: [{ name: 'rehearsal' }] });
    expect(compatible.body).toMatchObject({ model: 'local-model', max_tokens: 64, tools: [{ type: 'function', function: { name: 'rehearsal' } }] });
  });

  it('the model rehearsal never reaches the agent\'s own endpoint nor sends its key, and closes what it opened', async () => {
    const provider = await recordingServer();
    closers.push(provider.close);
    const saved = { url: process.env.OPENAI_BASE_URL, key: process.env.OPENAI_API_KEY };
    closers.push(async () => {
      for (const [name, value] of [['OPENAI_BASE_URL', saved.url], ['OPENAI_API_KEY', saved.key]] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    });
    process.env.OPENAI_BASE_URL = provider.url;
    process.env.OPENAI_API_KEY = 'sk-the-agents-own-key';
    const before = network();
    await rehearseHttp({ spec: 'openai:gpt-4.1-mini', vision: true, params: {} });
    expect(provider.received).toEqual([]);
    expect(await networkSettledAt(before)).toEqual(before);
  });
});
