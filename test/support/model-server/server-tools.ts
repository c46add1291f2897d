// The provider-side ("hosted", server-executed) tool wire: what a response says a provider's own
// tools did. OpenAI Responses and xAI (which speaks the Responses wire) report web_search_call,
// x_search_call and code_interpreter_call output items and url_citation /
// container_file_citation annotations on the message text; OpenRouter's chat completions carry
// its server tool's url_citation annotations on the message. Plus the files a code run touches:
// OpenAI's Files upload (POST /v1/files) and container file listing and content.
import type http from 'node:http';
import { type SseEvent, textDeltas } from './wire.ts';

export interface ScriptedCitation {
  url: string;
  title?: string;
  /** OpenRouter's excerpt of the page. */
  content?: string;
}

export interface ScriptedContainerFile {
  /** File id in the container, e.g. 'cfile_1'. */
  id: string;
  /** Path in the container, e.g. '/mnt/data/out.csv'. */
  path: string;
  content: string;
  /** 'assistant' (the code wrote it, default) or 'user' (an attached input). */
  source?: 'assistant' | 'user';
}

/** What the provider's server-side tools did in one response (ScriptedResponse.hosted). */
export interface ScriptedHosted {
  /** A web_search_call item (OpenAI, xAI) with this query. */
  webSearch?: { query: string };
  /** An x_search_call item (xAI). */
  xSearch?: { query: string };
  /** A code_interpreter_call item: the executed code, its container, its logs and the files it wrote. */
  codeInterpreter?: { code: string; containerId: string; logs?: string; files?: ScriptedContainerFile[] };
  /** url_citation annotations on the answer text. */
  citations?: ScriptedCitation[];
}

/** Hosted output items for the Responses wire (OpenAI and xAI), placed before the message. */
export function hostedOutputItems(hosted: ScriptedHosted | undefined, serial: number): any[] {
  if (!hosted) return [];
  const items: any[] = [];
  if (hosted.webSearch) {
    items.push({ id: `ws_${serial}`, type: 'web_search_call', status: 'completed', action: { type: 'search', query: hosted.webSearch.query } });
  }
  if (hosted.xSearch) {
    items.push({ id: `xs_${serial}`, type: 'x_search_call', status: 'completed', name: 'x_keyword_search', arguments: JSON.stringify({ query: hosted.xSearch.query }) });
  }
  if (hosted.codeInterpreter) {
    const run = hosted.codeInterpreter;
    items.push({
      id: `ci_${serial}`,
      type: 'code_interpreter_call',
      status: 'completed',
      code: run.code,
      container_id: run.containerId,
      outputs: run.logs === undefined ? null : [{ type: 'logs', logs: run.logs }],
    });
  }
  return items;
}

/** Annotations on the Responses message text: url citations, and a citation per file the code wrote. */
export function responsesAnnotations(hosted: ScriptedHosted | undefined, text: string): any[] {
  if (!hosted) return [];
  const annotations: any[] = (hosted.citations ?? []).map((citation) => ({
    type: 'url_citation',
    start_index: 0,
    end_index: text.length,
    url: citation.url,
    title: citation.title ?? citation.url,
  }));
  const run = hosted.codeInterpreter;
  for (const file of run?.files ?? []) {
    if ((file.source ?? 'assistant') !== 'assistant') continue;
    annotations.push({
      type: 'container_file_citation',
      container_id: run!.containerId,
      file_id: file.id,
      filename: file.path.split('/').pop(),
      start_index: 0,
      end_index: text.length,
    });
  }
  return annotations;
}

/**
 * The stream events of a hosted item, as OpenAI sends them: added (in progress); for a code run
 * its code as deltas and a done event (where the provider's stream reports the call); then done.
 */
export function hostedItemEvents(item: any, index: number, ev: (type: string, payload: object) => SseEvent): SseEvent[] {
  const base = { item_id: item.id, output_index: index };
  const code =
    item.type === 'code_interpreter_call' && typeof item.code === 'string'
      ? [
          ...textDeltas(item.code).map((delta) => ev('response.code_interpreter_call_code.delta', { ...base, delta })),
          ev('response.code_interpreter_call_code.done', { ...base, code: item.code }),
        ]
      : [];
  return [
    ev('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', ...(item.type === 'code_interpreter_call' ? { code: '', outputs: null } : {}) } }),
    ...code,
    ev('response.output_item.done', { output_index: index, item }),
  ];
}

/** OpenRouter's chat-completions message annotations (its server web search). */
export function chatAnnotations(hosted: ScriptedHosted | undefined): any[] | undefined {
  const citations = hosted?.citations;
  if (!citations || citations.length === 0) return undefined;
  return citations.map((citation) => ({
    type: 'url_citation',
    url_citation: { url: citation.url, title: citation.title ?? '', ...(citation.content ? { content: citation.content } : {}) },
  }));
}

/** An upload received on POST /v1/files. */
export interface ReceivedUpload {
  id: string;
  filename: string;
  purpose: string;
  bytes: number;
  content: Buffer;
}

/**
 * The files side of code execution: uploads (POST /v1/files, multipart) and the containers the
 * scripted code runs wrote into (GET /v1/containers/:id/files[/:file/content]). Returns true
 * when it answered the request.
 */
export function createHostedFiles() {
  const uploads: ReceivedUpload[] = [];
  const containers = new Map<string, ScriptedContainerFile[]>();
  return {
    uploads,
    /** Remembers the files a scripted code run wrote, so the container endpoints serve them. */
    noteRun(hosted: ScriptedHosted | undefined): void {
      const run = hosted?.codeInterpreter;
      if (run) containers.set(run.containerId, [...(containers.get(run.containerId) ?? []), ...(run.files ?? [])]);
    },
    async handle(req: http.IncomingMessage, res: http.ServerResponse, method: string, path: string, raw: Buffer): Promise<boolean> {
      const send = (status: number, body: unknown) => {
        const text = JSON.stringify(body);
        res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
        res.end(text);
      };
      if (method === 'POST' && path === '/v1/files') {
        const form = await new Response(new Uint8Array(raw), { headers: { 'content-type': String(req.headers['content-type'] ?? '') } }).formData();
        const file = form.get('file');
        if (!(file instanceof Blob)) {
          send(400, { error: { message: "acx model-server: POST /v1/files needs a multipart 'file' field", type: 'invalid_request_error' } });
          return true;
        }
        const content = Buffer.from(await file.arrayBuffer());
        const upload: ReceivedUpload = {
          id: `file-${uploads.length + 1}`,
          filename: (file as File).name ?? 'blob',
          purpose: String(form.get('purpose') ?? ''),
          bytes: content.length,
          content,
        };
        uploads.push(upload);
        send(200, { id: upload.id, object: 'file', bytes: upload.bytes, created_at: Math.floor(Date.now() / 1000), filename: upload.filename, purpose: upload.purpose, status: 'processed' });
        return true;
      }
      const listing = /^\/v1\/containers\/([^/]+)\/files$/.exec(path);
      const content = /^\/v1\/containers\/([^/]+)\/files\/([^/]+)\/content$/.exec(path);
      if (method !== 'GET' || (!listing && !content)) return false;
      const containerId = decodeURIComponent((listing ?? content)![1]!);
      const files = containers.get(containerId);
      if (!files) {
        send(404, { error: { message: `Container ${containerId} not found.`, type: 'invalid_request_error' } });
        return true;
      }
      if (listing) {
        send(200, {
          object: 'list',
          data: files.map((file) => ({ id: file.id, object: 'container.file', container_id: containerId, path: file.path, source: file.source ?? 'assistant', bytes: Buffer.byteLength(file.content) })),
          has_more: false,
        });
        return true;
      }
      const file = files.find((entry) => entry.id === decodeURIComponent(content![2]!));
      if (!file) {
        send(404, { error: { message: `File not found in container ${containerId}.`, type: 'invalid_request_error' } });
        return true;
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': Buffer.byteLength(file.content) });
      res.end(file.content);
      return true;
    },
  };
}
