import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { beforeAll, describe, expect, it } from 'vitest';
import { Cartridge } from '../../src/cartridge/container.ts';
import { withSaveZone } from '../../src/cartridge/save.ts';
import { stripCartridge } from '../../src/cartridge/strip.ts';
import { schemaProblems } from '../../src/cartridge/schema.ts';
import { verifyCartridge } from '../../src/cartridge/verify.ts';
import { AcxError } from '../../src/core/errors.ts';
import { alteredCopy, buildTestCartridge, type BuiltCartridge, signatureRows } from '../support/cartridge-fixtures.ts';
import { REFERENCE_CARTRIDGES, tempDir } from './helpers.ts';

/**
 * The signature covers rows, not the schema: these are the objects an attacker can add to a
 * signed, trusted cartridge without touching a signed row. Each must make the file `tampered`,
 * and acx must never open it for writing (where a trigger would run).
 */
let built: BuiltCartridge;
beforeAll(() => {
  built = buildTestCartridge(tempDir('acx-schema-'));
});

function copy(mutate: (db: DatabaseSync) => void): string {
  return alteredCopy(built.path, join(tempDir('acx-schema-'), 'hostile.acx'), mutate);
}

const hostile: Array<[what: string, named: string, sql: string]> = [
  ['a trigger on sqlar that deletes the signatures', 'trigger "wipe" on sqlar', 'CREATE TRIGGER wipe AFTER INSERT ON sqlar BEGIN DELETE FROM signatures; END'],
  ['a trigger on memory', 'trigger "spy" on memory', "CREATE TRIGGER spy BEFORE UPDATE ON memory BEGIN INSERT INTO cartridge VALUES('x.spy', new.payload); END"],
  ['a view', 'view "rom_files"', "CREATE VIEW rom_files AS SELECT name FROM sqlar WHERE name GLOB 'rom/*'"],
  ['an extra table', 'table "payload"', 'CREATE TABLE payload (blob BLOB)'],
  ['an extra index', 'index "sqlar_by_size" on sqlar', 'CREATE UNIQUE INDEX sqlar_by_size ON sqlar(sz)'],
  ['a redefined format table', 'table "attestations" differs', 'DROP TABLE attestations; CREATE TABLE attestations (att_id TEXT PRIMARY KEY, document TEXT CHECK (length(document) < 10))'],
];

describe('schema objects the format does not define (issue 10, item 3)', () => {
  it('starts from a trusted cartridge', () => {
    expect(verifyCartridge(built.path, { registry: built.registry }).verdict).toBe('trusted');
    expect(schemaProblems(new DatabaseSync(built.path, { readOnly: true }))).toEqual([]);
  });

  it.each(hostile)('%s: verify says tampered and names it; acx will not write to the file', (_what, named, sql) => {
    const path = copy((db) => db.exec(sql));
    const signatures = signatureRows(path);
    const verdict = verifyCartridge(path, { registry: built.registry });
    expect(verdict.verdict).toBe('tampered');
    expect(verdict.reasons.join('\n')).toContain(named);
    // A SAVE write (what `acx run` does after an accepted handshake) is refused before it starts,
    // so a trigger never fires: the signatures are intact and nothing was written.
    let refused: unknown;
    try {
      withSaveZone(path, (save) => save.putFile('save/notes.txt', Buffer.from('x')));
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(AcxError);
    expect((refused as AcxError).code).toBe('cartridge-schema');
    expect((refused as AcxError).message).toContain(named);
    expect(signatureRows(path)).toEqual(signatures);
    expect(new DatabaseSync(path, { readOnly: true }).prepare("SELECT count(*) AS n FROM sqlar WHERE name GLOB 'save/*'").get()).toEqual({ n: 0 });
    // strip rewrites a copy: it refuses the input itself, and writes nothing.
    const out = join(tempDir('acx-schema-'), 'rom-only.acx');
    expect(() => stripCartridge(path, out)).toThrow(`acx will not write to ${path}: ${named}`);
    expect(existsSync(out)).toBe(false);
  });

  it('keeps accepting what real writers produce: acx, the reference, SPEC-verbatim tables, vec0 vectors, ANALYZE', () => {
    for (const path of REFERENCE_CARTRIDGES) expect(schemaProblems(new DatabaseSync(path, { readOnly: true })), path).toEqual([]);
    // SPEC §3.2 verbatim `signatures` (no public_key_pem: the registry holds the key).
    const spec = copy((db) =>
      db.exec(`CREATE TABLE s2 AS SELECT sig_id, target, manifest_hash, envelope, keyid, alg, created_at FROM signatures; DROP TABLE signatures;
        CREATE TABLE signatures (
          sig_id        TEXT PRIMARY KEY NOT NULL,
          target        TEXT NOT NULL DEFAULT 'rom-manifest',
          manifest_hash TEXT NOT NULL,           -- 'sha256:...' over ROM objects
          envelope      TEXT NOT NULL,           -- DSSE JSON
          keyid         TEXT NOT NULL,           -- see §4 (ed25519:<hex>)
          alg           TEXT NOT NULL DEFAULT 'ed25519',
          created_at    TEXT NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO signatures SELECT * FROM s2; DROP TABLE s2;`),
    );
    expect(verifyCartridge(spec, { registry: built.registry })).toMatchObject({ verdict: 'trusted', reasons: [expect.stringContaining('active registry key')] });
    // SPEC §3.2's vec0 `vectors` with sqlite-vec's shadow tables (node:sqlite cannot load vec0, so
    // the entry is written the way a host that has it would leave it).
    const vec0 = copy((db) => {
      db.exec('DROP TABLE vectors; CREATE TABLE vectors_info (key TEXT PRIMARY KEY, value ANY); CREATE TABLE vectors_chunks (chunk_id INTEGER PRIMARY KEY AUTOINCREMENT, size INTEGER NOT NULL, validity BLOB NOT NULL, rowids BLOB NOT NULL)');
      db.exec('CREATE TABLE vectors_rowids (rowid INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL, chunk_id INTEGER, chunk_offset INTEGER); CREATE TABLE vectors_vector_chunks00 (rowid PRIMARY KEY, vectors BLOB NOT NULL)');
      db.exec('PRAGMA writable_schema = ON');
      db.exec(
        "INSERT INTO sqlite_schema VALUES('table', 'vectors', 'vectors', 0, 'CREATE VIRTUAL TABLE vectors USING vec0(memory_id TEXT PRIMARY KEY, zone TEXT partition key, embedding float[128] distance_metric=cosine, +artifact_fingerprint TEXT)')",
      );
    });
    expect(verifyCartridge(vec0, { registry: built.registry }).verdict).toBe('trusted');
    const analyzed = copy((db) => db.exec('ANALYZE'));
    expect(verifyCartridge(analyzed, { registry: built.registry }).verdict).toBe('trusted');
  });

  it('shadow-table names (and sqlite_sequence) are only accepted beside a vec0 table', () => {
    const path = copy((db) => db.exec('CREATE TABLE vectors_info (key TEXT PRIMARY KEY, value ANY); CREATE TABLE vectors_chunks (chunk_id INTEGER PRIMARY KEY AUTOINCREMENT)'));
    const reasons = verifyCartridge(path, { registry: built.registry }).reasons.join('\n');
    expect(reasons).toContain('table vectors_info is not part of the cartridge format (no vec0 table "vectors" owns it)');
    expect(reasons).toContain('table sqlite_sequence is not part of the cartridge format (no vec0 table "vectors" owns it)');
  });
});

describe('every connection acx opens on a cartridge', () => {
  const trustedSchema = (cart: Cartridge) => (cart.db.prepare('PRAGMA trusted_schema').get() as { trusted_schema: number }).trusted_schema;

  it('sets trusted_schema = OFF (read-only, writable, new)', () => {
    const path = copy(() => {});
    const readonly = Cartridge.open(path);
    const writable = Cartridge.open(path, { readonly: false });
    const fresh = Cartridge.create(join(tempDir('acx-schema-'), 'new.acx'));
    expect([trustedSchema(readonly), trustedSchema(writable), trustedSchema(fresh)]).toEqual([0, 0, 0]);
    Cartridge.readSnapshot(path, (cart) => expect(trustedSchema(cart)).toBe(0));
    for (const cart of [readonly, writable, fresh]) cart.close();
  });

  const hasDefensive = typeof (DatabaseSync.prototype as { enableDefensive?: unknown }).enableDefensive === 'function';
  it.skipIf(!hasDefensive)(`sets the defensive flag (needs Node >= 24.12 for node:sqlite's defensive option; this is ${process.version})`, () => {
    const cart = Cartridge.open(copy(() => {}), { readonly: false });
    try {
      cart.db.exec('PRAGMA writable_schema = ON');
      expect(() => cart.db.exec("UPDATE sqlite_schema SET sql = sql WHERE name = 'sqlar'")).toThrow(/may not be modified/);
    } finally {
      cart.close();
    }
  });
});
