import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { AcxError } from '../core/errors.ts';
import { Cartridge } from './container.ts';
import { computeRomManifest } from './manifest.ts';
import { digestsEqual } from './verify.ts';

export interface StripResult {
  out: string;
  /** The hash the signature covers (signatures.manifest_hash). */
  signedHash: string | null;
  /** The hash recomputed from the stripped file. */
  strippedHash: string;
  equal: boolean;
  removed: { memory: number; files: number; objects: number; vectors: number };
}

/**
 * SPEC §3.4 strip-to-ROM: a copy with every SAVE row removed and VACUUMed. The output is only
 * written when its recomputed manifest hash equals the signed one — that equality is the proof.
 */
export function stripCartridge(input: string, output: string, options: { overwrite?: boolean } = {}): StripResult {
  const src = resolve(input);
  const out = resolve(output);
  if (src === out) throw new AcxError('strip-output', 'strip writes a new file; -o must differ from the input');
  if (existsSync(out) && !options.overwrite) throw new AcxError('strip-output', `${out} already exists`, { hint: 'pass --force or choose another path' });
  // Identity and schema checks before copying anything (the copy is written to).
  const probe = Cartridge.open(src, { readonly: true });
  try {
    probe.assertWritableSchema();
  } finally {
    probe.close();
  }
  const tmp = join(dirname(out), `.${basename(out)}.${randomBytes(6).toString('hex')}.tmp`);
  copyFileSync(src, tmp);
  let cart: Cartridge | null = null;
  try {
    cart = Cartridge.open(tmp, { readonly: false });
    const c = cart;
    const removed = c.tx(() => {
      const memory = Number(c.db.prepare("DELETE FROM memory WHERE zone='save'").run().changes);
      const files = Number(c.db.prepare("DELETE FROM sqlar WHERE name GLOB 'save/*' OR name NOT GLOB 'rom/*'").run().changes);
      const vectors = c.hasTable('vectors') ? Number(c.db.prepare("DELETE FROM vectors WHERE zone='save'").run().changes) : 0;
      const objects = Number(c.db.prepare("DELETE FROM objects WHERE zone='save'").run().changes);
      c.deleteMeta('acx.save_codebase_fingerprint');
      return { memory, files, objects, vectors };
    });
    c.setSavePresent(false);
    c.db.exec('VACUUM');
    const strippedHash = computeRomManifest(c).manifestHash;
    const sig = c.db.prepare("SELECT manifest_hash FROM signatures WHERE target='rom-manifest' ORDER BY created_at DESC").get() as
      | { manifest_hash: string }
      | undefined;
    const signedHash = sig?.manifest_hash ?? c.getMeta('acx.rom_manifest_hash');
    c.close();
    cart = null;
    const equal = signedHash != null && digestsEqual(signedHash, strippedHash);
    if (!equal) {
      rmSync(tmp, { force: true });
      throw new AcxError('strip-mismatch', `stripped ROM hashes to ${strippedHash}, but the signature covers ${signedHash ?? '(nothing: unsigned)'}`, {
        hint: 'the ROM zone was modified after signing; run `acx verify` for details',
      });
    }
    renameSync(tmp, out);
    return { out, signedHash, strippedHash, equal, removed };
  } catch (error) {
    cart?.close();
    rmSync(tmp, { force: true });
    throw error;
  }
}
