import { z } from 'zod';
import type { MediaFile, MediaModels } from '../../model/media.ts';
import type { PolicyTool } from '../policy.ts';
import type { WorkspaceRoots } from '../sandbox/roots.ts';
import { MediaInputError, readMediaSource, type SharedFiles, SOURCE_HINT } from './media-files.ts';
import { GENERATION, type MediaToolOptions, mediaRoots, pathField, saveGenerated } from './media-output.ts';
import { lazySchema } from '../../core/lazy-schema.ts';

/**
 * The image tools, one pair per provider, through the AI SDK's `generateImage`:
 * - `generate_image` / `edit_image` on OpenAI's image models: size, quality, background, output
 *   format and compression; an edit sends the source images' bytes (multipart) and an optional
 *   mask whose transparent pixels mark what to change.
 * - `grok_generate_image` / `grok_edit_image` on xAI's. The documented asymmetries: xAI takes
 *   JSON, each source as a base64 data URI (one rides `image`, a composite of up to 3 rides
 *   `images`: the provider does that), it edits by the prompt alone (no mask), and it sizes by
 *   aspect ratio and resolution rather than pixels. Both pairs make one image per call.
 * Sources and masks are workspace files (confined paths) or, on a platform, assets by uuid;
 * results are written as new files.
 */
export interface ImageToolOptions extends MediaToolOptions {
  media: MediaModels;
  /** The image model (default gpt-image-2 on OpenAI, grok-imagine-image on xAI). */
  modelId?: string;
}

const MAX_SOURCE_BYTES = 25 * 1024 * 1024;
const isImage = (type: string) => /^image\/(png|jpeg|webp|gif)$/.test(type);

const prompt = lazySchema(() => z.string().trim().min(1).max(32_000).describe('What to draw (or, for an edit, what to change), in words.'));
// The option fields, built with the schema that spreads them (each schema is built once).
const openaiOptions = () => ({
  size: z
    .string()
    .regex(/^(auto|\d{2,4}x\d{2,4})$/, 'must be "auto" or WIDTHxHEIGHT, e.g. 1024x1024')
    .optional()
    .describe('Pixels, WIDTHxHEIGHT: 1024x1024, 1536x1024 (landscape), 1024x1536 (portrait), or auto (default).'),
  quality: z.enum(['low', 'medium', 'high', 'auto']).optional().describe('Default auto.'),
  background: z.enum(['transparent', 'opaque', 'auto']).optional().describe('transparent needs png or webp (and a model that has it); default auto.'),
  output_format: z.enum(['png', 'jpeg', 'webp']).optional().describe('Default png.'),
  output_compression: z.number().int().min(0).max(100).optional().describe('0-100, for jpeg and webp only.'),
  path: z.string().max(4096).optional().describe(pathField),
});
export const generateImageSchema = lazySchema(() => z.strictObject({ prompt: prompt(), ...openaiOptions() }));
export const editImageSchema = lazySchema(() => z.strictObject({
  prompt: prompt(),
  images: z.array(z.string().max(4096)).min(1).max(16).describe(`The source images (png, jpeg or webp), each ${SOURCE_HINT}; the first one is edited.`),
  mask: z.string().max(4096).optional().describe(`A PNG the size of the first image (${SOURCE_HINT}): its fully transparent pixels mark where to edit.`),
  ...openaiOptions(),
}));

const xaiOptions = () => ({
  aspect_ratio: z
    .string()
    .regex(/^\d{1,2}:\d{1,2}$/, 'must be W:H, e.g. 16:9')
    .optional()
    .describe('W:H, e.g. 1:1, 16:9, 9:16 (xAI sizes by aspect ratio, not pixels).'),
  resolution: z.enum(['1k', '2k']).optional(),
  path: z.string().max(4096).optional().describe(pathField),
});
export const grokGenerateImageSchema = lazySchema(() => z.strictObject({ prompt: prompt(), ...xaiOptions() }));
export const grokEditImageSchema = lazySchema(() => z.strictObject({
  prompt: prompt(),
  images: z.array(z.string().max(4096)).min(1).max(3).describe(`1 to 3 source images, each ${SOURCE_HINT}; 2 or 3 are composited. xAI edits by your words only: there is no mask.`),
  ...xaiOptions(),
}));

type OpenAIInput = z.infer<ReturnType<typeof editImageSchema>>;

function readSources(roots: WorkspaceRoots, shared: SharedFiles | undefined, sources: readonly string[], signal: AbortSignal): Promise<MediaFile[]> {
  return Promise.all(sources.map((source) => readMediaSource(roots, shared, source, { maxBytes: MAX_SOURCE_BYTES, accept: isImage, what: 'a source image', signal })));
}

/** OpenAI's own option names, checked where OpenAI would refuse the combination anyway. */
function openaiProviderOptions(input: Omit<OpenAIInput, 'images' | 'prompt'>): Record<string, string | number> {
  const format = input.output_format ?? 'png';
  if (input.output_compression !== undefined && format === 'png') {
    throw new MediaInputError('output_compression applies to jpeg and webp only.', 'Set output_format to jpeg or webp, or leave output_compression out.');
  }
  if (input.background === 'transparent' && format === 'jpeg') {
    throw new MediaInputError('A transparent background needs png or webp; jpeg has no transparency.', 'Set output_format to png or webp.');
  }
  return {
    ...(input.quality ? { quality: input.quality } : {}),
    ...(input.background ? { background: input.background } : {}),
    ...(input.output_format ? { outputFormat: input.output_format } : {}),
    ...(input.output_compression !== undefined ? { outputCompression: input.output_compression } : {}),
  };
}

const pixelSize = (size: string | undefined) => (size && size !== 'auto' ? (size as `${number}x${number}`) : undefined);

export function createOpenAIImageTools(options: ImageToolOptions): PolicyTool[] {
  const roots = mediaRoots(options);
  const modelId = options.modelId ?? 'gpt-image-2';
  const now = options.now ?? (() => new Date());
  const generate: PolicyTool = {
    name: 'generate_image',
    description: `Draw a new image from a text prompt with OpenAI's ${modelId} and save it in the workspace. Each call is billed and makes one image; you see the result.`,
    inputSchema: generateImageSchema(),
    ...GENERATION,
    async execute(input: z.infer<ReturnType<typeof generateImageSchema>>, context) {
      const providerOptions = openaiProviderOptions(input);
      const size = pixelSize(input.size);
      const image = await options.media.image(
        { modelId, prompt: input.prompt, ...(size ? { size } : {}), providerOptions },
        { logger: context.logger, abortSignal: context.abortSignal },
      );
      return saveGenerated(roots, image, { path: input.path, kind: 'image', label: `Generated an image with ${modelId}`, now: now() }, context);
    },
  };
  const edit: PolicyTool = {
    name: 'edit_image',
    description: `Make a new image from existing images (workspace files or assets shared on the timeline) and a prompt with OpenAI's ${modelId}: recolor, restyle, combine; a mask limits the edit to its transparent area. Saves the result as a new file; billed per call.`,
    inputSchema: editImageSchema(),
    ...GENERATION,
    async execute(input: OpenAIInput, context) {
      const providerOptions = openaiProviderOptions(input);
      const images = await readSources(roots, options.shared, input.images, context.abortSignal);
      const mask = input.mask
        ? await readMediaSource(roots, options.shared, input.mask, { maxBytes: MAX_SOURCE_BYTES, accept: (type) => type === 'image/png', what: 'a mask (a PNG with transparency)', signal: context.abortSignal })
        : undefined;
      const size = pixelSize(input.size);
      const image = await options.media.image(
        { modelId, prompt: input.prompt, images, ...(mask ? { mask } : {}), ...(size ? { size } : {}), providerOptions },
        { logger: context.logger, abortSignal: context.abortSignal },
      );
      return saveGenerated(roots, image, { path: input.path, kind: 'edit', label: `Edited ${input.images.join(', ')} with ${modelId}`, now: now() }, context);
    },
  };
  return [generate, edit];
}

export function createGrokImageTools(options: ImageToolOptions): PolicyTool[] {
  const roots = mediaRoots(options);
  const modelId = options.modelId ?? 'grok-imagine-image';
  const now = options.now ?? (() => new Date());
  const request = (input: z.infer<ReturnType<typeof grokGenerateImageSchema>>) => ({
    modelId,
    prompt: input.prompt,
    ...(input.aspect_ratio ? { aspectRatio: input.aspect_ratio as `${number}:${number}` } : {}),
    ...(input.resolution ? { providerOptions: { resolution: input.resolution } } : {}),
  });
  const generate: PolicyTool = {
    name: 'grok_generate_image',
    description: `Draw a new image from a text prompt with xAI's ${modelId} and save it in the workspace. Each call is billed and makes one image; you see the result.`,
    inputSchema: grokGenerateImageSchema(),
    ...GENERATION,
    async execute(input: z.infer<ReturnType<typeof grokGenerateImageSchema>>, context) {
      const image = await options.media.image(request(input), { logger: context.logger, abortSignal: context.abortSignal });
      return saveGenerated(roots, image, { path: input.path, kind: 'image', label: `Generated an image with ${modelId}`, now: now() }, context);
    },
  };
  const edit: PolicyTool = {
    name: 'grok_edit_image',
    description: `Make a new image from 1 to 3 images (workspace files or assets shared on the timeline) and a prompt with xAI's ${modelId} (it edits by your words: no mask). Saves the result as a new file; billed per call.`,
    inputSchema: grokEditImageSchema(),
    ...GENERATION,
    async execute(input: z.infer<ReturnType<typeof grokEditImageSchema>>, context) {
      const images = await readSources(roots, options.shared, input.images, context.abortSignal);
      const image = await options.media.image({ ...request(input), images }, { logger: context.logger, abortSignal: context.abortSignal });
      return saveGenerated(roots, image, { path: input.path, kind: 'edit', label: `Edited ${input.images.join(', ')} with ${modelId}`, now: now() }, context);
    },
  };
  return [generate, edit];
}
