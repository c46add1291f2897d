import { canonicalJson, sha256Hex, sha256Oid } from '../util/jcs.ts';
import { AcxError, errorMessage } from '../core/errors.ts';
import { InflateBudget, type Cartridge, type ObjectRow } from './container.ts';

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

/** A row of the memory table as the verifier reads it. */
export interface MemoryRow {
  id: string;
  zone: string;
  codebase_fingerprint: string | null;
  payload: string | null;
}

/**
 * The rows one manifest computation reads, read once in one transaction and shared with the
 * verifier so that nothing is read or hashed twice. Duplicate or non-text keys (possible only in
 * a file whose schema was rebuilt without its primary keys) are reported, never silently merged.
 */
export interface RomSources {
  /** The ROM rows of the objects table, as stored (their oid column is only compared). */
  objects: ObjectRow[];
  /** The cartridge (meta) table, by key. */
  meta: Map<string, string | null>;
  /** The memory table, by id. */
  memory: Map<string, MemoryRow>;
  /** The capabilities table (id -> json), or null when the cartridge has none. */
  capabilities: Map<string, string | null> | null;
  /** Rows whose key is duplicated or not text (each one is a structural problem). */
  keyProblems: string[];
  /** sqlar name -> hex SHA-256 of its live uncompressed bytes, filled while recomputing. */
  fileDigests: Map<string, string>;
  /** What reading these sources may inflate in all (one verification, one budget). */
  inflateBudget: InflateBudget;
}

/** Reads the rows behind ROM objects (call inside `cart.read`). */
export function readRomSources(cart: Cartridge, tables: ReadonlySet<string> = cart.tableNames()): RomSources {
  const keyProblems: string[] = [];
  const byKey = <R>(rows: R[], key: (row: R) => unknown, what: string): Map<string, R> => {
    const map = new Map<string, R>();
    for (const row of rows) {
      const k = key(row);
      if (typeof k !== 'string') keyProblems.push(`${what} ${JSON.stringify(String(k).slice(0, 80))} is not text`);
      else if (map.has(k)) keyProblems.push(`${what} ${JSON.stringify(k.slice(0, 200))} appears more than once`);
      else map.set(k, row);
    }
    return map;
  };
  const metaRows = cart.stmt('SELECT key, value FROM cartridge').all() as Array<{ key: unknown; value: string | null }>;
  const meta = new Map([...byKey(metaRows, (r) => r.key, 'meta key')].map(([k, r]) => [k, r.value]));
  const memoryRows = cart.stmt('SELECT id, zone, codebase_fingerprint, payload FROM memory').all() as unknown as MemoryRow[];
  const memory = byKey(memoryRows, (r) => r.id, 'memory id');
  let capabilities: Map<string, string | null> | null = null;
  if (tables.has('capabilities')) {
    const rows = cart.stmt('SELECT id, json FROM capabilities').all() as Array<{ id: unknown; json: string | null }>;
    capabilities = new Map([...byKey(rows, (r) => r.id, 'capability id')].map(([k, r]) => [k, r.json]));
  }
  return { objects: cart.objects('rom'), meta, memory, capabilities, keyProblems, fileDigests: new Map(), inflateBudget: new InflateBudget() };
}

/**
 * Recomputes an object's oid from the live row it points at (SPEC §3.3). Returns null when the
 * source is gone. Throws AcxError when the source exists but cannot be read (damaged entry).
 * With `sources`, table rows come from there (same transaction) instead of one query each.
 */
export function liveOid(cart: Cartridge, obj: Pick<ObjectRow, 'source_ref'>, sources?: RomSources): string | null {
  const ref = obj.source_ref;
  if (ref.startsWith('memory:')) {
    const payload = sources
      ? sources.memory.get(ref.slice(7))?.payload
      : (cart.stmt('SELECT payload FROM memory WHERE id=?').get(ref.slice(7)) as { payload: string | null } | undefined)?.payload;
    return payload == null ? null : sha256Oid(String(payload));
  }
  if (ref.startsWith('capability:')) {
    let json: string | null | undefined;
    if (sources) json = sources.capabilities?.get(ref.slice(11));
    else if (cart.hasTable('capabilities')) {
      json = (cart.stmt('SELECT json FROM capabilities WHERE id=?').get(ref.slice(11)) as { json: string | null } | undefined)?.json;
    }
    return json == null ? null : sha256Oid(String(json));
  }
  if (ref.startsWith('cartridge:')) {
    const key = ref.slice(10);
    const value = sources ? sources.meta.get(key) : cart.getMeta(key);
    return value == null ? null : metaOid(key, value);
  }
  const bytes = cart.getFile(ref, sources?.inflateBudget);
  if (bytes == null) return null;
  const hex = sha256Hex(bytes);
  sources?.fileDigests.set(ref, hex);
  return `sha256:${hex}`;
}

/**
 * The size in bytes of the live source an object points at, which its `sz` column records
 * (uncompressed file bytes; UTF-8 bytes of a payload, value or capability JSON). Null when the
 * source is gone.
 */
export function liveSize(cart: Cartridge, obj: Pick<ObjectRow, 'source_ref'>, sources: RomSources): number | null {
  const ref = obj.source_ref;
  const text = (value: string | null | undefined) => (value == null ? null : Buffer.byteLength(String(value)));
  if (ref.startsWith('memory:')) return text(sources.memory.get(ref.slice(7))?.payload);
  if (ref.startsWith('capability:')) return text(sources.capabilities?.get(ref.slice(11)));
  if (ref.startsWith('cartridge:')) return text(sources.meta.get(ref.slice(10)));
  // sqlar's own sz is the uncompressed size; getFile refuses an entry that does not decode to it.
  const row = cart.stmt('SELECT sz FROM sqlar WHERE name=?').get(ref) as { sz: number | null } | undefined;
  return row?.sz == null ? null : Number(row.sz);
}

/** Code-point order (not UTF-16 order) as SPEC §3.3 requires. */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  if (i === n) return a.length - b.length;
  // Equal UTF-16 prefix; the first differing code point starts here, or one unit earlier when
  // the shared unit before is a high surrogate that pairs with what follows in either string.
  if (i > 0) {
    const prev = a.charCodeAt(i - 1);
    if (prev >= 0xd800 && prev <= 0xdbff) {
      const x = a.codePointAt(i - 1) ?? 0;
      const y = b.codePointAt(i - 1) ?? 0;
      if (x !== y) return x - y;
    }
  }
  return (a.codePointAt(i) ?? 0) - (b.codePointAt(i) ?? 0);
}

/**
 * The ROM integrity manifest: every ROM object sorted by (kind, source_ref), each with its LIVE
 * oid, canonicalised with JCS and hashed. The stored oid column is only compared, never trusted.
 * Pass `sources` read in the same transaction to share them with the caller.
 *
 * Recomputing stops at the first mismatch: the ROM is not what was registered whatever the rest
 * holds, and a hostile file must not make acx inflate every entry to find that out. The objects
 * after it keep their recorded oid, so the hash is still computed (and still wrong).
 */
export function computeRomManifest(cart: Cartridge, sources?: RomSources): RomManifest {
  return cart.read(() => manifestFrom(cart, sources ?? readRomSources(cart)));
}

function manifestFrom(cart: Cartridge, sources: RomSources): RomManifest {
  const rows = sources.objects
    .slice()
    .sort((a, b) => compareCodePoints(a.kind, b.kind) || compareCodePoints(a.source_ref, b.source_ref));
  const mismatches: RomManifest['mismatches'] = [];
  const entries = rows.map((row) => {
    if (mismatches.length > 0) return { canon: row.canon, oid: row.oid, sourceRef: row.source_ref, sz: Number(row.sz) };
    let computed: string | null;
    try {
      computed = liveOid(cart, row, sources);
    } catch (error) {
      mismatches.push({ sourceRef: row.source_ref, reason: AcxError.isInstance(error) ? error.message : errorMessage(error) });
      return { canon: row.canon, oid: row.oid, sourceRef: row.source_ref, sz: Number(row.sz) };
    }
    if (computed == null) mismatches.push({ sourceRef: row.source_ref, reason: 'source is missing' });
    else if (computed !== row.oid) mismatches.push({ sourceRef: row.source_ref, reason: 'content does not match its recorded digest' });
    // Keys in JCS order, so canonicalJson can take its JSON.stringify fast path.
    return { canon: row.canon, oid: computed ?? row.oid, sourceRef: row.source_ref, sz: Number(row.sz) };
  });
  const manifestHashHex = sha256Hex(canonicalJson(entries));
  return { entries, manifestHash: `sha256:${manifestHashHex}`, manifestHashHex, mismatches };
}
