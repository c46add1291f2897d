import { z } from 'zod';
import type { Tool } from '../tool.ts';
import { readWorkspaceMedia } from './media-files.ts';
import { type MediaToolOptions, mediaRoots } from './media-output.ts';

/**
 * `view`: shows the model a workspace image (a chart it drew, a screenshot, a generated image).
 * The image goes out as an image part, so the engine's vision gate passes it on, or describes it
 * in words to a model without vision; the journal keeps only a placeholder, so a viewed image is
 * seen once and never re-sent. (A timeline agent views a peer's shared file with assets_view.)
 */
export const MAX_VIEW_IMAGE_BYTES = 5 * 1024 * 1024;

export const viewSchema = z.strictObject({
  path: z.string().max(4096).describe('Workspace path of an image (png, jpeg, webp or gif).'),
});

export function createViewTool(options: MediaToolOptions): Tool<z.infer<typeof viewSchema>> {
  const roots = mediaRoots(options);
  return {
    name: 'view',
    description: 'Look at an image file in the workspace: it is shown to you once.',
    inputSchema: viewSchema,
    capabilityScopes: ['fs.read'],
    kind: 'read',
    effect: 'read-only',
    execute(input) {
      const image = readWorkspaceMedia(roots, input.path, { maxBytes: MAX_VIEW_IMAGE_BYTES, accept: (type) => type.startsWith('image/'), what: 'an image to view' });
      return {
        content: [
          { type: 'text', text: `${image.path} (${image.mediaType}, ${image.data.length} bytes):` },
          { type: 'image', data: Buffer.from(image.data).toString('base64'), mediaType: image.mediaType },
        ],
      };
    },
  };
}
