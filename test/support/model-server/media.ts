// The media wires of the local model server: OpenAI's POST /v1/images/generations (JSON),
// /v1/images/edits (multipart) and /v1/audio/transcriptions (multipart), and xAI's (under
// /xai/v1, its own base URL) images/generations and images/edits (JSON only: xAI refuses
// multipart, and sources ride as base64 data URIs) and the asynchronous videos/generations +
// GET videos/{request_id}. Each request is checked against what the provider documents and
// refused in the provider's own error shape when it does not match, so a test passes only when
// the real AI SDK provider sent the real wire. Answers come from a queue of media responders.
import type http from 'node:http';

export type MediaEndpoint =
  | 'openai.images.generations'
  | 'openai.images.edits'
  | 'openai.audio.transcriptions'
  | 'xai.images.generations'
  | 'xai.images.edits'
  | 'xai.videos.generations'
  | 'xai.videos.status';

export interface MultipartFile {
  field: string;
  filename: string;
  type: string;
  bytes: Buffer;
}

export interface MediaRequest {
  endpoint: MediaEndpoint;
  method: string;
  path: string;
  headers: Record<string, string>;
  /** The JSON body (JSON endpoints). */
  json?: any;
  /** The text fields of a multipart body. */
  fields?: Record<string, string[]>;
  /** The files of a multipart body. */
  files?: MultipartFile[];
  /** The request id in the path (xai.videos.status). */
  requestId?: string;
}

/** What a responder answers: a JSON body (status 200 unless given). */
export interface MediaReply {
  status?: number;
  json: unknown;
  /**
   * The endpoint this reply answers, when only one can use it: a request takes the first queued
   * reply meant for it (or for any endpoint). So a late request of an earlier test (a video status
   * poll still on the wire when its tool gave up) never takes the reply queued for the next test.
   */
  for?: MediaEndpoint;
}

export type MediaResponder = MediaReply | ((request: MediaRequest) => MediaReply | Promise<MediaReply>);

export interface MediaServer {
  /** Every media request received, in order, including refused ones. */
  requests: MediaRequest[];
  enqueue(...responders: MediaResponder[]): void;
  queued(): number;
  /** Serves bytes at GET `${url}${path}` (a finished video's download URL). */
  serveFile(path: string, bytes: Uint8Array, contentType: string): string;
  /** Requests answered with a 400 because they broke the provider's documented wire. */
  refused: Array<{ request: MediaRequest; reason: string }>;
  /** Empties the queue and the records (between tests sharing one server). */
  reset(): void;
}

// ---- replies in each provider's shape ---------------------------------------------------------

export function openaiImage(bytes: Uint8Array, options: { revisedPrompt?: string; outputFormat?: string } = {}): MediaReply {
  return {
    json: {
      created: Math.floor(Date.now() / 1000),
      data: [{ b64_json: Buffer.from(bytes).toString('base64'), ...(options.revisedPrompt ? { revised_prompt: options.revisedPrompt } : {}) }],
      ...(options.outputFormat ? { output_format: options.outputFormat } : {}),
      usage: { input_tokens: 10, output_tokens: 100, total_tokens: 110 },
    },
  };
}

export function xaiImage(bytes: Uint8Array, options: { costInUsdTicks?: number; revisedPrompt?: string } = {}): MediaReply {
  return {
    json: {
      data: [{ b64_json: Buffer.from(bytes).toString('base64'), ...(options.revisedPrompt ? { revised_prompt: options.revisedPrompt } : {}) }],
      ...(options.costInUsdTicks !== undefined ? { usage: { cost_in_usd_ticks: options.costInUsdTicks } } : {}),
    },
  };
}

export function openaiTranscription(text: string, options: { language?: string; duration?: number } = {}): MediaReply {
  return { for: 'openai.audio.transcriptions', json: { text, ...(options.language ? { language: options.language } : {}), ...(options.duration !== undefined ? { duration: options.duration } : {}) } };
}

export function openaiError(status: number, message: string, code?: string): MediaReply {
  return { status, json: { error: { message, type: 'invalid_request_error', param: null, code: code ?? null } } };
}

export function xaiError(status: number, message: string): MediaReply {
  return { status, json: { code: 'Client specified an invalid argument', error: message } };
}

export const xaiVideoStarted = (requestId: string): MediaReply => ({ for: 'xai.videos.generations', json: { request_id: requestId } });
export const xaiVideoPending = (progress = 50): MediaReply => ({ for: 'xai.videos.status', json: { status: 'pending', progress } });
export const xaiVideoDone = (url: string, options: { costInUsdTicks?: number; duration?: number } = {}): MediaReply => ({
  for: 'xai.videos.status',
  json: {
    status: 'done',
    video: { url, duration: options.duration ?? 5, respect_moderation: true },
    model: 'grok-imagine-video',
    ...(options.costInUsdTicks !== undefined ? { usage: { cost_in_usd_ticks: options.costInUsdTicks } } : {}),
  },
});
export const xaiVideoFailed = (message: string): MediaReply => ({ for: 'xai.videos.status', json: { status: 'failed', error: { code: 'generation_failed', message } } });

// ---- routing and validation -------------------------------------------------------------------

function routeOf(method: string, path: string): { endpoint: MediaEndpoint; requestId?: string } | undefined {
  if (method === 'POST' && path === '/v1/images/generations') return { endpoint: 'openai.images.generations' };
  if (method === 'POST' && path === '/v1/images/edits') return { endpoint: 'openai.images.edits' };
  if (method === 'POST' && path === '/v1/audio/transcriptions') return { endpoint: 'openai.audio.transcriptions' };
  if (method === 'POST' && path === '/xai/v1/images/generations') return { endpoint: 'xai.images.generations' };
  if (method === 'POST' && path === '/xai/v1/images/edits') return { endpoint: 'xai.images.edits' };
  if (method === 'POST' && path === '/xai/v1/videos/generations') return { endpoint: 'xai.videos.generations' };
  const status = /^\/xai\/v1\/videos\/([^/]+)$/.exec(path);
  if (method === 'GET' && status) return { endpoint: 'xai.videos.status', requestId: decodeURIComponent(status[1]!) };
  return undefined;
}

const IMAGE_TYPES = /^image\/(png|jpeg|webp|gif)$/;
const DATA_URI = /^data:image\/(png|jpeg|webp|gif);base64,[A-Za-z0-9+/]+=*$/;

/** Why a request breaks its provider's documented wire, or undefined when it is well-formed. */
export function wireProblem(request: MediaRequest): string | undefined {
  const auth = request.headers.authorization ?? '';
  if (!/^Bearer \S+$/.test(auth)) return 'missing or malformed Authorization: Bearer header';
  const type = request.headers['content-type'] ?? '';
  const json = request.json;
  switch (request.endpoint) {
    case 'openai.images.generations':
    case 'xai.images.generations':
      if (!type.startsWith('application/json')) return 'the body must be application/json';
      if (typeof json?.model !== 'string' || typeof json?.prompt !== 'string' || json.prompt === '') return 'model and prompt are required strings';
      if (json.n !== undefined && json.n !== 1) return 'acx asks for one image per call';
      if (request.endpoint === 'openai.images.generations') {
        if (json.size !== undefined && !/^(auto|\d+x\d+)$/.test(json.size)) return `size "${json.size}" is not WIDTHxHEIGHT`;
        if (json.output_compression !== undefined && !['jpeg', 'webp'].includes(json.output_format)) return 'output_compression needs output_format jpeg or webp';
        if (json.aspect_ratio !== undefined) return 'OpenAI has no aspect_ratio parameter';
      } else {
        if (json.size !== undefined) return 'xAI takes aspect_ratio, not size';
        if (json.mask !== undefined) return 'xAI has no mask';
        if (json.response_format !== 'b64_json' && json.response_format !== 'url') return 'response_format must be b64_json or url';
      }
      return undefined;
    case 'xai.images.edits': {
      // xAI's documented asymmetry: JSON only, sources as data URIs, one in `image` or up to 3 in `images`, no mask.
      if (!type.startsWith('application/json')) return 'xAI image edits take application/json only (multipart is refused)';
      if (typeof json?.model !== 'string' || typeof json?.prompt !== 'string') return 'model and prompt are required strings';
      if (json.mask !== undefined) return 'xAI image edits have no mask';
      const sources = json.image !== undefined ? [json.image] : Array.isArray(json.images) ? json.images : [];
      if (json.image !== undefined && json.images !== undefined) return 'give image or images, not both';
      if (sources.length === 0) return 'an edit needs image or images';
      if (Array.isArray(json.images) && (json.images.length < 2 || json.images.length > 3)) return 'images holds 2 or 3 sources (one source rides image)';
      for (const source of sources) {
        if (source?.type !== 'image_url' || typeof source?.url !== 'string' || !DATA_URI.test(source.url)) return 'each source must be {type:"image_url", url: a base64 data URI}';
      }
      return undefined;
    }
    case 'openai.images.edits': {
      if (!type.startsWith('multipart/form-data')) return 'OpenAI image edits take multipart/form-data';
      const fields = request.fields ?? {};
      if (!fields.model?.[0] || !fields.prompt?.[0]) return 'model and prompt fields are required';
      const images = (request.files ?? []).filter((file) => file.field === 'image' || file.field === 'image[]');
      if (images.length === 0) return 'at least one image file is required';
      if (images.some((file) => !IMAGE_TYPES.test(file.type) || file.bytes.length === 0)) return 'every image must be a non-empty png, jpeg, webp or gif file';
      const masks = (request.files ?? []).filter((file) => file.field === 'mask');
      if (masks.length > 1 || masks.some((file) => file.type !== 'image/png')) return 'the mask must be one PNG file';
      if (fields.output_compression && !['jpeg', 'webp'].includes(fields.output_format?.[0] ?? '')) return 'output_compression needs output_format jpeg or webp';
      return undefined;
    }
    case 'openai.audio.transcriptions': {
      if (!type.startsWith('multipart/form-data')) return 'transcriptions take multipart/form-data';
      if (!request.fields?.model?.[0]) return 'the model field is required';
      const files = (request.files ?? []).filter((file) => file.field === 'file');
      if (files.length !== 1 || files[0]!.bytes.length === 0) return 'exactly one non-empty file is required';
      return undefined;
    }
    case 'xai.videos.generations':
      if (!type.startsWith('application/json')) return 'the body must be application/json';
      if (typeof json?.model !== 'string' || typeof json?.prompt !== 'string') return 'model and prompt are required strings';
      if (json.image !== undefined && (typeof json.image?.url !== 'string' || !/^(data:image\/|https:)/.test(json.image.url))) return 'image must be {url: a data URI or https URL}';
      if (json.resolution !== undefined && !['480p', '720p', '1080p'].includes(json.resolution)) return `resolution "${json.resolution}" is not 480p, 720p or 1080p`;
      return undefined;
    case 'xai.videos.status':
      return undefined;
  }
}

async function parseMultipart(raw: Buffer, contentType: string): Promise<{ fields: Record<string, string[]>; files: MultipartFile[] }> {
  const form = await new Request('http://model-server.local/', { method: 'POST', headers: { 'content-type': contentType }, body: raw }).formData();
  const fields: Record<string, string[]> = {};
  const files: MultipartFile[] = [];
  for (const [field, value] of form.entries()) {
    if (typeof value === 'string') (fields[field] ??= []).push(value);
    else files.push({ field, filename: value.name, type: value.type, bytes: Buffer.from(await value.arrayBuffer()) });
  }
  return { fields, files };
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export interface MediaHandler extends MediaServer {
  /** Answers a media request; false when the path is not a media endpoint. */
  handle(req: http.IncomingMessage, res: http.ServerResponse, raw: Buffer, baseUrl: () => string): Promise<boolean>;
}

export function createMediaEndpoints(): MediaHandler {
  const queue: MediaResponder[] = [];
  const files = new Map<string, { bytes: Uint8Array; contentType: string }>();
  const requests: MediaRequest[] = [];
  const refused: MediaServer['refused'] = [];
  let base = '';
  return {
    requests,
    refused,
    enqueue: (...responders) => void queue.push(...responders),
    queued: () => queue.length,
    reset() {
      queue.length = 0;
      requests.length = 0;
      refused.length = 0;
    },
    serveFile(path, bytes, contentType) {
      files.set(path, { bytes, contentType });
      return `${base}${path}`;
    },
    async handle(req, res, raw, baseUrl) {
      base = baseUrl();
      const method = req.method ?? 'GET';
      const path = (req.url ?? '/').split('?')[0]!;
      const served = method === 'GET' ? files.get(path) : undefined;
      if (served) {
        res.writeHead(200, { 'content-type': served.contentType, 'content-length': served.bytes.length });
        res.end(Buffer.from(served.bytes));
        return true;
      }
      const route = routeOf(method, path);
      if (!route) return false;
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
      const request: MediaRequest = { endpoint: route.endpoint, method, path, headers, ...(route.requestId ? { requestId: route.requestId } : {}) };
      const type = headers['content-type'] ?? '';
      if (type.startsWith('multipart/form-data')) Object.assign(request, await parseMultipart(raw, type));
      else if (raw.length > 0) {
        try {
          request.json = JSON.parse(raw.toString('utf8'));
        } catch {
          request.json = undefined;
        }
      }
      requests.push(request);
      const problem = wireProblem(request);
      if (problem) {
        refused.push({ request, reason: problem });
        send(res, 400, route.endpoint.startsWith('xai.') ? xaiError(400, `acx model-server: ${problem}`).json : openaiError(400, `acx model-server: ${problem}`).json);
        return true;
      }
      const at = queue.findIndex((queued) => typeof queued === 'function' || queued.for === undefined || queued.for === route.endpoint);
      const responder = at < 0 ? undefined : queue.splice(at, 1)[0];
      if (!responder) {
        send(res, 500, { error: { message: `acx model-server: unexpected media request ${method} ${path}: the media queue is empty` } });
        return true;
      }
      const reply = typeof responder === 'function' ? await responder(request) : responder;
      send(res, reply.status ?? 200, reply.json);
      return true;
    },
  };
}
