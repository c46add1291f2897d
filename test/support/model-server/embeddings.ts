// The OpenAI embeddings wire for the scripted model server: POST /v1/embeddings with
// { model, input: string | string[], encoding_format?, dimensions? } answered with
// { object: 'list', data: [{ object: 'embedding', index, embedding }], model, usage }, as the
// real AI SDK OpenAI provider (and OpenAI-compatible ones) parse it. The vectors come from the
// test's `embed` function, so a test decides what its "model" considers near; the default is a
// plain hashed bag of words. Every request is recorded.
import { createHash } from 'node:crypto';
import type http from 'node:http';

export interface EmbeddingRequest {
  model: string;
  input: string[];
  headers: Record<string, string>;
}

/** Maps a text to its vector, for one model. */
export type EmbedFunction = (text: string, model: string) => number[];

export const EMBEDDINGS_PATH = '/v1/embeddings';

/** A default that depends only on the words: 32 dimensions, one signed hash bucket per word. */
export function hashedBagOfWords(text: string): number[] {
  const vector = new Array<number>(32).fill(0);
  for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    const digest = createHash('sha256').update(word).digest();
    vector[digest[0]! % 32]! += digest[1]! & 1 ? 1 : -1;
  }
  return vector;
}

export function serveEmbeddings(
  res: http.ServerResponse,
  raw: string,
  headers: Record<string, string>,
  embed: EmbedFunction,
  recorded: EmbeddingRequest[],
): void {
  let body: { model?: unknown; input?: unknown };
  try {
    body = JSON.parse(raw) as typeof body;
  } catch {
    return send(res, 400, { error: { message: 'acx model-server: embeddings request body is not JSON', type: 'invalid_request_error' } });
  }
  const model = String(body.model ?? '');
  const input = typeof body.input === 'string' ? [body.input] : Array.isArray(body.input) ? body.input.map(String) : undefined;
  if (!model || !input) {
    return send(res, 400, { error: { message: "acx model-server: 'model' and 'input' (a string or an array of strings) are required", type: 'invalid_request_error' } });
  }
  recorded.push({ model, input, headers });
  const tokens = input.reduce((sum, text) => sum + Math.max(1, Math.ceil(text.length / 4)), 0);
  send(res, 200, {
    object: 'list',
    data: input.map((text, index) => ({ object: 'embedding', index, embedding: embed(text, model) })),
    model,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  });
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
