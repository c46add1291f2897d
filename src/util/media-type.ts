/**
 * What a file is, read from its bytes: the one place acx names a file's type by content, for the
 * media tools (a source image, an audio clip) and for the platform's assets. A name or a declared
 * type is a claim; these signatures are what the bytes say.
 */

/** The type a file's first bytes announce; undefined when none of the known signatures matches. */
export function sniffMediaType(bytes: Uint8Array): string | undefined {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 16));
  const ascii = (start: number, end: number) => b.subarray(start, end).toString('latin1');
  if (b.length >= 8 && b[0] === 0x89 && ascii(1, 4) === 'PNG') return 'image/png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  if (ascii(0, 6) === 'GIF87a' || ascii(0, 6) === 'GIF89a') return 'image/gif';
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'image/webp';
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WAVE') return 'audio/wav';
  if (ascii(0, 5) === '%PDF-') return 'application/pdf';
  if (ascii(0, 4) === 'fLaC') return 'audio/flac';
  if (ascii(0, 4) === 'OggS') return 'audio/ogg';
  if (ascii(0, 3) === 'ID3' || (b.length >= 2 && b[0] === 0xff && (b[1]! & 0xe0) === 0xe0)) return 'audio/mpeg';
  if (b.length >= 4 && b[0] === 0x1a && b[1] === 0x45 && b[2] === 0xdf && b[3] === 0xa3) return 'audio/webm';
  if (ascii(4, 8) === 'ftyp') {
    const brand = ascii(8, 12);
    if (brand === 'avif' || brand === 'avis') return 'image/avif';
    return brand.startsWith('M4A') ? 'audio/mp4' : 'video/mp4';
  }
  if (ascii(0, 4) === 'PK\u0003\u0004') return 'application/zip';
  if (b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b) return 'application/gzip';
  return undefined;
}

/** How much of a file looksLikeText reads. */
const TEXT_PROBE_BYTES = 8192;

/**
 * Whether a file reads as text: its first bytes are UTF-8 (a sequence cut by the end of the probe
 * is allowed) with no NUL and no control character a text file does not hold (tab, line breaks,
 * form feed and escape are allowed).
 */
export function looksLikeText(bytes: Uint8Array): boolean {
  const probe = bytes.subarray(0, TEXT_PROBE_BYTES);
  for (const byte of probe) {
    if (byte < 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0d && byte !== 0x0c && byte !== 0x1b) return false;
    if (byte === 0x7f) return false;
  }
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(probe, { stream: probe.length < bytes.length });
    return true;
  } catch {
    return false;
  }
}
