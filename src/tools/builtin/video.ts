import { z } from 'zod';
import type { MediaModels } from '../../model/media.ts';
import type { PolicyTool } from '../policy.ts';
import { readWorkspaceMedia } from './media-files.ts';
import { GENERATION, type MediaToolOptions, mediaRoots, pathField, saveGenerated } from './media-output.ts';
import { lazySchema } from '../../core/lazy-schema.ts';

/**
 * `grok_generate_video`: xAI's video models through the AI SDK's `experimental_generateVideo`.
 * The endpoint is asynchronous: the SDK submits, polls the request until it is done, and the
 * finished clip is downloaded and saved in the workspace. A failure, an expired request or a
 * clip that is not done in time comes back with xAI's own message (or the time waited). The
 * submit carries the call's idempotency key, so the provider can tell a repeat from a new job.
 */
export interface VideoToolOptions extends MediaToolOptions {
  media: MediaModels;
  /** Default grok-imagine-video. */
  modelId?: string;
  /** How long to wait for a clip (default 10 minutes) and how often to ask (default 5 s). */
  timeoutMs?: number;
  pollIntervalMs?: number;
  /** The largest clip accepted (default 200 MiB). */
  maxBytes?: number;
}

export const grokGenerateVideoSchema = lazySchema(() => z.strictObject({
  prompt: z.string().trim().min(1).max(32_000).describe('What happens in the clip, in words.'),
  image: z.string().max(4096).optional().describe('Workspace path of an image to animate (image to video); without it, text to video.'),
  duration: z.number().int().min(1).max(15).optional().describe('Length in seconds.'),
  aspect_ratio: z.string().regex(/^\d{1,2}:\d{1,2}$/, 'must be W:H, e.g. 16:9').optional().describe('W:H, e.g. 16:9, 9:16, 1:1.'),
  resolution: z.enum(['480p', '720p', '1080p']).optional(),
  path: z.string().max(4096).optional().describe(pathField),
}));

export function createGrokVideoTool(options: VideoToolOptions): PolicyTool {
  const roots = mediaRoots(options);
  const modelId = options.modelId ?? 'grok-imagine-video';
  const now = options.now ?? (() => new Date());
  const timeoutMs = options.timeoutMs ?? 10 * 60_000;
  return {
    name: 'grok_generate_video',
    description:
      `Make a short video clip with xAI's ${modelId} from a prompt (and optionally a workspace image to animate) and save it as an mp4 in the workspace. ` +
      `It takes a while (the tool waits up to ${Math.round(timeoutMs / 1000)} s) and each call is billed.`,
    inputSchema: grokGenerateVideoSchema(),
    ...GENERATION,
    async execute(input: z.infer<ReturnType<typeof grokGenerateVideoSchema>>, context) {
      const image = input.image
        ? readWorkspaceMedia(roots, input.image, { maxBytes: 25 * 1024 * 1024, accept: (type) => /^image\/(png|jpeg|webp)$/.test(type), what: 'the start image' })
        : undefined;
      const video = await options.media.video(
        {
          modelId,
          prompt: input.prompt,
          ...(image ? { image } : {}),
          ...(input.duration !== undefined ? { duration: input.duration } : {}),
          ...(input.aspect_ratio ? { aspectRatio: input.aspect_ratio as `${number}:${number}` } : {}),
          ...(input.resolution ? { providerOptions: { resolution: input.resolution } } : {}),
          poll: { intervalMs: options.pollIntervalMs ?? 5000, timeoutMs },
          maxBytes: options.maxBytes ?? 200 * 1024 * 1024,
        },
        { logger: context.logger, abortSignal: context.abortSignal, headers: { 'idempotency-key': context.idempotencyKey } },
      );
      return saveGenerated(roots, video, { path: input.path, kind: 'video', label: `Generated a video with ${modelId}`, now: now() }, context);
    },
  };
}
