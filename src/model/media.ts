import type { Experimental_VideoModelV4, ImageModelV4, TranscriptionModelV4 } from '@ai-sdk/provider';
import { AcxError, ConfigError, errorMessage } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import { logSeconds } from '../util/duration.ts';
import { addLiveSecret } from '../util/scrub.ts';
import { callCostUsd } from './call-cost.ts';
import { MissingApiKeyError, PROVIDERS } from './providers.ts';

/**
 * The media seam: image generation and editing, transcription and video through the AI SDK's
 * media APIs (`generateImage`, `transcribe`, `experimental_generateVideo`) and the providers'
 * media models. Like providers.ts, it is the only place that builds those models and calls `ai`
 * for media; the tools in tools/builtin/ describe what the model may ask for and where results go.
 *
 * A generation spends money and cannot be taken back, so no call here is retried by the SDK
 * (`maxRetries: 0`), except the video status polls, which only read.
 * Every call logs one `media` line: kind, provider, model, the vendor call's duration, and
 * `cost=` only when the provider states one (xAI does, in ticks; OpenAI does not).
 */
export type MediaKind = 'image.generate' | 'image.edit' | 'video.generate' | 'audio.transcribe';

/** Providers with media models in acx: OpenAI (images, transcription) and xAI (images, video). */
export const MEDIA_PROVIDERS = ['openai', 'xai'] as const;
export type MediaProviderId = (typeof MEDIA_PROVIDERS)[number];

export function isMediaProvider(provider: string): provider is MediaProviderId {
  return (MEDIA_PROVIDERS as readonly string[]).includes(provider);
}

/** Where a provider's media models are reached; the key is read when a model is first built. */
export interface MediaEndpoint {
  provider: MediaProviderId;
  /** Override of the provider's base URL (its `*_BASE_URL` variable otherwise). */
  baseURL?: string;
  env?: NodeJS.ProcessEnv;
}

interface MediaClient {
  image(modelId: string): ImageModelV4;
  transcription(modelId: string): TranscriptionModelV4;
  video(modelId: string): Experimental_VideoModelV4;
  baseURL: string | undefined;
}

const MEDIA_ERROR_HINT = 'Read the provider message above; change the request (prompt, size, source files) or try again later.';

async function mediaClient(endpoint: MediaEndpoint): Promise<MediaClient> {
  const env = endpoint.env ?? process.env;
  const definition = PROVIDERS[endpoint.provider]!;
  const keyName = definition.keyEnv.find((name) => env[name]);
  const apiKey = keyName ? env[keyName] : undefined;
  addLiveSecret(apiKey);
  if (!apiKey) throw new MissingApiKeyError(endpoint.provider, definition.keyEnv);
  const baseURL = endpoint.baseURL ?? (definition.baseUrlEnv ? env[definition.baseUrlEnv] : undefined) ?? undefined;
  if (endpoint.provider === 'openai') {
    const { createOpenAI } = await import('@ai-sdk/openai');
    const provider = createOpenAI({ apiKey, ...(baseURL ? { baseURL } : {}) });
    return {
      image: (id) => provider.image(id) as ImageModelV4,
      transcription: (id) => provider.transcription(id) as TranscriptionModelV4,
      video: () => {
        throw new ConfigError('OpenAI has no video model in acx.', { hint: 'Use grok_generate_video on the xai provider.' });
      },
      baseURL,
    };
  }
  const { createXai } = await import('@ai-sdk/xai');
  const provider = createXai({ apiKey, ...(baseURL ? { baseURL } : {}) });
  return {
    image: (id) => provider.image(id) as ImageModelV4,
    transcription: () => {
      throw new ConfigError('xAI has no transcription model in acx.', { hint: 'Use listen on the openai provider.' });
    },
    video: (id) => provider.video(id) as Experimental_VideoModelV4,
    baseURL,
  };
}

/** One source or mask image: its bytes and media type. */
export interface MediaFile {
  data: Uint8Array;
  mediaType: string;
}

export interface GeneratedMedia {
  data: Uint8Array;
  mediaType: string;
  /** The prompt the provider says it actually used, when it rewrote it. */
  revisedPrompt?: string;
  costUsd?: number;
}

export interface MediaCallContext {
  logger: Logger;
  abortSignal?: AbortSignal;
  headers?: Record<string, string>;
}

export interface ImageRequest {
  modelId: string;
  prompt: string;
  /** Source images: an edit. Absent: a generation. */
  images?: readonly MediaFile[];
  mask?: MediaFile;
  size?: `${number}x${number}`;
  aspectRatio?: `${number}:${number}`;
  /** Passed as providerOptions[provider] (already in the provider's own option names). */
  providerOptions?: Record<string, string | number | boolean>;
}

export interface MediaModels {
  readonly provider: MediaProviderId;
  image(request: ImageRequest, context: MediaCallContext): Promise<GeneratedMedia>;
  transcribe(request: { modelId: string; audio: MediaFile }, context: MediaCallContext): Promise<{ text: string; language?: string; durationSeconds?: number }>;
  video(
    request: {
      modelId: string;
      prompt: string;
      image?: MediaFile;
      duration?: number;
      aspectRatio?: `${number}:${number}`;
      providerOptions?: Record<string, string | number | boolean>;
      poll: { intervalMs: number; timeoutMs: number };
      maxBytes: number;
    },
    context: MediaCallContext,
  ): Promise<GeneratedMedia>;
}

/** The media models of one provider, built on first use (so describing the tools needs no key). */
export function mediaModels(endpoint: MediaEndpoint): MediaModels {
  let client: Promise<MediaClient> | undefined;
  const get = () => (client ??= mediaClient(endpoint).catch((error: unknown) => ((client = undefined), Promise.reject(error))));
  const provider = endpoint.provider;
  const label = PROVIDERS[provider]!.label;

  /** Times the vendor call and logs the one `media` line; a failure becomes a media-failed AcxError quoting the provider. */
  async function timed<T>(kind: MediaKind, modelId: string, context: MediaCallContext, call: () => Promise<T>, cost: (value: T) => number | undefined): Promise<T> {
    const started = performance.now();
    try {
      const value = await call();
      const costUsd = cost(value);
      context.logger.info('media', { provider, kind, model: modelId, duration: logSeconds(performance.now() - started), ...(costUsd !== undefined ? { cost: costUsd } : {}) });
      return value;
    } catch (error) {
      context.logger.warn('media', { provider, kind, model: modelId, duration: logSeconds(performance.now() - started), outcome: 'error', error: errorMessage(error) });
      if (AcxError.isInstance(error)) throw error;
      throw new AcxError('media-failed', `${label} ${kind} with ${modelId} failed: ${providerMessage(error)}`, { hint: MEDIA_ERROR_HINT });
    }
  }

  return {
    provider,
    async image(request, context) {
      const [{ image }, { generateImage }] = await Promise.all([get(), import('./ai-calls.ts')]);
      const kind: MediaKind = request.images && request.images.length > 0 ? 'image.edit' : 'image.generate';
      const result = await timed(
        kind,
        request.modelId,
        context,
        () =>
          generateImage({
            model: image(request.modelId),
            prompt: request.images && request.images.length > 0 ? { text: request.prompt, images: request.images.map((file) => file.data), ...(request.mask ? { mask: request.mask.data } : {}) } : request.prompt,
            n: 1,
            ...(request.size ? { size: request.size } : {}),
            ...(request.aspectRatio ? { aspectRatio: request.aspectRatio } : {}),
            ...(request.providerOptions ? { providerOptions: { [provider]: request.providerOptions } } : {}),
            maxRetries: 0,
            ...(context.abortSignal ? { abortSignal: context.abortSignal } : {}),
            ...(context.headers ? { headers: context.headers } : {}),
          }),
        (value) => imageCostUsd(value.calls),
      );
      const revisedPrompt = (result.providerMetadata?.[provider] as { images?: Array<{ revisedPrompt?: string }> } | undefined)?.images?.[0]?.revisedPrompt;
      const costUsd = imageCostUsd(result.calls);
      return {
        data: result.image.uint8Array,
        mediaType: result.image.mediaType,
        ...(revisedPrompt ? { revisedPrompt } : {}),
        ...(costUsd !== undefined ? { costUsd } : {}),
      };
    },
    async transcribe(request, context) {
      const [{ transcription }, { transcribe }] = await Promise.all([get(), import('./ai-calls.ts')]);
      const result = await timed(
        'audio.transcribe',
        request.modelId,
        context,
        () =>
          transcribe({
            model: transcription(request.modelId),
            audio: request.audio.data,
            maxRetries: 0,
            ...(context.abortSignal ? { abortSignal: context.abortSignal } : {}),
          }),
        () => undefined,
      );
      return {
        text: result.text,
        ...(result.language ? { language: result.language } : {}),
        ...(result.durationInSeconds !== undefined ? { durationSeconds: result.durationInSeconds } : {}),
      };
    },
    async video(request, context) {
      const [{ video, baseURL }, { createDownload, experimental_generateVideo }] = await Promise.all([get(), import('./ai-calls.ts')]);
      const untrusted = createDownload({ maxBytes: request.maxBytes });
      const result = await timed(
        'video.generate',
        request.modelId,
        context,
        () =>
          experimental_generateVideo({
            model: video(request.modelId),
            prompt: request.image ? { image: request.image.data, text: request.prompt } : request.prompt,
            n: 1,
            ...(request.duration !== undefined ? { duration: request.duration } : {}),
            ...(request.aspectRatio ? { aspectRatio: request.aspectRatio } : {}),
            ...(request.providerOptions ? { providerOptions: { [provider]: request.providerOptions } } : {}),
            poll: request.poll,
            // The finished clip is a URL: one on the provider's own (configured) origin is fetched
            // as the provider's; any other goes through the SDK's guarded download.
            download: ({ url, abortSignal }) => (baseURL && url.origin === new URL(baseURL).origin ? trustedDownload(url, request.maxBytes, abortSignal) : untrusted({ url, ...(abortSignal ? { abortSignal } : {}) })),
            ...(context.abortSignal ? { abortSignal: context.abortSignal } : {}),
            ...(context.headers ? { headers: context.headers } : {}),
          }).catch((error: unknown) => {
            // The SDK's own words ("Video generation timed out after 600000ms") name no provider and no remedy.
            if (/timed out after \d+ms/.test(errorMessage(error))) {
              throw new AcxError(
                'media-failed',
                `${label} had not finished the ${request.modelId} clip after ${request.poll.timeoutMs / 1000} s of polling; acx stopped waiting. The job may still finish (and be billed) at ${label}.`,
                { hint: 'Ask for a shorter clip or a lower resolution, or try again later.' },
              );
            }
            throw error;
          }),
        (value) => callCostUsd(value.providerMetadata),
      );
      const costUsd = callCostUsd(result.providerMetadata);
      return { data: result.video.uint8Array, mediaType: result.video.mediaType || 'video/mp4', ...(costUsd !== undefined ? { costUsd } : {}) };
    },
  };
}

/** The stated cost of an image generation: per call, since the SDK's merged metadata keeps only the images. */
function imageCostUsd(calls: ReadonlyArray<{ providerMetadata?: Record<string, unknown> | undefined }>): number | undefined {
  const costs = calls.map((call) => callCostUsd(call.providerMetadata)).filter((cost): cost is number => cost !== undefined);
  return costs.length > 0 ? costs.reduce((sum, cost) => sum + cost, 0) : undefined;
}

async function trustedDownload(url: URL, maxBytes: number, abortSignal: AbortSignal | undefined): Promise<{ data: Uint8Array; mediaType: string | undefined }> {
  const response = await fetch(url, { ...(abortSignal ? { signal: abortSignal } : {}) });
  if (!response.ok) throw new Error(`downloading the finished video failed: HTTP ${response.status}`);
  const data = new Uint8Array(await response.arrayBuffer());
  if (data.length > maxBytes) throw new Error(`the finished video is ${data.length} bytes, more than the ${maxBytes} allowed`);
  return { data, mediaType: response.headers.get('content-type') ?? undefined };
}

/** The provider's own words: an API error's message (the SDK extracts it from the error body), else the error's message. */
function providerMessage(error: unknown): string {
  const message = errorMessage(error);
  return message.length > 2000 ? `${message.slice(0, 2000)}…` : message;
}
