// A local model server for tests: speaks the OpenAI Responses, OpenAI Chat Completions,
// Anthropic Messages and Google Gemini wire formats (JSON and SSE) closely enough that the
// real AI SDK providers parse it. Answers come from a script of responders; every request
// is recorded with its headers, full body and a provider-independent view.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAnthropicWire } from './model-server/anthropic.ts';
import { EMBEDDINGS_PATH, type EmbeddingRequest, hashedBagOfWords, serveEmbeddings } from './model-server/embeddings.ts';
import { createGoogleWire } from './model-server/google.ts';
import { createMediaEndpoints } from './model-server/media.ts';
import { createOpenAIChatWire } from './model-server/openai-chat.ts';
import { createOpenAIResponsesWire } from './model-server/openai-responses.ts';
import { createHostedFiles } from './model-server/server-tools.ts';
import { createXaiManagement, XAI_MANAGEMENT_PREFIX } from './model-server/xai-management.ts';
import type {
  ModelServer,
  ModelServerOptions,
  RecordedRequest,
  Responder,
  ResponderResult,
  ScriptedResponse,
  ViewMessage,
  ViewToolResult,
} from './model-server/types.ts';
import { internalFailure, plannedFailure, sendCompletion, sendFailure, sendJson, sendStream } from './model-server/serve.ts';
import type { PlannedResponse, WireAdapter } from './model-server/wire.ts';

export type * from './model-server/types.ts';
export * from './model-server/media.ts';
export type { XaiManagementAccount } from './model-server/xai-management.ts';

export async function startModelServer(options: ModelServerOptions = {}): Promise<ModelServer> {
  const queue: Responder[] = [...(options.script ?? [])];
  let fallback: Responder | undefined = options.fallback;
  const requests: RecordedRequest[] = [];
  const embeddingRequests: EmbeddingRequest[] = [];
  const wires = {
    responses: createOpenAIResponsesWire(),
    chat: createOpenAIChatWire(),
    anthropic: createAnthropicWire(),
    google: createGoogleWire(),
  };
  // Images, transcription and video (OpenAI's and xAI's media wires): their own queue.
  const media = createMediaEndpoints();
  // xAI's Management API (the account-balance tool's): its own base URL.
  const xaiManagement = createXaiManagement();
  let serial = 0;
  let toolCallCounter = 0;
  const hostedFiles = createHostedFiles();

  const route = (method: string, path: string): { adapter: WireAdapter; model?: string; stream?: boolean } | undefined => {
    if (method !== 'POST') return undefined;
    if (path === '/v1/responses') return { adapter: wires.responses };
    if (path === '/v1/chat/completions') return { adapter: wires.chat };
    if (path === '/v1/messages') return { adapter: wires.anthropic };
    const google = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(path);
    if (google) return { adapter: wires.google, model: decodeURIComponent(google[1]!), stream: google[2] === 'streamGenerateContent' };
    return undefined;
  };

  const plan = (r: ScriptedResponse, adapter: WireAdapter, model: string, rawBodyLength: number, n: number): PlannedResponse => {
    const text = r.text ?? '';
    const reasoning = r.reasoning ?? '';
    const toolCalls = (r.toolCalls ?? []).map((c) => {
      const input = c.input ?? {};
      return { id: c.id ?? `${adapter.toolCallIdPrefix}${++toolCallCounter}`, name: c.name, input, arguments: JSON.stringify(input) };
    });
    const generatedChars = text.length + reasoning.length + toolCalls.reduce((sum, c) => sum + c.arguments.length, 0);
    const u = r.usage ?? {};
    const outputTokens = u.outputTokens ?? Math.max(1, Math.ceil(generatedChars / 4));
    return {
      serial: n,
      model,
      created: Math.floor(Date.now() / 1000),
      text,
      reasoning,
      toolCalls,
      usage: {
        inputTokens: u.inputTokens ?? Math.max(1, Math.ceil(rawBodyLength / 4)),
        outputTokens,
        cachedInputTokens: u.cachedInputTokens ?? 0,
        cacheWriteInputTokens: u.cacheWriteInputTokens ?? 0,
        reasoningTokens: Math.min(outputTokens, u.reasoningTokens ?? Math.ceil(reasoning.length / 4)),
        cost: u.cost,
      },
      finishReason: r.finishReason ?? (toolCalls.length > 0 ? 'tool-calls' : 'stop'),
      hosted: r.hosted,
      routing: r.routing,
      provider: r.provider,
    };
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const rawBytes = Buffer.concat(chunks);
    if (await media.handle(req, res, rawBytes, () => url)) return;
    if (xaiManagement.handle(req, res)) return;
    const raw = rawBytes.toString('utf8');
    const path = (req.url ?? '/').split('?')[0]!;
    const method = req.method ?? 'GET';
    if (await hostedFiles.handle(req, res, method, path, Buffer.concat(chunks))) return;
    if (method === 'POST' && path === EMBEDDINGS_PATH) {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
      serveEmbeddings(res, raw, headers, options.embed ?? hashedBagOfWords, embeddingRequests);
      return;
    }
    const found = route(method, path);
    if (found === undefined) {
      const known = 'POST /v1/responses, /v1/chat/completions, /v1/embeddings, /v1/messages, /v1beta/models/M:generateContent|streamGenerateContent';
      sendJson(res, 404, { error: { message: `acx model-server: no model endpoint at ${method} ${path} (known: ${known})` } }, {});
      return;
    }
    const { adapter } = found;
    const n = ++serial;
    let body: any;
    try {
      body = JSON.parse(raw);
    } catch {
      sendFailure(res, adapter, n, internalFailure('acx model-server: request body is not JSON', 400));
      return;
    }
    const model = found.model ?? String(body?.model ?? '');
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
    const recorded: RecordedRequest = {
      wire: adapter.wire,
      method,
      path,
      headers,
      body,
      stream: found.stream ?? body?.stream === true,
      view: adapter.view(body, model),
    };
    requests.push(recorded);
    const label = `request #${requests.length} (${describe(recorded)})`;
    const refusal = adapter.refuse?.(body);
    if (refusal !== undefined) {
      sendFailure(res, adapter, n, internalFailure(refusal, 400));
      return;
    }

    const responder = queue.length > 0 ? queue.shift() : fallback;
    if (responder === undefined) {
      sendFailure(res, adapter, n, internalFailure(`acx model-server: unexpected ${label}: the script is empty and there is no fallback. Enqueue a response or set a fallback.`));
      return;
    }
    let result: ResponderResult;
    try {
      result = typeof responder === 'function' ? await responder(recorded) : responder;
    } catch (err) {
      sendFailure(res, adapter, n, internalFailure(`acx model-server: responder threw for ${label}: ${err instanceof Error ? err.message : String(err)}`));
      return;
    }
    const scripted: ScriptedResponse = typeof result === 'string' ? { text: result } : result;
    res.on('error', () => {}); // the client may hang up mid-stream; that is its business

    if (scripted.fail === 'disconnect') {
      // No status, no body: the socket closes under the request, as when a server dies mid-accept.
      await (scripted.pauseUntil ?? Promise.resolve()).catch(() => {});
      req.socket.destroy();
      return;
    }
    const failure = plannedFailure(scripted.fail, { wire: adapter.wire, model });
    const inStream = failure !== undefined && typeof scripted.fail === 'object' && scripted.fail.inStream === true && recorded.stream;
    if (failure !== undefined && !inStream) {
      await (scripted.pauseUntil ?? Promise.resolve()).catch(() => {});
      sendFailure(res, adapter, n, failure);
      return;
    }
    const planned = plan(scripted, adapter, model, raw.length, n);
    hostedFiles.noteRun(planned.hosted);
    if (recorded.stream) await sendStream(res, adapter, planned, recorded, scripted, inStream ? failure : undefined);
    else await sendCompletion(res, adapter, planned, recorded, scripted);
  };

  let url = '';
  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) {
        sendJson(res, 500, { error: { message: `acx model-server: ${err instanceof Error ? err.message : String(err)}` } }, {});
      } else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  url = `http://127.0.0.1:${port}`;

  return {
    url,
    openaiBaseURL: `${url}/v1`,
    anthropicBaseURL: `${url}/v1`,
    googleBaseURL: `${url}/v1beta`,
    xaiBaseURL: `${url}/xai/v1`,
    xaiManagementURL: `${url}${XAI_MANAGEMENT_PREFIX}`,
    xaiManagement,
    media,
    requests,
    uploads: hostedFiles.uploads,
    enqueue: (...responders) => {
      queue.push(...responders);
    },
    setFallback: (responder) => {
      fallback = responder;
    },
    queued: () => queue.length,
    embeddingRequests,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}

function describe(r: RecordedRequest): string {
  const last = r.view.messages[r.view.messages.length - 1];
  const summary = last === undefined
    ? 'no messages'
    : `last message ${last.role}: ${JSON.stringify((last.text || JSON.stringify(last.toolResults ?? last.toolCalls ?? '')).slice(0, 80))}`;
  return `${r.wire} ${r.method} ${r.path}, model ${JSON.stringify(r.view.model)}, ${r.stream ? 'streaming' : 'non-streaming'}, ${summary}`;
}

export interface TurnContext {
  request: RecordedRequest;
  /** How many requests this responder answered before this one (0 for the first). */
  turn: number;
  /** The last message of the request. */
  last: ViewMessage | undefined;
  /** Tool results in the last message: non-empty when the model is being handed tool output. */
  toolResults: ViewToolResult[];
  /** Text of the latest user message ('' if none). */
  lastUserText: string;
}

/**
 * A rule-based responder, typically for `setFallback`: `fn` sees the request and how many
 * turns this responder has answered, e.g. "call a tool first, then answer from its result".
 */
export function respondByTurn(fn: (ctx: TurnContext) => ResponderResult | Promise<ResponderResult>): Responder {
  let turn = 0;
  return (request) => {
    const messages = request.view.messages;
    const last = messages[messages.length - 1];
    const lastUser = [...messages].reverse().find((m) => m.role === 'user');
    return fn({
      request,
      turn: turn++,
      last,
      toolResults: last?.role === 'tool' ? (last.toolResults ?? []) : [],
      lastUserText: lastUser?.text ?? '',
    });
  };
}
