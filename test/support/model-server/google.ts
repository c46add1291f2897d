// Google Gemini wire: POST /v1beta/models/M:generateContent and
// :streamGenerateContent?alt=sse (SSE without event names).
import type { ViewMessage } from './types.ts';
import {
  pushToolCall,
  pushToolResult,
  stringOutput,
  textDeltas,
  type PlannedResponse,
  type SseEvent,
  type WireAdapter,
} from './wire.ts';

const statuses: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

const messages: Record<number, string> = {
  401: 'API key not valid. Please pass a valid API key.',
  429: 'Resource has been exhausted (e.g. check quota).',
  500: 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting',
  503: 'The model is overloaded. Please try again later.',
};

function usageMetadata(r: PlannedResponse): object {
  const thoughts = r.usage.reasoningTokens;
  return {
    promptTokenCount: r.usage.inputTokens,
    candidatesTokenCount: r.usage.outputTokens - thoughts,
    totalTokenCount: r.usage.inputTokens + r.usage.outputTokens,
    ...(r.usage.cachedInputTokens > 0 ? { cachedContentTokenCount: r.usage.cachedInputTokens } : {}),
    ...(thoughts > 0 ? { thoughtsTokenCount: thoughts } : {}),
  };
}

const finishReason = (r: PlannedResponse): string => (r.finishReason === 'length' ? 'MAX_TOKENS' : 'STOP');

function parts(r: PlannedResponse): any[] {
  const out: any[] = [];
  if (r.reasoning !== '') out.push({ text: r.reasoning, thought: true });
  if (r.text !== '') out.push({ text: r.text });
  // Gemini 3 signs its function calls; a client must send the signature back with the call.
  for (const c of r.toolCalls) out.push({ functionCall: { id: c.id, name: c.name, args: c.input ?? {} }, thoughtSignature: `sig-${c.id}` });
  return out;
}

export function createGoogleWire(): WireAdapter {
  return {
    wire: 'google',
    toolCallIdPrefix: 'call_',
    headers: () => ({}),

    view(body, model) {
      const system: string[] = [];
      for (const p of body?.systemInstruction?.parts ?? []) if (typeof p?.text === 'string') system.push(p.text);
      const out: ViewMessage[] = [];
      for (const c of Array.isArray(body?.contents) ? body.contents : []) {
        const ps: any[] = Array.isArray(c?.parts) ? c.parts : [];
        const text = ps
          .filter((p) => typeof p?.text === 'string' && p.thought !== true)
          .map((p) => p.text as string)
          .join('\n');
        if (c?.role === 'model') {
          out.push({ role: 'assistant', text });
          for (const p of ps) {
            if (p?.functionCall != null) {
              const f = p.functionCall;
              pushToolCall(out, { id: f.id ?? f.name, name: f.name, input: f.args ?? {} });
            }
          }
        } else {
          const results = ps.filter((p) => p?.functionResponse != null);
          for (const p of results) {
            const f = p.functionResponse;
            const isError = f.response?.error !== undefined;
            pushToolResult(out, {
              callId: f.id ?? f.name,
              output: stringOutput(isError ? f.response.error : f.response?.content),
              ...(isError ? { isError } : {}),
            });
          }
          if (text !== '' || results.length === 0) out.push({ role: 'user', text });
        }
      }
      const tools: string[] = [];
      for (const t of Array.isArray(body?.tools) ? body.tools : []) {
        for (const d of t?.functionDeclarations ?? []) if (typeof d?.name === 'string') tools.push(d.name);
      }
      return { model, system, messages: out, tools };
    },

    json(r) {
      return {
        candidates: [{ content: { role: 'model', parts: parts(r) }, finishReason: finishReason(r), index: 0 }],
        usageMetadata: usageMetadata(r),
        modelVersion: r.model,
        responseId: `resp_${r.serial}`,
      };
    },

    events(r) {
      const head = { modelVersion: r.model, responseId: `resp_${r.serial}` };
      const out: SseEvent[] = [];
      const chunk = (part: object): void => {
        out.push({
          data: { candidates: [{ content: { role: 'model', parts: [part] }, index: 0 }], ...head },
          ...(out.length === 0 ? { firstContent: true } : {}),
        });
      };
      for (const text of textDeltas(r.reasoning)) chunk({ text, thought: true });
      for (const text of textDeltas(r.text)) chunk({ text });
      // Gemini sends each function call whole, in one chunk.
      for (const c of r.toolCalls) chunk({ functionCall: { id: c.id, name: c.name, args: c.input ?? {} }, thoughtSignature: `sig-${c.id}` });
      out.push({
        data: {
          candidates: [{ finishReason: finishReason(r), index: 0 }],
          usageMetadata: usageMetadata(r),
          ...head,
        },
        ...(out.length === 0 ? { firstContent: true } : {}),
      });
      return out;
    },

    streamError(f) {
      return { data: this.errorBody(f) };
    },

    errorBody(f) {
      if (f.contextOverflow) {
        return {
          error: {
            code: 400,
            message: f.message ?? 'The input token count (1100000) exceeds the maximum number of tokens allowed (1048576).',
            status: f.type ?? 'INVALID_ARGUMENT',
          },
        };
      }
      return {
        error: {
          code: f.status,
          message: f.message ?? messages[f.status] ?? `Request failed with status ${f.status}.`,
          status: f.type ?? statuses[f.status] ?? (f.status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT'),
        },
      };
    },
  };
}
