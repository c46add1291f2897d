// OpenAI Responses API wire: POST /v1/responses (JSON or SSE).
import type { ViewMessage } from './types.ts';
import { hostedItemEvents, hostedOutputItems, responsesAnnotations } from './server-tools.ts';
import {
  argumentDeltas,
  parseArgs,
  pushToolCall,
  pushToolResult,
  textDeltas,
  textOf,
  type PlannedFailure,
  type PlannedResponse,
  type SseEvent,
  type WireAdapter,
} from './wire.ts';

const errorTypes: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'invalid_request_error',
  403: 'permission_error',
  404: 'invalid_request_error',
  429: 'rate_limit_error',
  500: 'server_error',
  503: 'server_error',
};

const errorMessages: Record<number, string> = {
  401: 'Incorrect API key provided.',
  403: 'You have insufficient permissions for this operation. Missing scopes: model.request.',
  429: 'Rate limit reached. Please try again later.',
  500: 'The server had an error while processing your request. Sorry about that!',
  503: 'The engine is currently overloaded, please try again later.',
};

export function openaiErrorBody(f: PlannedFailure, contextOverflowMessage: string): unknown {
  if (f.contextOverflow) {
    return {
      error: {
        message: f.message ?? contextOverflowMessage,
        type: f.type ?? 'invalid_request_error',
        param: 'input',
        code: f.code ?? 'context_length_exceeded',
      },
    };
  }
  return {
    error: {
      message: f.message ?? errorMessages[f.status] ?? `Request failed with status ${f.status}.`,
      type: f.type ?? errorTypes[f.status] ?? (f.status >= 500 ? 'server_error' : 'invalid_request_error'),
      param: null,
      code: f.code ?? (f.status === 401 ? 'invalid_api_key' : null),
    },
  };
}

/** Output items of a response, in wire order: reasoning, message, function calls. */
function outputItems(r: PlannedResponse): any[] {
  const items: any[] = [];
  const hosted = hostedOutputItems(r.hosted, r.serial);
  if (r.reasoning !== '') {
    items.push({
      id: `rs_${r.serial}`,
      type: 'reasoning',
      status: 'completed',
      summary: [{ type: 'summary_text', text: r.reasoning }],
    });
  }
  items.push(...hosted);
  if (r.text !== '') {
    items.push({
      id: `msg_${r.serial}`,
      type: 'message',
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: r.text, annotations: responsesAnnotations(r.hosted, r.text), logprobs: [] }],
    });
  }
  r.toolCalls.forEach((call, i) => {
    items.push({
      id: `fc_${r.serial}_${i}`,
      type: 'function_call',
      status: 'completed',
      arguments: call.arguments,
      call_id: call.id,
      name: call.name,
    });
  });
  return items;
}

function responseObject(r: PlannedResponse, body: any, status: 'in_progress' | 'completed' | 'incomplete'): any {
  const done = status !== 'in_progress';
  return {
    id: `resp_${r.serial}`,
    object: 'response',
    created_at: r.created,
    status,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: body?.instructions ?? null,
    max_output_tokens: body?.max_output_tokens ?? null,
    model: r.model,
    output: done ? outputItems(r) : [],
    parallel_tool_calls: body?.parallel_tool_calls ?? true,
    previous_response_id: body?.previous_response_id ?? null,
    reasoning: { effort: body?.reasoning?.effort ?? null, summary: body?.reasoning?.summary ?? null },
    store: body?.store ?? true,
    temperature: body?.temperature ?? 1,
    tool_choice: body?.tool_choice ?? 'auto',
    tools: body?.tools ?? [],
    top_p: body?.top_p ?? 1,
    truncation: 'disabled',
    usage: done
      ? {
          input_tokens: r.usage.inputTokens,
          input_tokens_details: {
            cached_tokens: r.usage.cachedInputTokens,
            ...(r.usage.cacheWriteInputTokens > 0 ? { cache_write_tokens: r.usage.cacheWriteInputTokens } : {}),
          },
          output_tokens: r.usage.outputTokens,
          output_tokens_details: { reasoning_tokens: r.usage.reasoningTokens },
          total_tokens: r.usage.inputTokens + r.usage.outputTokens,
        }
      : null,
    metadata: body?.metadata ?? {},
  };
}

const contextOverflowMessage =
  'Your input exceeds the context window of this model. Please adjust your input and try again.';

export function createOpenAIResponsesWire(): WireAdapter {
  // Output items this server produced, so `item_reference` inputs (sent when store=true)
  // resolve to what the model said, as they would on OpenAI's side.
  const items = new Map<string, any>();
  const remember = (r: PlannedResponse): void => {
    for (const item of outputItems(r)) items.set(item.id, item);
  };

  const addItem = (messages: ViewMessage[], system: string[], item: any): void => {
    if (item == null || typeof item !== 'object') return;
    if (item.type === 'item_reference') {
      addItem(messages, system, items.get(item.id));
      return;
    }
    if (item.type === 'function_call') {
      pushToolCall(messages, { id: item.call_id, name: item.name, input: parseArgs(item.arguments) });
      return;
    }
    if (item.type === 'function_call_output') {
      pushToolResult(messages, { callId: item.call_id, output: textOf(item.output) });
      return;
    }
    if (item.type !== undefined && item.type !== 'message') return; // reasoning, hosted tools, ...
    const text = textOf(item.content);
    if (item.role === 'system' || item.role === 'developer') system.push(text);
    else if (item.role === 'user') messages.push({ role: 'user', text });
    else if (item.role === 'assistant') {
      // One assistant turn arrives as several items (text, then function calls): merge them.
      const last = messages[messages.length - 1];
      if (last?.role === 'assistant' && last.toolCalls === undefined) {
        last.text = last.text === '' ? text : `${last.text}\n${text}`;
      } else messages.push({ role: 'assistant', text });
    }
  };

  return {
    wire: 'openai-responses',
    toolCallIdPrefix: 'call_',
    headers: (r) => ({ 'x-request-id': `req_${r.serial}`, 'openai-processing-ms': '1' }),

    view(body, model) {
      const system: string[] = [];
      const messages: ViewMessage[] = [];
      if (typeof body?.instructions === 'string') system.push(body.instructions);
      if (typeof body?.input === 'string') messages.push({ role: 'user', text: body.input });
      else for (const item of Array.isArray(body?.input) ? body.input : []) addItem(messages, system, item);
      const tools = (Array.isArray(body?.tools) ? body.tools : [])
        .filter((t: any) => t?.type === 'function' && typeof t.name === 'string')
        .map((t: any) => t.name as string);
      return { model, system, messages, tools };
    },

    json(r, { body }) {
      remember(r);
      return responseObject(r, body, r.finishReason === 'length' ? 'incomplete' : 'completed');
    },

    events(r, { body }) {
      remember(r);
      let seq = 0;
      const ev = (type: string, payload: object, firstContent = false): SseEvent => ({
        event: type,
        data: { type, sequence_number: seq++, ...payload },
        ...(firstContent ? { firstContent } : {}),
      });
      const out: SseEvent[] = [
        ev('response.created', { response: responseObject(r, body, 'in_progress') }),
        ev('response.in_progress', { response: responseObject(r, body, 'in_progress') }),
      ];
      let first = true;
      const takeFirst = (): boolean => {
        const was = first;
        first = false;
        return was;
      };
      outputItems(r).forEach((item, index) => {
        const base = { item_id: item.id, output_index: index };
        if (item.type === 'reasoning') {
          const part = { type: 'summary_text', text: '' };
          out.push(ev('response.output_item.added', { output_index: index, item: { ...item, summary: [] } }));
          out.push(ev('response.reasoning_summary_part.added', { ...base, summary_index: 0, part }));
          for (const delta of textDeltas(r.reasoning)) {
            out.push(ev('response.reasoning_summary_text.delta', { ...base, summary_index: 0, delta }, takeFirst()));
          }
          out.push(ev('response.reasoning_summary_text.done', { ...base, summary_index: 0, text: r.reasoning }));
          out.push(ev('response.reasoning_summary_part.done', { ...base, summary_index: 0, part: { ...part, text: r.reasoning } }));
          out.push(ev('response.output_item.done', { output_index: index, item }));
        } else if (item.type === 'message') {
          const part = { type: 'output_text', text: '', annotations: [], logprobs: [] };
          out.push(ev('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', content: [] } }));
          out.push(ev('response.content_part.added', { ...base, content_index: 0, part }));
          for (const delta of textDeltas(r.text)) {
            out.push(ev('response.output_text.delta', { ...base, content_index: 0, delta, logprobs: [] }, takeFirst()));
          }
          responsesAnnotations(r.hosted, r.text).forEach((annotation, annotation_index) => {
            out.push(ev('response.output_text.annotation.added', { ...base, content_index: 0, annotation_index, annotation }));
          });
          out.push(ev('response.output_text.done', { ...base, content_index: 0, text: r.text, logprobs: [] }));
          out.push(ev('response.content_part.done', { ...base, content_index: 0, part: { ...part, text: r.text } }));
          out.push(ev('response.output_item.done', { output_index: index, item }));
        } else if (item.type !== 'function_call') {
          out.push(...hostedItemEvents(item, index, ev));
        } else {
          out.push(ev('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', arguments: '' } }));
          for (const delta of argumentDeltas(item.arguments)) {
            out.push(ev('response.function_call_arguments.delta', { ...base, delta }, takeFirst()));
          }
          out.push(ev('response.function_call_arguments.done', { ...base, arguments: item.arguments }));
          out.push(ev('response.output_item.done', { output_index: index, item }));
        }
      });
      const final = r.finishReason === 'length' ? 'incomplete' : 'completed';
      out.push(ev(`response.${final}`, { response: responseObject(r, body, final) }));
      return out;
    },

    errorBody: (f) => openaiErrorBody(f, contextOverflowMessage),

    streamError(f) {
      const { error } = openaiErrorBody(f, contextOverflowMessage) as { error: any };
      return {
        event: 'error',
        data: { type: 'error', sequence_number: 999, code: error.code ?? error.type, message: error.message, param: null },
      };
    },
  };
}
