// The AI SDK's chat client, without a browser: a chat posted as useChat's transport posts it, the
// reply read with the SDK's own SSE parser and UI message reader (the code useChat runs), which
// fails on a stream it cannot place — a tool part for a call its message does not have.
import { parseJsonEventStream, readUIMessageStream, type UIMessage, type UIMessageChunk, uiMessageChunkSchema } from 'ai';

export type ToolPart = Extract<UIMessage['parts'][number], { toolCallId: string }>;

export interface Reply {
  status: number;
  /** The assistant message as the client holds it after the reply (the continued one, or a new one). */
  message: UIMessage | undefined;
  chunks: UIMessageChunk[];
  /** The error chunks' texts: what useChat shows as its error. */
  errors: string[];
}

export async function postChat(url: string, id: string, messages: UIMessage[]): Promise<Reply> {
  const response = await fetch(`${url}/api/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id, messages, trigger: 'submit-message' }) });
  if (!response.ok || !response.body) return { status: response.status, message: undefined, chunks: [], errors: [await response.text()] };
  const chunks: UIMessageChunk[] = [];
  const stream = parseJsonEventStream({ stream: response.body, schema: uiMessageChunkSchema }).pipeThrough(
    new TransformStream<{ success: boolean; value?: UIMessageChunk; error?: unknown }, UIMessageChunk>({
      transform(parsed, controller) {
        if (!parsed.success) throw parsed.error;
        chunks.push(parsed.value!);
        controller.enqueue(parsed.value!);
      },
    }),
  );
  // As useChat does: a reply continues the last message when it is the assistant's.
  const last = messages.at(-1);
  const continuing = last?.role === 'assistant' ? structuredClone(last) : undefined;
  let message: UIMessage | undefined = continuing;
  for await (const m of readUIMessageStream({ stream, ...(continuing ? { message: continuing } : {}) })) message = m;
  return { status: response.status, message, chunks, errors: chunks.flatMap((c) => (c.type === 'error' ? [c.errorText] : [])) };
}

export const userMessage = (id: string, text: string): UIMessage => ({ id, role: 'user', parts: [{ type: 'text', text }] });

export function toolPart(message: UIMessage | undefined, name: string): ToolPart | undefined {
  return message?.parts.find((p) => p.type === `tool-${name}`) as ToolPart | undefined;
}

export function texts(message: UIMessage | undefined): string[] {
  return (message?.parts ?? []).flatMap((p) => (p.type === 'text' ? [p.text] : []));
}

/** What addToolApprovalResponse does to the message holding the request. */
export function answered(message: UIMessage, approved: boolean, reason?: string): UIMessage {
  return {
    ...message,
    parts: message.parts.map((p) =>
      'approval' in p && p.state === 'approval-requested' ? ({ ...p, state: 'approval-responded', approval: { id: p.approval.id, approved, ...(reason ? { reason } : {}) } } as unknown as typeof p) : p,
    ),
  };
}

/**
 * A UI message stream read as the AI SDK's client reads it (readUIMessageStream, the code useChat
 * runs), chunk by chunk: what came so far, a wait for a chunk, and the message it assembles (from
 * `from`, when the stream continues a message the client holds). A stream cut off (a dropped
 * connection) leaves `message` rejected; `chunks` keeps what came before.
 */
export interface Following {
  chunks: UIMessageChunk[];
  /** Resolves once a chunk like this has come. */
  seen(test: (chunk: UIMessageChunk) => boolean): Promise<void>;
  message: Promise<UIMessage | undefined>;
}

export function follow(stream: ReadableStream<UIMessageChunk>, from?: UIMessage): Following {
  const chunks: UIMessageChunk[] = [];
  const waits: Array<{ test: (chunk: UIMessageChunk) => boolean; resolve: () => void }> = [];
  const recorded = stream.pipeThrough(
    new TransformStream<UIMessageChunk, UIMessageChunk>({
      transform(chunk, controller) {
        chunks.push(chunk);
        for (const wait of waits.filter((w) => w.test(chunk))) {
          waits.splice(waits.indexOf(wait), 1);
          wait.resolve();
        }
        controller.enqueue(chunk);
      },
    }),
  );
  const message = (async () => {
    let assembled = from ? structuredClone(from) : undefined;
    for await (const next of readUIMessageStream({ stream: recorded, ...(assembled ? { message: assembled } : {}) })) assembled = next;
    return assembled;
  })();
  message.catch(() => {});
  return {
    chunks,
    seen: (test) => (chunks.some(test) ? Promise.resolve() : new Promise((resolve) => waits.push({ test, resolve }))),
    message,
  };
}

/** The text a stream's text deltas spell, in order: a delta sent twice shows as text twice. */
export const streamedText = (chunks: UIMessageChunk[]): string => chunks.flatMap((c) => (c.type === 'text-delta' ? [c.delta] : [])).join('');
