import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { buildCartridge } from '../../src/cartridge/build.ts';
import { generateSigningKey } from '../../src/cartridge/keys.ts';
import { verifyCartridge } from '../../src/cartridge/verify.ts';
import { AcxError } from '../../src/util/errors.ts';
import { REFERENCE_CARTRIDGES, tempDir, writeAgentDir, writeKey } from './helpers.ts';

type Mutation = [name: string, mutate: (db: DatabaseSync) => void];

function acxBuilt(): string {
  const root = tempDir();
  const agent = join(root, 'agent');
  mkdirSync(agent);
  writeAgentDir(agent);
  const out = join(root, 'built.acx');
  buildCartridge({ dir: agent, out, key: writeKey(root).keyPath, publisher: 'io.github.example' });
  return out;
}

function flipByte(db: DatabaseSync, name: string, at?: number): void {
  const row = db.prepare('SELECT data FROM sqlar WHERE name=?').get(name) as { data: Uint8Array };
  const data = Buffer.from(row.data);
  const i = at ?? Math.floor(data.length / 2);
  data[i] = (data[i] ?? 0) ^ 0x01;
  db.prepare('UPDATE sqlar SET data=? WHERE name=?').run(data, name);
}

function editEnvelope(db: DatabaseSync, edit: (env: Record<string, any>) => void): void {
  const row = db.prepare('SELECT sig_id, envelope FROM signatures').get() as { sig_id: string; envelope: string };
  const env = JSON.parse(row.envelope);
  edit(env);
  db.prepare('UPDATE signatures SET envelope=? WHERE sig_id=?').run(JSON.stringify(env), row.sig_id);
}

const mutations: Mutation[] = [
  ['memory payload edited', (db) => db.exec("UPDATE memory SET payload = replace(payload, '\"portable\":true', '\"portable\":true ') WHERE zone='rom'")],
  ['covered meta key changed', (db) => db.exec("UPDATE cartridge SET value = value || '!' WHERE key='acx.agent_name'")],
  ['covered meta key deleted', (db) => db.exec("DELETE FROM cartridge WHERE key='acx.publisher_id'")],
  ['recorded rom hash changed', (db) => db.exec("UPDATE cartridge SET value='sha256:' || printf('%064d', 0) WHERE key='acx.rom_manifest_hash'")],
  ['objects oid rewritten', (db) => db.exec("UPDATE objects SET oid='sha256:' || printf('%064d', 1) WHERE kind='sqlar' AND zone='rom' AND source_ref = (SELECT min(source_ref) FROM objects WHERE kind='sqlar')")],
  ['objects sz changed', (db) => db.exec("UPDATE objects SET sz = sz + 1 WHERE source_ref = (SELECT min(source_ref) FROM objects WHERE kind='sqlar')")],
  ['objects row deleted', (db) => db.exec("DELETE FROM objects WHERE source_ref = (SELECT min(source_ref) FROM objects WHERE kind='cartridge')")],
  ['objects row moved to save', (db) => db.exec("UPDATE objects SET zone='save' WHERE source_ref = (SELECT min(source_ref) FROM objects WHERE kind='memory')")],
  ['uncovered ROM file added', (db) => db.prepare('INSERT INTO sqlar(name,mode,mtime,sz,data) VALUES(?,?,?,?,?)').run('rom/skills/evil/SKILL.md', 420, 0, 4, Buffer.from('evil'))],
  ['uncovered ROM memory added', (db) => db.prepare("INSERT INTO memory VALUES('x','rom','abc',NULL,'{\"portable\":true,\"codebaseFingerprint\":null}','sha256:00','2026')").run()],
  ['path traversal name', (db) => db.prepare('INSERT INTO sqlar(name,mode,mtime,sz,data) VALUES(?,?,?,?,?)').run('save/../../etc/passwd', 420, 0, 1, Buffer.from('x'))],
  ['absolute path name', (db) => db.prepare('INSERT INTO sqlar(name,mode,mtime,sz,data) VALUES(?,?,?,?,?)').run('/etc/cron.d/x', 420, 0, 1, Buffer.from('x'))],
  ['backslash name', (db) => db.prepare('INSERT INTO sqlar(name,mode,mtime,sz,data) VALUES(?,?,?,?,?)').run('save\\..\\x', 420, 0, 1, Buffer.from('x'))],
  ['malformed SAVE memory tier', (db) => db.prepare("INSERT INTO memory VALUES('y','save','abc',NULL,'{\"portable\":true,\"codebaseFingerprint\":null}','sha256:00','2026')").run()],
  ['signature byte flipped', (db) => editEnvelope(db, (e) => { const s = Buffer.from(e.signatures[0].sig, 'base64'); s[3] = (s[3] ?? 0) ^ 1; e.signatures[0].sig = s.toString('base64'); })],
  ['payload replaced', (db) => editEnvelope(db, (e) => { const st = JSON.parse(Buffer.from(e.payload, 'base64').toString()); st.predicate.publisherId = 'io.github.mallory'; e.payload = Buffer.from(JSON.stringify(st)).toString('base64'); })],
  ['wrong payloadType', (db) => editEnvelope(db, (e) => { e.payloadType = 'application/vnd.acx.rom-manifest.v1+json'; })],
  ['envelope without signatures', (db) => editEnvelope(db, (e) => { e.signatures = []; })],
  ['envelope not JSON', (db) => db.exec("UPDATE signatures SET envelope='{not json'")],
  ['envelope garbage base64', (db) => editEnvelope(db, (e) => { e.payload = '%%%'; })],
  ['signature manifest_hash changed', (db) => db.exec("UPDATE signatures SET manifest_hash='sha256:' || printf('%064d', 2)")],
  ['embedded public key swapped', (db) => db.prepare('UPDATE signatures SET public_key_pem=?').run(generateSigningKey().publicKeyPem)],
  ['skill index hash changed', (db) => db.exec("UPDATE acx_skill SET content_sha256 = printf('%064d', 3)")],
  ['skill index points at a missing file', (db) => db.exec("UPDATE acx_skill SET sqlar_path = 'rom/skills/gone/SKILL.md'")],
  // A table rebuilt without its primary key can hold a second row under a signed id: the signed
  // row still hashes right, so the extra row must be caught as such.
  ['memory table rebuilt with a duplicate ROM id', (db) => rebuildWithDuplicate(db, 'memory', "zone='rom'", 'payload', "payload || ' '")],
  ['meta table rebuilt with a duplicate covered key', (db) => rebuildWithDuplicate(db, 'cartridge', "key='acx.agent_name'", 'value', "'Mallory'")],
  ['sqlar table rebuilt with a duplicate ROM file', (db) => rebuildWithDuplicate(db, 'sqlar', "name GLOB 'rom/*'", 'data', "CAST('evil' AS BLOB)")],
];

function rebuildWithDuplicate(db: DatabaseSync, table: string, where: string, column: string, replacement: string): void {
  const cols = (db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).map((c) => c.name);
  db.exec(`CREATE TABLE old_copy AS SELECT * FROM ${table}; DROP TABLE ${table};
    CREATE TABLE ${table}(${cols.join(', ')}); INSERT INTO ${table} SELECT * FROM old_copy;
    INSERT INTO ${table} SELECT ${cols.map((c) => (c === column ? replacement : c)).join(', ')} FROM old_copy WHERE ${where} LIMIT 1;
    DROP TABLE old_copy;`);
}

const subjects: Array<[string, () => string]> = [
  ['reference cartridge', () => REFERENCE_CARTRIDGES[0]!],
  ['acx-built cartridge', acxBuilt],
];

describe.each(subjects)('tamper corpus on a %s', (_label, source) => {
  const original = source();

  function mutated(mutate: (db: DatabaseSync) => void): string {
    const path = join(tempDir(), 't.acx');
    copyFileSync(original, path);
    const db = new DatabaseSync(path);
    mutate(db);
    db.close();
    return path;
  }

  it('starts from a cartridge that verifies', () => {
    expect(verifyCartridge(original).verdict).toBe('portable');
  });

  it('rejects a single flipped byte in every ROM file', () => {
    const db = new DatabaseSync(original, { readOnly: true });
    const names = (db.prepare("SELECT name FROM sqlar WHERE name GLOB 'rom/*'").all() as Array<{ name: string }>).map((r) => r.name);
    db.close();
    expect(names.length).toBeGreaterThan(5);
    for (const name of names) {
      const v = verifyCartridge(mutated((d) => flipByte(d, name)));
      expect(v.verdict, name).toBe('tampered');
      expect(v.reasons.join(' '), name).toContain(name);
    }
  });

  it.each(mutations)('rejects: %s', (_name, mutate) => {
    const v = verifyCartridge(mutated(mutate));
    expect(v.verdict).toBe('tampered');
    expect(v.reasons.length).toBeGreaterThan(0);
  });

  it('refuses a file whose header brand was altered, with an error not a crash', () => {
    const path = join(tempDir(), 'h.acx');
    const bytes = readFileSync(original);
    bytes[70] = 0x00;
    writeFileSync(path, bytes);
    expect(() => verifyCartridge(path)).toThrow(AcxError);
  });
});
