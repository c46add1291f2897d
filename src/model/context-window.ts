import type { Logger } from '../util/logger.ts';
import { errorMessage } from '../core/errors.ts';

/**
 * Asks the provider how large the model's context window is, for the providers that say:
 * OpenRouter per endpoint it routes the model to (`GET /models/{id}/endpoints`: the smallest, as
 * any of them may serve a call; its model list as a fallback); xAI (`context_length`, the model
 * found by its id or an alias) and OpenAI-compatible servers (vLLM's `max_model_len`, a
 * `context_length` or `context_window` field) under `GET /models`; llama.cpp's server, the
 * running context (`n_ctx`) under `GET /props`; the Gemini API, `inputTokenLimit` under
 * `GET /models/{id}`. OpenAI and Anthropic do not say, and Ollama's listed length is not the
 * window it actually runs with, so those are not asked.
 *
 * Bounded requests (the first that states a window wins), only when no ceiling is configured;
 * any failure or silence means "unknown" (the engine then uses its floor), never a failed start.
 */
export interface ContextWindowQuery {
  provider: string;
  modelId: string;
  baseURL: string | undefined;
  apiKey: string | undefined;
  timeoutMs?: number;
  logger?: Logger;
  fetch?: typeof fetch;
}

export async function discoverContextWindow(query: ContextWindowQuery): Promise<number | undefined> {
  const doFetch = query.fetch ?? fetch;
  // The plans in order: the first that states a window wins.
  for (const plan of requestsFor(query)) {
    try {
      const response = await doFetch(plan.url, { headers: plan.headers, signal: AbortSignal.timeout(query.timeoutMs ?? 3000), redirect: 'error' });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const tokens = plan.read((await response.json()) as unknown);
      if (tokens !== undefined) return tokens;
      query.logger?.debug('context window not stated', { provider: query.provider, model: query.modelId, url: plan.url });
    } catch (error) {
      query.logger?.debug('context window query failed', { provider: query.provider, model: query.modelId, error: errorMessage(error) });
    }
  }
  return undefined;
}

interface Plan {
  url: string;
  headers: Record<string, string>;
  read: (body: unknown) => number | undefined;
}

function requestsFor(query: ContextWindowQuery): Plan[] {
  const base = (query.baseURL ?? defaultBase(query.provider))?.replace(/\/+$/, '');
  if (!base) return [];
  const bearer: Record<string, string> = query.apiKey ? { authorization: `Bearer ${query.apiKey}` } : {};
  const listed: Plan = { url: `${base}/models`, headers: bearer, read: (body) => fromModelList(body, query.modelId) };
  switch (query.provider) {
    case 'openrouter':
      // The model routes to many endpoints whose windows differ (up to 10×): any of them may serve
      // a call, so the ceiling is the smallest. The list's one figure (the largest) is the fallback.
      return [{ url: `${base}/models/${query.modelId.split('/').map(encodeURIComponent).join('/')}/endpoints`, headers: bearer, read: smallestEndpoint }, listed];
    case 'xai':
    case 'openai-compatible':
    case 'vllm':
      return [listed];
    case 'llamacpp':
      return [{ url: `${base.replace(/\/v1$/, '')}/props`, headers: bearer, read: (body) => positive(record(record(body)?.default_generation_settings)?.n_ctx ?? record(body)?.n_ctx) }];
    case 'google':
      return [
        {
          url: `${base}/models/${encodeURIComponent(query.modelId)}`,
          headers: query.apiKey ? { 'x-goog-api-key': query.apiKey } : {},
          read: (body) => positive(record(body)?.inputTokenLimit),
        },
      ];
    default:
      return [];
  }
}

/** OpenRouter's `{ data: { endpoints: [{ context_length }] } }`: the smallest window among them. */
function smallestEndpoint(body: unknown): number | undefined {
  const endpoints = record(record(body)?.data)?.endpoints;
  if (!Array.isArray(endpoints)) return undefined;
  const windows = endpoints.map((endpoint) => positive(record(endpoint)?.context_length)).filter((n): n is number => n !== undefined);
  return windows.length > 0 ? Math.min(...windows) : undefined;
}

function defaultBase(provider: string): string | undefined {
  if (provider === 'openrouter') return 'https://openrouter.ai/api/v1';
  if (provider === 'xai') return 'https://api.x.ai/v1';
  if (provider === 'google') return 'https://generativelanguage.googleapis.com/v1beta';
  return undefined;
}

/** `{ data: [{ id, aliases?, context_length | max_model_len | context_window }] }`, the model found by id or alias. */
function fromModelList(body: unknown, modelId: string): number | undefined {
  const data = record(body)?.data;
  if (!Array.isArray(data)) return undefined;
  const named = (item: unknown) => record(item)?.id === modelId || (Array.isArray(record(item)?.aliases) && (record(item)!.aliases as unknown[]).includes(modelId));
  const entry = record(data.find((item) => record(item)?.id === modelId) ?? data.find(named));
  if (!entry) return undefined;
  return positive(entry.context_length ?? entry.max_model_len ?? entry.context_window ?? record(entry.top_provider)?.context_length);
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function positive(value: unknown): number | undefined {
  const n = typeof value === 'string' ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : undefined;
}
