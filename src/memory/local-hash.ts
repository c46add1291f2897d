import { createHash } from 'node:crypto';
import type { Embedder } from '../model/embedding.ts';

/**
 * `acx.embed/local-hash-128/1`, the cartridge spec's reference embedding (SPEC §7.7): lower-case,
 * tokens are runs of [a-z0-9]; each token adds ±1 at dimension uint32be(sha1(token)[0..4]) % 128,
 * the sign from bit 0 of byte 4; then L2-normalise. No model and no download: byte-reproducible
 * in any language, so it is the engine a key-less install embeds with.
 *
 * What it is not: semantic. Two texts are near when they share words (a signed bag of words),
 * not when they mean the same thing in other words.
 */
export const LOCAL_HASH_ENGINE = 'local-hash-128';
export const LOCAL_HASH_DIM = 128;

export function localHashEmbedding(text: string): number[] {
  const vector = new Array<number>(LOCAL_HASH_DIM).fill(0);
  for (const token of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    const digest = createHash('sha1').update(token).digest();
    vector[digest.readUInt32BE(0) % LOCAL_HASH_DIM]! += digest[4]! & 1 ? 1 : -1;
  }
  const norm = Math.hypot(...vector);
  return norm > 0 ? vector.map((value) => value / norm) : vector;
}

export function createLocalHashEmbedder(): Embedder {
  return {
    id: LOCAL_HASH_ENGINE,
    embed: async (values) => values.map(localHashEmbedding),
  };
}
