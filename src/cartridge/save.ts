import { AcxError } from '../core/errors.ts';
import { canonicalJson, sha256Oid } from '../util/jcs.ts';
import { Cartridge } from './container.ts';
import { assertPortablePath } from './format.ts';
import { computeRomManifest } from './manifest.ts';
import { mergeMemoryRecords, normalizeMemoryRecord, type MemoryRecord } from './memory.ts';
import { digestsEqual } from './verify.ts';

export const COMPLIANCE_PATH = 'save/compliance/harness-compliance.json';

/** Writes that may only touch the SAVE zone. Obtained through withSaveZone. */
export interface SaveWriter {
  /** Field-learned memory (portable:false, cbf1_ fingerprint), merged by the two-key rule. */
  putMemory(records: ReadonlyArray<Partial<MemoryRecord> & { id: string; portable: boolean }>): MemoryRecord[];
  readMemory(): MemoryRecord[];
  putFile(name: string, bytes: Uint8Array): void;
  getFile(name: string): Buffer | null;
  putComplianceDescriptor(descriptor: unknown): void;
}

/**
 * Opens a cartridge for SAVE-zone writes, runs `fn` in one transaction, and commits only if the
 * ROM manifest hash is unchanged afterwards. ROM is never modified through this API.
 */
export function withSaveZone<T>(path: string, fn: (save: SaveWriter) => T): T {
  const cart = Cartridge.open(path, { readonly: false });
  try {
    const before = computeRomManifest(cart).manifestHash;
    const result = cart.tx(() => {
      const value = fn(writerFor(cart));
      const after = computeRomManifest(cart).manifestHash;
      if (!digestsEqual(before, after)) throw new AcxError('save-touched-rom', 'a SAVE write changed the ROM manifest; nothing was written');
      return value;
    });
    if (!cart.savePresent) cart.setSavePresent(true);
    return result;
  } finally {
    cart.close();
  }
}

/** The persisted compliance descriptor, or null. */
export function readComplianceDescriptor(path: string): unknown {
  const cart = Cartridge.open(path, { readonly: true });
  try {
    const bytes = cart.getFile(COMPLIANCE_PATH);
    return bytes ? (JSON.parse(bytes.toString('utf8')) as unknown) : null;
  } finally {
    cart.close();
  }
}

function writerFor(cart: Cartridge): SaveWriter {
  const readMemory = (): MemoryRecord[] =>
    (cart.db.prepare("SELECT payload FROM memory WHERE zone='save' ORDER BY id").all() as Array<{ payload: string }>).map(
      (r) => JSON.parse(r.payload) as MemoryRecord,
    );
  const putFile = (name: string, bytes: Uint8Array) => {
    assertPortablePath(name);
    if (!name.startsWith('save/')) {
      throw new AcxError('save-zone', `${name} is not a SAVE path`, { hint: 'SAVE files live under save/…; ROM is immutable after signing' });
    }
    cart.putFile(name, bytes);
  };
  return {
    readMemory,
    putMemory(records) {
      const incoming = records.map((r) => {
        if (r.portable !== false) {
          throw new AcxError('save-zone', `memory ${r.id} is portable:true; only field-learned (portable:false) records go to SAVE`);
        }
        return normalizeMemoryRecord(r);
      });
      const merged = mergeMemoryRecords(readMemory(), incoming);
      for (const rec of merged) {
        const romClash = cart.db.prepare("SELECT 1 AS x FROM memory WHERE id=? AND zone='rom'").get(rec.id);
        if (romClash) throw new AcxError('save-zone', `memory id ${rec.id} belongs to ROM; choose another id`);
        const payload = canonicalJson(rec);
        cart.db
          .prepare(
            'INSERT INTO memory(id,zone,artifact_fingerprint,codebase_fingerprint,payload,oid,created_at) VALUES(?,?,?,?,?,?,?) ' +
              "ON CONFLICT(id) DO UPDATE SET artifact_fingerprint=excluded.artifact_fingerprint, codebase_fingerprint=excluded.codebase_fingerprint, payload=excluded.payload, oid=excluded.oid WHERE memory.zone='save'",
          )
          .run(rec.id, 'save', rec.artifactFingerprint ?? '', rec.codebaseFingerprint, payload, sha256Oid(payload), rec.timestamp);
      }
      const fps = new Set(merged.map((r) => r.codebaseFingerprint));
      if (fps.size === 1) cart.setMeta('acx.save_codebase_fingerprint', String([...fps][0]));
      return merged;
    },
    putFile,
    getFile: (name) => (name.startsWith('save/') ? cart.getFile(name) : null),
    putComplianceDescriptor(descriptor) {
      putFile(COMPLIANCE_PATH, Buffer.from(`${JSON.stringify(descriptor, null, 2)}\n`));
    },
  };
}
