// OpenAI Chat Completions wire: POST /v1/chat/completions (JSON or SSE). Also what
// OpenAI-compatible servers (Ollama, llama.cpp, vLLM) speak, incl. `reasoning_content`.
import { chatAnnotations } from './server-tools.ts';
import { openaiErrorBody } from './openai-responses.ts';
import type { ViewMessage } from './types.ts';
import {
  argumentDeltas,
  parseArgs,
  pushToolResult,
  textDeltas,
  textOf,
  type PlannedResponse,
  type SseEvent,
  type WireAdapter,
} from './wire.ts';

const finishReasons = { stop: 'stop', 'tool-calls': 'tool_calls', length: 'length' } as const;

function usage(r: PlannedResponse): object {
  return {
    prompt_tokens: r.usage.inputTokens,
    completion_tokens: r.usage.outputTokens,
    total_tokens: r.usage.inputTokens + r.usage.outputTokens,
    prompt_tokens_details: {
      cached_tokens: r.usage.cachedInputTokens,
      ...(r.usage.cacheWriteInputTokens > 0 ? { cache_write_tokens: r.usage.cacheWriteInputTokens } : {}),
    },
    completion_tokens_details: { reasoning_tokens: r.usage.reasoningTokens },
    ...(r.usage.cost !== undefined ? { cost: r.usage.cost } : {}),
  };
}

const contextOverflowMessage =
  "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.";

/**
 * What OpenRouter adds to a response: its top-level `provider`, and, to a request that opted in
 * (`X-OpenRouter-Metadata: enabled`), the router metadata naming the endpoint it selected.
 */
function routerFields(r: PlannedResponse, request: { headers?: Record<string, string> }): object {
  const optedIn = request.headers?.['x-openrouter-metadata']?.toLowerCase() === 'enabled';
  return {
    ...(r.provider ? { provider: r.provider } : {}),
    ...(r.routing && optedIn
      ? {
          openrouter_metadata: {
            requested: r.model,
            strategy: 'direct',
            endpoints: { available: r.routing.map((e) => ({ model: r.model, provider: e.provider, selected: e.selected === true })), total: r.routing.length },
            summary: `available=${r.routing.length}, selected=${r.routing.find((e) => e.selected)?.provider ?? 'none'}`,
          },
        }
      : {}),
  };
}

export function createOpenAIChatWire(): WireAdapter {
  return {
    wire: 'openai-chat',
    toolCallIdPrefix: 'call_',
    headers: (r) => ({ 'x-request-id': `req_${r.serial}`, 'openai-processing-ms': '1' }),

    view(body, model) {
      const system: string[] = [];
      const messages: ViewMessage[] = [];
      for (const m of Array.isArray(body?.messages) ? body.messages : []) {
        if (m?.role === 'system' || m?.role === 'developer') system.push(textOf(m.content));
        else if (m?.role === 'user') messages.push({ role: 'user', text: textOf(m.content) });
        else if (m?.role === 'assistant') {
          const msg: ViewMessage = { role: 'assistant', text: textOf(m.content ?? '') };
          if (Array.isArray(m.tool_calls) && m.tool_calls.length > 0) {
            msg.toolCalls = m.tool_calls.map((c: any) => ({
              id: c.id,
              name: c.function?.name,
              input: parseArgs(c.function?.arguments),
            }));
          }
          messages.push(msg);
        } else if (m?.role === 'tool') {
          pushToolResult(messages, { callId: m.tool_call_id, output: textOf(m.content) });
        }
      }
      const tools = (Array.isArray(body?.tools) ? body.tools : [])
        .filter((t: any) => t?.type === 'function' && typeof t.function?.name === 'string')
        .map((t: any) => t.function.name as string);
      return { model, system, messages, tools };
    },

    json(r, request) {
      return {
        ...routerFields(r, request),
        id: `chatcmpl-${r.serial}`,
        object: 'chat.completion',
        created: r.created,
        model: r.model,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: r.text === '' && r.toolCalls.length > 0 ? null : r.text,
              ...(r.reasoning !== '' ? { reasoning_content: r.reasoning, reasoning: r.reasoning } : {}),
              refusal: null,
              ...(chatAnnotations(r.hosted) ? { annotations: chatAnnotations(r.hosted) } : {}),
              ...(r.toolCalls.length > 0
                ? {
                    tool_calls: r.toolCalls.map((c) => ({
                      id: c.id,
                      type: 'function',
                      function: { name: c.name, arguments: c.arguments },
                    })),
                  }
                : {}),
            },
            logprobs: null,
            finish_reason: finishReasons[r.finishReason],
          },
        ],
        usage: usage(r),
        system_fingerprint: 'fp_acx_model_server',
      };
    },

    events(r, request) {
      const { body } = request;
      const head = {
        id: `chatcmpl-${r.serial}`,
        object: 'chat.completion.chunk',
        created: r.created,
        model: r.model,
        system_fingerprint: 'fp_acx_model_server',
      };
      const chunk = (delta: object | null, finish: string | null = null, firstContent = false): SseEvent => ({
        data: { ...head, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] },
        ...(firstContent ? { firstContent } : {}),
      });
      const out: SseEvent[] = [chunk({ role: 'assistant', content: '', refusal: null })];
      let first = true;
      const takeFirst = (): boolean => {
        const was = first;
        first = false;
        return was;
      };
      // `reasoning_content` (DeepSeek, vLLM, llama.cpp) and `reasoning` (OpenRouter, newer vLLM).
      for (const d of textDeltas(r.reasoning)) out.push(chunk({ reasoning_content: d, reasoning: d }, null, takeFirst()));
      for (const d of textDeltas(r.text)) out.push(chunk({ content: d }, null, takeFirst()));
      const annotations = chatAnnotations(r.hosted);
      if (annotations) out.push(chunk({ annotations }));
      r.toolCalls.forEach((c, index) => {
        out.push(
          chunk(
            { tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] },
            null,
            takeFirst(),
          ),
        );
        for (const a of argumentDeltas(c.arguments)) {
          out.push(chunk({ tool_calls: [{ index, function: { arguments: a } }] }));
        }
      });
      // OpenAI sends usage in an extra choice-less chunk only when asked (stream_options);
      // servers such as llama.cpp put it on the last chunk regardless. Do the same.
      if (body?.stream_options?.include_usage === true) {
        out.push(chunk({}, finishReasons[r.finishReason]));
        out.push({ data: { ...head, ...routerFields(r, request), choices: [], usage: usage(r) } });
      } else {
        const last = chunk({}, finishReasons[r.finishReason]);
        Object.assign(last.data as object, routerFields(r, request), { usage: usage(r) });
        out.push(last);
      }
      out.push({ data: '[DONE]' });
      return out;
    },

    // OpenAI's rule, which the OpenAI-compatible servers share: a tool message is text (a string,
    // or text parts); an image reaches the model only in a user message.
    refuse(body) {
      const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
      const index = messages.findIndex((m) => m?.role === 'tool' && typeof m.content !== 'string' && !(Array.isArray(m.content) && m.content.every((p: any) => p?.type === 'text')));
      return index < 0 ? undefined : `Invalid 'messages[${index}].content': a message with role 'tool' takes text only (a string or text parts).`;
    },
    errorBody: (f) => openaiErrorBody(f, contextOverflowMessage),
    streamError: (f) => ({ data: openaiErrorBody(f, contextOverflowMessage) }),
  };
}
