// Public types of the scripted model server (re-exported by ../model-server.ts).
import type { ReceivedUpload, ScriptedHosted } from './server-tools.ts';
export type { ReceivedUpload, ScriptedCitation, ScriptedContainerFile, ScriptedHosted } from './server-tools.ts';
import type { MediaServer } from './media.ts';
import type { XaiManagementAccount } from './xai-management.ts';
import type { EmbedFunction, EmbeddingRequest } from './embeddings.ts';

export type Wire = 'openai-responses' | 'openai-chat' | 'anthropic-messages' | 'google';

export interface ScriptedToolCall {
  /** Tool-call id on the wire; generated (unique, deterministic per server) when omitted. */
  id?: string;
  name: string;
  /** Arguments object; serialized as JSON on the wire. */
  input: unknown;
}

/**
 * Token usage as the AI SDK will report it (`usage.inputTokens` etc.), whatever the wire.
 * The server translates: e.g. Anthropic's `input_tokens` excludes cache reads, so it sends
 * `inputTokens - cachedInputTokens - cacheWriteInputTokens` there.
 */
export interface ScriptedUsage {
  /** Total input tokens incl. cached ones. Default: request body length / 4. */
  inputTokens?: number;
  /** Default: generated characters / 4 (at least 1). */
  outputTokens?: number;
  /** Cache-read input tokens (OpenAI cached_tokens, Anthropic cache_read_input_tokens, Gemini cachedContentTokenCount). Default 0. */
  cachedInputTokens?: number;
  /** Cache-write input tokens (Anthropic cache_creation_input_tokens, OpenAI cache_write_tokens). Default 0. */
  cacheWriteInputTokens?: number;
  /** Part of outputTokens spent reasoning. Default: reasoning characters / 4. */
  reasoningTokens?: number;
  /** The call's cost in USD, where the wire reports one (OpenRouter's `usage.cost` on chat completions). */
  cost?: number;
}

export interface ScriptedFailure {
  /** HTTP status, e.g. 400, 401, 429, 500, 529. */
  status: number;
  /** Error message in the provider's error body. Default: a provider-like message for the status. */
  message?: string;
  /** Error type (OpenAI `error.type`, Anthropic `error.type`, Gemini `error.status`). Default: from the status. */
  type?: string;
  /** OpenAI `error.code`. */
  code?: string;
  /** Extra response headers, e.g. `{ 'retry-after': '0' }`. */
  headers?: Record<string, string>;
  /**
   * Streaming requests only: answer 200, stream up to the first content delta, then send the
   * provider's in-stream error event (Anthropic `error`, OpenAI `error`, Gemini error chunk)
   * and end. Non-streaming requests get the plain HTTP error.
   */
  inStream?: boolean;
}

export interface ScriptedResponse {
  text?: string;
  /** Reasoning / thinking text (OpenAI reasoning summary, Anthropic thinking block, Gemini thought part, `reasoning_content` on chat). */
  reasoning?: string;
  toolCalls?: ScriptedToolCall[];
  usage?: ScriptedUsage;
  /** Default: 'tool-calls' when toolCalls is non-empty, else 'stop'. */
  finishReason?: 'stop' | 'tool-calls' | 'length';
  /**
   * Fail instead of answering:
   * - an HTTP status with a provider-shaped error body;
   * - 'context-overflow': HTTP 400 with the provider's own "prompt too long" error;
   * - 'truncated': a JSON body cut mid-JSON, or an SSE stream cut mid-event (connection dropped);
   * - 'unknown-model': HTTP 404 with the provider's own "no such model" error naming the requested model;
   * - 'disconnect': the connection is dropped before any answer (a transport failure, no HTTP status).
   */
  fail?: ScriptedFailure | 'context-overflow' | 'truncated' | 'unknown-model' | 'disconnect';
  /**
   * Hold the response until this promise settles. Streams send their opening events and the
   * first content delta first, then wait; non-streaming replies wait before answering. Lets a
   * test act (abort, kill) while a model call is deterministically in flight.
   */
  pauseUntil?: Promise<unknown>;
  /** What the provider's own server-side tools did (web search, X search, code interpreter) and the sources cited: see server-tools.ts. */
  hosted?: ScriptedHosted;
  /**
   * OpenRouter's router metadata (chat wire): the endpoints the model could be routed to, one
   * of them selected. Sent as `openrouter_metadata` only to a request that opted in with
   * `X-OpenRouter-Metadata: enabled` (on the last chunk of a stream).
   */
  routing?: Array<{ provider: string; selected?: boolean }>;
  /** The response's top-level `provider` field, as OpenRouter sends it (the last upstream it spoke to). */
  provider?: string;
}

/** A string is shorthand for `{ text }`. */
export type ResponderResult = ScriptedResponse | string;

export type Responder =
  | ResponderResult
  | ((request: RecordedRequest) => ResponderResult | Promise<ResponderResult>);

export interface ViewToolCall {
  id: string;
  name: string;
  input: unknown;
}

export interface ViewToolResult {
  callId: string;
  output: string;
  isError?: boolean;
}

export interface ViewMessage {
  role: 'user' | 'assistant' | 'tool';
  /** Text parts joined with '\n' (reasoning excluded). */
  text: string;
  toolCalls?: ViewToolCall[];
  toolResults?: ViewToolResult[];
}

/** Provider-independent view of a request, for assertions and rule-based responders. */
export interface RequestView {
  model: string;
  system: string[];
  messages: ViewMessage[];
  /** Names of the function tools offered. */
  tools: string[];
}

export interface RecordedRequest {
  wire: Wire;
  method: string;
  /** Path without query, e.g. '/v1/responses' or '/v1beta/models/gemini-2.5-flash:streamGenerateContent'. */
  path: string;
  /** Lower-cased header names, as received (API keys included: these are test keys). */
  headers: Record<string, string>;
  /** The parsed JSON request body, untouched. */
  body: any;
  stream: boolean;
  view: RequestView;
}

export interface ModelServer {
  /** http://127.0.0.1:PORT */
  url: string;
  /** For createOpenAI / createOpenAICompatible: `${url}/v1` (POST /responses, /chat/completions). */
  openaiBaseURL: string;
  /** For createAnthropic: `${url}/v1` (POST /messages). */
  anthropicBaseURL: string;
  /** For createGoogleGenerativeAI: `${url}/v1beta` (POST /models/M:generateContent, :streamGenerateContent?alt=sse). */
  googleBaseURL: string;
  /** For createXai's media models: `${url}/xai/v1` (images/generations, images/edits, videos/generations, videos/{id}). */
  xaiBaseURL: string;
  /** The media wires (OpenAI images and transcription at openaiBaseURL, xAI images and video at xaiBaseURL). */
  media: MediaServer;
  /** xAI's Management API base URL: `${url}/xai-management` (management-key validation, prepaid balance). */
  xaiManagementURL: string;
  /** The account it serves: keys, teams and balances a test sets, and the requests it got. */
  xaiManagement: XaiManagementAccount;
  /** Every model request received, in order (including ones that got a failure or no script). */
  requests: RecordedRequest[];
  /** Append responders to the queue; each answers exactly one request. */
  enqueue(...responders: Responder[]): void;
  /** Answers requests once the queue is empty. `undefined` removes it. */
  setFallback(responder: Responder | undefined): void;
  /** Files received on POST /v1/files (OpenAI's Files API), in order. */
  uploads: ReceivedUpload[];
  /** Responders still waiting in the queue. */
  queued(): number;
  /** Every POST /v1/embeddings received, in order (model-server/embeddings.ts). */
  embeddingRequests: EmbeddingRequest[];
  close(): Promise<void>;
}

export interface ModelServerOptions {
  script?: Responder[];
  fallback?: Responder;
  /** The vectors POST /v1/embeddings answers with; default a hashed bag of words. */
  embed?: EmbedFunction;
}
