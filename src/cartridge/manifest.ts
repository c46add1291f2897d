import { canonicalJson, sha256Hex, sha256Oid } from '../util/jcs.ts';
import { AcxError, errorMessage } from '../util/errors.ts';
import type { Cartridge, ObjectRow } from './container.ts';

export interface ManifestEntry {
  sourceRef: string;
  oid: string;
  canon: string;
  sz: number;
}

export interface RomManifest {
  entries: ManifestEntry[];
  /** "sha256:" + hex */
  manifestHash: string;
  manifestHashHex: string;
  /** Objects whose live source is missing or hashes differently from the recorded oid. */
  mismatches: Array<{ sourceRef: string; reason: string }>;
}

/** Meta value content address: JCS of {key, value} (what the reference writers record). */
export function metaOid(key: string, value: string): string {
  return sha256Oid(canonicalJson({ key, value }));
}

/**
 * Recomputes an object's oid from the live row it points at (SPEC §3.3). Returns null when the
 * source is gone. Throws AcxError when the source exists but cannot be read (damaged entry).
 */
export function liveOid(cart: Cartridge, obj: Pick<ObjectRow, 'source_ref'>): string | null {
  const ref = obj.source_ref;
  if (ref.startsWith('memory:')) {
    const row = cart.stmt('SELECT payload FROM memory WHERE id=?').get(ref.slice(7)) as { payload: string | null } | undefined;
    return row?.payload == null ? null : sha256Oid(Buffer.from(String(row.payload), 'utf8'));
  }
  if (ref.startsWith('capability:')) {
    if (!cart.hasTable('capabilities')) return null;
    const row = cart.stmt('SELECT json FROM capabilities WHERE id=?').get(ref.slice(11)) as { json: string | null } | undefined;
    return row?.json == null ? null : sha256Oid(Buffer.from(String(row.json), 'utf8'));
  }
  if (ref.startsWith('cartridge:')) {
    const key = ref.slice(10);
    const value = cart.getMeta(key);
    return value == null ? null : metaOid(key, value);
  }
  const bytes = cart.getFile(ref);
  return bytes == null ? null : sha256Oid(bytes);
}

/** Code-point order (not UTF-16 order) as SPEC §3.3 requires. */
export function compareCodePoints(a: string, b: string): number {
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done) return y.done ? 0 : -1;
    if (y.done) return 1;
    const cx = x.value.codePointAt(0) ?? 0;
    const cy = y.value.codePointAt(0) ?? 0;
    if (cx !== cy) return cx - cy;
  }
}

/**
 * The ROM integrity manifest: every ROM object sorted by (kind, source_ref), each with its LIVE
 * oid, canonicalised with JCS and hashed. The stored oid column is only compared, never trusted.
 */
export function computeRomManifest(cart: Cartridge): RomManifest {
  const rows = cart
    .objects('rom')
    .slice()
    .sort((a, b) => compareCodePoints(a.kind, b.kind) || compareCodePoints(a.source_ref, b.source_ref));
  const mismatches: RomManifest['mismatches'] = [];
  const entries = rows.map((row) => {
    let computed: string | null;
    try {
      computed = liveOid(cart, row);
    } catch (error) {
      mismatches.push({ sourceRef: row.source_ref, reason: error instanceof AcxError ? error.message : errorMessage(error) });
      return { sourceRef: row.source_ref, oid: row.oid, canon: row.canon, sz: Number(row.sz) };
    }
    if (computed == null) mismatches.push({ sourceRef: row.source_ref, reason: 'source is missing' });
    else if (computed !== row.oid) mismatches.push({ sourceRef: row.source_ref, reason: 'content does not match its recorded digest' });
    return { sourceRef: row.source_ref, oid: computed ?? row.oid, canon: row.canon, sz: Number(row.sz) };
  });
  const manifestHashHex = sha256Hex(canonicalJson(entries));
  return { entries, manifestHash: `sha256:${manifestHashHex}`, manifestHashHex, mismatches };
}
