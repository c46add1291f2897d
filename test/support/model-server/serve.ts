// Writing replies: JSON bodies, SSE streams, provider errors, and the deliberate faults
// (cut bodies, dropped connections, in-stream errors, held streams).
import type http from 'node:http';
import type { ScriptedFailure, ScriptedResponse, Wire } from './types.ts';
import type { PlannedFailure, PlannedResponse, SseEvent, WireAdapter } from './wire.ts';

export function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string>): void {
  sendText(res, status, JSON.stringify(body), headers);
}

function sendText(res: http.ServerResponse, status: number, text: string, headers: Record<string, string>): void {
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** The failure a scripted response asks for, if it is an HTTP/provider error (not 'truncated' or 'disconnect'). */
export function plannedFailure(scriptedFail: ScriptedResponse['fail'], request: { wire: Wire; model: string }): PlannedFailure | undefined {
  if (scriptedFail === undefined || scriptedFail === 'truncated' || scriptedFail === 'disconnect') return undefined;
  if (scriptedFail === 'context-overflow') {
    return { status: 400, message: undefined, type: undefined, code: undefined, headers: {}, contextOverflow: true };
  }
  const fail = scriptedFail === 'unknown-model' ? unknownModel(request.wire, request.model) : scriptedFail;
  return {
    status: fail.status,
    message: fail.message,
    type: fail.type,
    code: fail.code,
    headers: fail.headers ?? {},
    contextOverflow: false,
  };
}

/** Each provider's own answer to a request for a model it does not have (all HTTP 404). */
function unknownModel(wire: Wire, model: string): ScriptedFailure {
  switch (wire) {
    case 'openai-responses':
    case 'openai-chat':
      return { status: 404, message: `The model \`${model}\` does not exist or you do not have access to it.`, type: 'invalid_request_error', code: 'model_not_found' };
    case 'anthropic-messages':
      return { status: 404, message: `model: ${model}`, type: 'not_found_error' };
    case 'google':
      return { status: 404, message: `models/${model} is not found for API version v1beta, or is not supported for generateContent.`, type: 'NOT_FOUND' };
  }
}

export function internalFailure(message: string, status = 500): PlannedFailure {
  return { status, message, type: undefined, code: undefined, headers: {}, contextOverflow: false };
}

export function sendFailure(res: http.ServerResponse, adapter: WireAdapter, serial: number, f: PlannedFailure): void {
  sendJson(res, f.status, adapter.errorBody(f), { ...adapter.headers({ serial }), ...f.headers });
}

const settle = (p: Promise<unknown> | undefined): Promise<unknown> => (p ?? Promise.resolve()).catch(() => {});

export async function sendCompletion(
  res: http.ServerResponse,
  adapter: WireAdapter,
  planned: PlannedResponse,
  request: { body: any },
  scripted: ScriptedResponse,
): Promise<void> {
  await settle(scripted.pauseUntil);
  const text = JSON.stringify(adapter.json(planned, request));
  // 'truncated': a complete HTTP response whose JSON body stops halfway.
  const body = scripted.fail === 'truncated' ? text.slice(0, Math.floor(text.length / 2)) : text;
  sendText(res, 200, body, adapter.headers(planned));
}

function serializeEvent(e: SseEvent): string {
  const data = typeof e.data === 'string' ? e.data : JSON.stringify(e.data);
  return `${e.event !== undefined ? `event: ${e.event}\n` : ''}data: ${data}\n\n`;
}

export async function sendStream(
  res: http.ServerResponse,
  adapter: WireAdapter,
  planned: PlannedResponse,
  request: { body: any },
  scripted: ScriptedResponse,
  inStreamFailure: PlannedFailure | undefined,
): Promise<void> {
  const events = adapter.events(planned, request);
  res.writeHead(200, {
    ...adapter.headers(planned),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  const write = (chunk: string): void => {
    if (!res.destroyed) res.write(chunk);
  };
  // Holds and in-stream errors happen right after the first content event (or the first event).
  const firstContent = Math.max(0, events.findIndex((e) => e.firstContent === true));

  if (scripted.fail === 'truncated') {
    // A prefix that includes some content, then half of the next event, then the connection drops.
    const cut = Math.min(Math.max(firstContent + 1, Math.floor(events.length / 2)), events.length - 1);
    for (const e of events.slice(0, cut)) write(serializeEvent(e));
    const next = serializeEvent(events[cut]!);
    write(next.slice(0, Math.floor(next.length / 2)));
    if (!res.destroyed) await new Promise<void>((resolve) => res.write('', () => resolve()));
    res.socket?.destroy();
    return;
  }

  const upTo = inStreamFailure !== undefined ? firstContent + 1 : events.length;
  for (let i = 0; i < upTo; i++) {
    write(serializeEvent(events[i]!));
    if (i === firstContent) await settle(scripted.pauseUntil);
  }
  if (inStreamFailure !== undefined) write(serializeEvent(adapter.streamError(inStreamFailure)));
  if (!res.destroyed) res.end();
}
