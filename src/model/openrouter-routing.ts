import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4StreamPart, SharedV4ProviderMetadata } from '@ai-sdk/provider';
import { delegatingModel } from './delegating-model.ts';

/**
 * Which upstream served an OpenRouter call. OpenRouter fans one model id out to many endpoints,
 * so `provider=openrouter` alone does not say what a call ran on. Asked for on every call (the
 * `X-OpenRouter-Metadata: enabled` header), the router's own metadata names the endpoint it
 * *selected*; that name is kept as `providerMetadata.acx.endpoint`, and the engine's `llm` line
 * says `endpoint=`. It is never read from the response's top-level `provider`, which names the
 * last upstream OpenRouter spoke to (a server-side tool's, say), not the one that served: no
 * selected endpoint named means no field, never a guess.
 */
export const ROUTER_METADATA_HEADER = 'x-openrouter-metadata';

export function withRouterMetadata(model: LanguageModelV4): LanguageModelV4 {
  const ask = (options: LanguageModelV4CallOptions): LanguageModelV4CallOptions => ({ ...options, headers: { ...options.headers, [ROUTER_METADATA_HEADER]: 'enabled' } });
  return delegatingModel(model, {
    async doGenerate(options) {
      const result = await model.doGenerate(ask(options));
      return { ...result, providerMetadata: withEndpoint(result.providerMetadata, selectedEndpoint(result.response?.body)) };
    },
    async doStream(options) {
      // The metadata rides the stream's last chunk: the raw chunks are read for it, and passed on only when asked for.
      const result = await model.doStream({ ...ask(options), includeRawChunks: true });
      let endpoint: string | undefined;
      const stream = result.stream.pipeThrough(
        new TransformStream<LanguageModelV4StreamPart, LanguageModelV4StreamPart>({
          transform(part, controller) {
            if (part.type === 'raw') {
              endpoint = selectedEndpoint(part.rawValue) ?? endpoint;
              if (options.includeRawChunks) controller.enqueue(part);
            } else if (part.type === 'finish') {
              controller.enqueue({ ...part, providerMetadata: withEndpoint(part.providerMetadata, endpoint) });
            } else controller.enqueue(part);
          },
        }),
      );
      return { ...result, stream };
    },
  });
}

/** The endpoint the router flagged as selected (`openrouter_metadata.endpoints.available[].selected`). */
export function selectedEndpoint(body: unknown): string | undefined {
  const available = (body as { openrouter_metadata?: { endpoints?: { available?: unknown } } } | undefined)?.openrouter_metadata?.endpoints?.available;
  if (!Array.isArray(available)) return undefined;
  const selected = available.find((entry) => (entry as { selected?: unknown } | null)?.selected === true) as { provider?: unknown } | undefined;
  return typeof selected?.provider === 'string' && selected.provider !== '' ? selected.provider : undefined;
}

/** The serving endpoint a call's provider metadata names (withRouterMetadata), if any. */
export function routedEndpoint(providerMetadata: Record<string, unknown> | undefined): string | undefined {
  const endpoint = (providerMetadata?.acx as { endpoint?: unknown } | undefined)?.endpoint;
  return typeof endpoint === 'string' ? endpoint : undefined;
}

function withEndpoint(metadata: SharedV4ProviderMetadata | undefined, endpoint: string | undefined): SharedV4ProviderMetadata | undefined {
  return endpoint === undefined ? metadata : { ...metadata, acx: { ...metadata?.acx, endpoint } };
}
