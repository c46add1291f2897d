import type { BaseCradleClient } from './client.ts';
import type { Asset } from './types.ts';

// What of an asset a model can be shown as an image. Kept apart from the assets tools (and their
// zod schemas): a wake that only shows a peer's image loads this, not the tools.

/** The largest file assets_view (and a wake's asset turn) downloads to show. */
export const MAX_VIEW_BYTES = 5 * 1024 * 1024;
export const IMAGE_TYPES = /^image\/(png|jpeg|gif|webp)$/;

export const mediaTypeOf = (contentType: string) => contentType.split(';')[0]!.trim().toLowerCase();

/**
 * An asset's image, ready to show a model: a PNG, JPEG, GIF or WebP of at most MAX_VIEW_BYTES,
 * downloaded; undefined for anything else. The one rule assets_view and a wake's asset turn share.
 */
export async function viewableImage(client: BaseCradleClient, asset: Asset, signal?: AbortSignal): Promise<{ data: string; mediaType: string } | undefined> {
  const file = asset.content.file;
  if (!file || file.byte_size > MAX_VIEW_BYTES) return undefined;
  const type = mediaTypeOf(file.content_type);
  if (!IMAGE_TYPES.test(type)) return undefined;
  const { bytes } = await client.assets.download(asset, signal ? { signal } : {});
  return { data: Buffer.from(bytes).toString('base64'), mediaType: type };
}
