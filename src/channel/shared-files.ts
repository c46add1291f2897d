import { MediaInputError, type SharedFiles } from '../tools/builtin/media-files.ts';
import type { BaseCradleClient } from './client.ts';
import { BaseCradleError } from './errors.ts';
import { plainReason } from './tools/kit.ts';

/**
 * A timeline agent's shared files for the media tools: an asset read by its uuid through the
 * agent's own client (so only what the agent may view), refused over the size limit before a byte
 * is downloaded. A refusal of the platform reads as its plain reason.
 */
export function platformSharedFiles(client: BaseCradleClient): SharedFiles {
  return {
    async read(uuid, { maxBytes, what, signal }) {
      try {
        const asset = await client.assets.get(uuid, { signal });
        const file = asset.content.file;
        if (!file) throw new MediaInputError(`Asset ${uuid} has no file.`);
        if (file.byte_size > maxBytes) throw new MediaInputError(`Asset ${uuid} is ${file.byte_size} bytes; ${what} may be at most ${maxBytes} bytes.`, 'Use a smaller file.');
        const { bytes } = await client.assets.download(asset, { signal });
        return { data: bytes, filename: file.filename };
      } catch (error) {
        if (BaseCradleError.isInstance(error)) throw new MediaInputError(`Asset ${uuid}: ${plainReason(error)}`);
        throw error;
      }
    },
  };
}
