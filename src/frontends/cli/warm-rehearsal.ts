import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import type { ModelSurface } from '../../model/providers.ts';
import type { ModelParams } from '../../model/params.ts';

/**
 * What a warm wake process (warm.ts) does once, before its event, besides loading modules: the
 * first run of some code costs far more than the next (Node builds its HTTP client on the first
 * request; V8 compiles and optimises a function when it first runs), and an event should find
 * that paid. Each step is a rehearsal on throwaway objects: nothing here reaches the platform,
 * the model or the agent's files, and a step that fails only loses its head start.
 */

/** The agent's model, as its settings name it: what a rehearsed model request is made with. */
export interface RehearsedModel {
  spec: string;
  surface?: ModelSurface;
  vision: boolean;
  params: ModelParams;
}

/**
 * Requests to a server of its own on loopback, then closed: two through `fetch` (a GET, then a
 * POST with a JSON body, each answered with JSON) and, given the agent's model, one model request
 * as the engine makes it (rehearseModelCall). Node sets its HTTP client up (undici: its WebAssembly
 * parser, the connection pool, header and body handling) on the first request to a real server:
 * 30-40 ms on a 2-core machine, which a cold wake pays on its platform read and the model request
 * after it. Skipped when Node sends requests through a proxy (NODE_USE_ENV_PROXY): a rehearsal is
 * not worth a request to someone else's server.
 */
export async function rehearseHttp(model?: RehearsedModel): Promise<void> {
  if (process.env.NODE_USE_ENV_PROXY) return;
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const signal = AbortSignal.timeout(5_000);
    await (await fetch(url, { signal })).json();
    await (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"warm":true}', signal })).json();
    if (model) await rehearseModelCall(model, url, signal);
  } catch {
    // No loopback here (or it was slow): the event's first request pays the set-up instead.
  } finally {
    // Its keep-alive connection too: an idle process must hold nothing open but the router's channel.
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

/**
 * One model request on the agent's own provider, surface and parameters, made the way the engine
 * makes its calls (callModel), to `baseURL` on loopback, whose answer is no model's and fails the
 * call. What a provider does the first time before it sends anything — building its option and
 * response schemas, converting a prompt and a tool, each function's first compilation — took
 * ≈ 8 ms of the time between an event and its model request (bench/platform.ts). The key is a
 * made-up one and the agent's own headers are left out: nothing reaches the provider, and no
 * secret of the agent is sent, even to loopback.
 */
export async function rehearseModelCall(chosen: RehearsedModel, baseURL: string, abortSignal: AbortSignal): Promise<void> {
  const [{ describeModel, fromLanguageModel }, { callModel, toolSet }, { normalizeSchema }, { z }] = await Promise.all([
    import('../../model/providers.ts'),
    import('../../engine/model-call.ts'),
    import('../../tools/schema.ts'),
    import('zod'),
  ]);
  const { provider, modelId, definition, surface } = describeModel({ spec: chosen.spec, ...(chosen.surface ? { surface: chosen.surface } : {}), env: {} });
  const model = await definition.create({ modelId, apiKey: 'rehearsal', baseURL, surface });
  const schema = normalizeSchema(z.object({ text: z.string().describe('What to say.') }));
  const { headers: _ownHeaders, ...params } = chosen.params;
  await callModel({
    model: fromLanguageModel(model, { provider, cacheMode: definition.cacheMode, vision: chosen.vision }),
    system: 'A rehearsal.',
    messages: [{ role: 'user', content: 'Rehearsal.' }],
    brief: 'Rehearsal brief.',
    tools: toolSet([{ name: 'rehearsal', description: 'A rehearsal tool.', schema }]),
    params,
    sessionId: 'rehearsal',
    abortSignal,
  }).catch(() => undefined);
}

/**
 * The tools' input schemas as JSON Schema, which the registry and the first model request need.
 * acx's own tools build theirs once per process (lazySchema): built and converted here, they are
 * the very objects the wake's tools carry, conversion kept. A set of platform tools is built
 * with a client that is never called, for a wake that makes its own with its event (one not made
 * ready ahead: timeline-wake-ahead.ts): zod's conversion runs several times faster the second
 * time in a process.
 */
export async function rehearseToolSchemas(): Promise<void> {
  const [{ createPlatformTools }, { BaseCradleClient }, { normalizeSchema }, { buildLazySchemas }] = await Promise.all([
    import('../../channel/tools/index.ts'),
    import('../../channel/client.ts'),
    import('../../tools/schema.ts'),
    import('../../core/lazy-schema.ts'),
  ]);
  for (const schema of buildLazySchemas()) void normalizeSchema(schema as Parameters<typeof normalizeSchema>[0]).jsonSchema;
  const client = new BaseCradleClient({ env: {}, baseUrl: 'http://127.0.0.1:9', token: 'rehearsal' });
  const tools = createPlatformTools({ client, timeline: '00000000-0000-4000-8000-000000000000', recentToolImages: () => [], workspace: tmpdir() });
  for (const tool of tools) void normalizeSchema(tool.inputSchema).jsonSchema;
}

/** Memory recall on the turn's prompt: its word pattern (Unicode classes) is compiled on first use. */
export async function rehearseRecall(): Promise<void> {
  const { queryTerms } = await import('../../memory/query.ts');
  queryTerms('Rehearsal: recall the notes about étude 42');
}
