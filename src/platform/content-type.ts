import { extname } from 'node:path';
import { looksLikeText, sniffMediaType } from '../util/media-type.ts';

/**
 * An asset's content type comes from its bytes, not from what the uploader claimed: a PNG sent
 * as a generic `file` is `image/png`, and an HTML page sent as `image/png` is not an image. A
 * claim (the part's type, else the file name's extension) only names a file the bytes cannot:
 * text keeps a claimed text type (Markdown, CSV, JSON, HTML…), else it is `text/plain`; other
 * bytes keep a claim only when it would be downloaded anyway, else they are
 * `application/octet-stream`.
 */

/**
 * The types a browser is let to show (served `inline`); every other file is served as an
 * attachment. All of them are served with `nosniff` and a sandboxing CSP besides.
 */
export const INLINE_TYPES: ReadonlySet<string> = new Set([
  'image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/avif',
  'audio/mpeg', 'audio/wav', 'audio/ogg', 'audio/flac', 'audio/mp4', 'audio/webm',
  'video/mp4', 'video/webm',
  'application/pdf', 'text/plain',
]);

const BY_EXTENSION: Record<string, string> = {
  '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.gif': 'image/gif', '.webp': 'image/webp', '.svg': 'image/svg+xml',
  '.txt': 'text/plain', '.md': 'text/markdown', '.json': 'application/json', '.csv': 'text/csv', '.pdf': 'application/pdf',
  '.mp3': 'audio/mpeg', '.wav': 'audio/wav', '.mp4': 'video/mp4', '.html': 'text/html', '.htm': 'text/html', '.xml': 'application/xml',
  '.yaml': 'application/yaml', '.yml': 'application/yaml', '.js': 'text/javascript', '.css': 'text/css', '.docx': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
};

const TEXTUAL = /^(text\/[a-z0-9.+-]+|application\/([a-z0-9.-]+\+)?(json|xml|yaml)|application\/javascript|image\/svg\+xml)$/;

export function assetContentType(bytes: Uint8Array, declared: string, filename: string): string {
  const sniffed = sniffMediaType(bytes);
  const claimed = claimedType(declared) ?? BY_EXTENSION[extname(filename).toLowerCase()];
  // A zip is also a container of named formats (docx, xlsx, epub): a claim of one is kept, as a download.
  if (sniffed === 'application/zip' && claimed && !INLINE_TYPES.has(claimed) && !TEXTUAL.test(claimed)) return claimed;
  if (sniffed) return sniffed;
  if (looksLikeText(bytes)) return claimed && TEXTUAL.test(claimed) ? claimed : 'text/plain';
  return claimed && !INLINE_TYPES.has(claimed) && !TEXTUAL.test(claimed) ? claimed : 'application/octet-stream';
}

function claimedType(declared: string): string | undefined {
  const type = declared.split(';')[0]?.trim().toLowerCase();
  return type && /^[a-z0-9.+-]+\/[a-z0-9.+-]+$/.test(type) && type !== 'application/octet-stream' ? type : undefined;
}
