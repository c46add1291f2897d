// Anthropic Messages wire: POST /v1/messages (JSON or SSE).
import type { ViewMessage } from './types.ts';
import {
  argumentDeltas,
  pushToolResult,
  textDeltas,
  textOf,
  type PlannedResponse,
  type SseEvent,
  type WireAdapter,
} from './wire.ts';

const stopReasons = { stop: 'end_turn', 'tool-calls': 'tool_use', length: 'max_tokens' } as const;

const errorTypes: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

const errorMessages: Record<number, string> = {
  401: 'invalid x-api-key',
  403: 'Your API key does not have permission to use the specified resource.',
  429: 'Number of request tokens has exceeded your per-minute rate limit',
  500: 'Internal server error',
  529: 'Overloaded',
};

/** Anthropic's `input_tokens` excludes cache reads and writes; the SDK adds them back. */
function usage(r: PlannedResponse): object {
  const { inputTokens, cachedInputTokens, cacheWriteInputTokens } = r.usage;
  return {
    input_tokens: Math.max(0, inputTokens - cachedInputTokens - cacheWriteInputTokens),
    cache_creation_input_tokens: cacheWriteInputTokens,
    cache_read_input_tokens: cachedInputTokens,
    output_tokens: r.usage.outputTokens,
    service_tier: 'standard',
  };
}

function contentBlocks(r: PlannedResponse): any[] {
  const blocks: any[] = [];
  if (r.reasoning !== '') blocks.push({ type: 'thinking', thinking: r.reasoning, signature: `sig_${r.serial}` });
  if (r.text !== '') blocks.push({ type: 'text', text: r.text });
  for (const c of r.toolCalls) blocks.push({ type: 'tool_use', id: c.id, name: c.name, input: c.input ?? {} });
  return blocks;
}

export function createAnthropicWire(): WireAdapter {
  return {
    wire: 'anthropic-messages',
    toolCallIdPrefix: 'toolu_',
    headers: (r) => ({ 'request-id': `req_${r.serial}` }),

    view(body, model) {
      const system: string[] = [];
      if (typeof body?.system === 'string') system.push(body.system);
      else if (Array.isArray(body?.system)) for (const b of body.system) system.push(textOf([b]));
      const messages: ViewMessage[] = [];
      for (const m of Array.isArray(body?.messages) ? body.messages : []) {
        const blocks: any[] = typeof m?.content === 'string' ? [{ type: 'text', text: m.content }] : (m?.content ?? []);
        if (m?.role === 'user') {
          // Tool results ride in user messages on this wire; the view gives them their own message.
          for (const b of blocks.filter((b) => b?.type === 'tool_result')) {
            pushToolResult(messages, {
              callId: b.tool_use_id,
              output: textOf(b.content),
              ...(b.is_error === true ? { isError: true } : {}),
            });
          }
          const textBlocks = blocks.filter((b) => b?.type === 'text');
          if (textBlocks.length > 0 || !blocks.some((b) => b?.type === 'tool_result')) {
            messages.push({ role: 'user', text: textOf(textBlocks) });
          }
        } else if (m?.role === 'assistant') {
          const msg: ViewMessage = { role: 'assistant', text: textOf(blocks.filter((b) => b?.type === 'text')) };
          const calls = blocks.filter((b) => b?.type === 'tool_use');
          if (calls.length > 0) msg.toolCalls = calls.map((b) => ({ id: b.id, name: b.name, input: b.input }));
          messages.push(msg);
        }
      }
      const tools = (Array.isArray(body?.tools) ? body.tools : [])
        .filter((t: any) => typeof t?.name === 'string' && (t.type === undefined || t.type === 'custom'))
        .map((t: any) => t.name as string);
      return { model, system, messages, tools };
    },

    json(r) {
      return {
        id: `msg_${r.serial}`,
        type: 'message',
        role: 'assistant',
        model: r.model,
        content: contentBlocks(r),
        stop_reason: stopReasons[r.finishReason],
        stop_sequence: null,
        usage: usage(r),
      };
    },

    events(r) {
      const ev = (type: string, payload: object, firstContent = false): SseEvent => ({
        event: type,
        data: { type, ...payload },
        ...(firstContent ? { firstContent } : {}),
      });
      const out: SseEvent[] = [
        ev('message_start', {
          message: {
            id: `msg_${r.serial}`,
            type: 'message',
            role: 'assistant',
            model: r.model,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { ...usage(r), output_tokens: 1 },
          },
        }),
        ev('ping', {}),
      ];
      let first = true;
      const takeFirst = (): boolean => {
        const was = first;
        first = false;
        return was;
      };
      contentBlocks(r).forEach((block, index) => {
        if (block.type === 'thinking') {
          out.push(ev('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } }));
          for (const thinking of textDeltas(block.thinking)) {
            out.push(ev('content_block_delta', { index, delta: { type: 'thinking_delta', thinking } }, takeFirst()));
          }
          out.push(ev('content_block_delta', { index, delta: { type: 'signature_delta', signature: block.signature } }));
        } else if (block.type === 'text') {
          out.push(ev('content_block_start', { index, content_block: { type: 'text', text: '' } }));
          for (const text of textDeltas(block.text)) {
            out.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text } }, takeFirst()));
          }
        } else {
          out.push(ev('content_block_start', { index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } }));
          const json = JSON.stringify(block.input);
          for (const partial_json of argumentDeltas(json)) {
            out.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json } }, takeFirst()));
          }
        }
        out.push(ev('content_block_stop', { index }));
      });
      out.push(
        ev('message_delta', {
          delta: { stop_reason: stopReasons[r.finishReason], stop_sequence: null },
          usage: { output_tokens: r.usage.outputTokens },
        }),
      );
      out.push(ev('message_stop', {}));
      return out;
    },

    streamError(f) {
      return { event: 'error', data: this.errorBody(f) };
    },

    errorBody(f) {
      if (f.contextOverflow) {
        return {
          type: 'error',
          error: { type: f.type ?? 'invalid_request_error', message: f.message ?? 'prompt is too long: 215031 tokens > 200000 maximum' },
        };
      }
      return {
        type: 'error',
        error: {
          type: f.type ?? errorTypes[f.status] ?? (f.status >= 500 ? 'api_error' : 'invalid_request_error'),
          message: f.message ?? errorMessages[f.status] ?? `Request failed with status ${f.status}`,
        },
      };
    },
  };
}
