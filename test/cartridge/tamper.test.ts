import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { buildCartridge } from '../../src/cartridge/build.ts';
import { generateSigningKey } from '../../src/cartridge/keys.ts';
import { verifyCartridge } from '../../src/cartridge/verify.ts';
import { AcxError } from '../../src/core/errors.ts';
import { REFERENCE_CARTRIDGES, tempDir, writeAgentDir, writeKey } from './helpers.ts';

/**
 * A tampering of the file, and what a reason must name for the user to find it: `names` reads
 * the cartridge before the change and returns the identifiers (sqlar name, memory or capability
 * id, meta key, signature id) of the objects it alters.
 */
interface Mutation {
  name: string;
  mutate: (db: DatabaseSync) => void;
  names: (db: DatabaseSync) => string[];
}

const column = (db: DatabaseSync, sql: string): string[] => (db.prepare(sql).all() as Array<Record<string, string>>).map((row) => Object.values(row)[0]!);
const fixed = (...names: string[]) => () => names;
const signatureIds = (db: DatabaseSync) => column(db, 'SELECT sig_id FROM signatures');
/** The first row of a kind in the objects table, which several mutations pick. */
const FIRST_OBJECT = (kind: string) => `(SELECT min(source_ref) FROM objects WHERE kind='${kind}')`;
/** An objects row's source_ref without its table prefix: what the reasons call the object. */
const bareId = (ref: string) => ref.replace(/^(memory|capability|cartridge):/, '');

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
  {
    name: 'memory payload edited',
    mutate: (db) => db.exec("UPDATE memory SET payload = replace(payload, '\"portable\":true', '\"portable\":true ') WHERE zone='rom'"),
    names: (db) => column(db, `SELECT 'memory:' || id FROM memory WHERE zone='rom' AND instr(payload, '"portable":true') > 0`),
  },
  { name: 'covered meta key changed', mutate: (db) => db.exec("UPDATE cartridge SET value = value || '!' WHERE key='acx.agent_name'"), names: fixed('cartridge:acx.agent_name') },
  { name: 'covered meta key deleted', mutate: (db) => db.exec("DELETE FROM cartridge WHERE key='acx.publisher_id'"), names: fixed('cartridge:acx.publisher_id') },
  {
    name: 'recorded rom hash changed',
    mutate: (db) => db.exec("UPDATE cartridge SET value='sha256:' || printf('%064d', 0) WHERE key='acx.rom_manifest_hash'"),
    names: fixed('acx.rom_manifest_hash'),
  },
  {
    name: 'objects oid rewritten',
    mutate: (db) => db.exec(`UPDATE objects SET oid='sha256:' || printf('%064d', 1) WHERE kind='sqlar' AND zone='rom' AND source_ref = ${FIRST_OBJECT('sqlar')}`),
    names: (db) => column(db, `SELECT ${FIRST_OBJECT('sqlar')}`),
  },
  {
    name: 'objects sz changed',
    mutate: (db) => db.exec(`UPDATE objects SET sz = sz + 1 WHERE source_ref = ${FIRST_OBJECT('sqlar')}`),
    names: (db) => column(db, `SELECT ${FIRST_OBJECT('sqlar')}`),
  },
  {
    name: 'objects row deleted',
    mutate: (db) => db.exec(`DELETE FROM objects WHERE source_ref = ${FIRST_OBJECT('cartridge')}`),
    names: (db) => column(db, `SELECT ${FIRST_OBJECT('cartridge')}`).map(bareId),
  },
  {
    name: 'objects row moved to save',
    mutate: (db) => db.exec(`UPDATE objects SET zone='save' WHERE source_ref = ${FIRST_OBJECT('memory')}`),
    names: (db) => column(db, `SELECT ${FIRST_OBJECT('memory')}`).map(bareId),
  },
  {
    name: 'uncovered ROM file added',
    mutate: (db) => db.prepare('INSERT INTO sqlar(name,mode,mtime,sz,data) VALUES(?,?,?,?,?)').run('rom/skills/evil/SKILL.md', 420, 0, 4, Buffer.from('evil')),
    names: fixed('rom/skills/evil/SKILL.md'),
  },
  {
    name: 'uncovered ROM memory added',
    mutate: (db) => db.prepare("INSERT INTO memory VALUES('planted-rom-record','rom','abc',NULL,'{\"portable\":true,\"codebaseFingerprint\":null}','sha256:00','2026')").run(),
    names: fixed('planted-rom-record'),
  },
  {
    name: 'path traversal name',
    mutate: (db) => db.prepare('INSERT INTO sqlar(name,mode,mtime,sz,data) VALUES(?,?,?,?,?)').run('save/../../etc/passwd', 420, 0, 1, Buffer.from('x')),
    names: fixed('save/../../etc/passwd'),
  },
  {
    name: 'absolute path name',
    mutate: (db) => db.prepare('INSERT INTO sqlar(name,mode,mtime,sz,data) VALUES(?,?,?,?,?)').run('/etc/cron.d/x', 420, 0, 1, Buffer.from('x')),
    names: fixed('/etc/cron.d/x'),
  },
  {
    name: 'backslash name',
    mutate: (db) => db.prepare('INSERT INTO sqlar(name,mode,mtime,sz,data) VALUES(?,?,?,?,?)').run('save\\..\\x', 420, 0, 1, Buffer.from('x')),
    // Quoted as JSON in the reason, so a control or separator character cannot hide in it.
    names: fixed(JSON.stringify('save\\..\\x')),
  },
  {
    name: 'malformed SAVE memory tier',
    mutate: (db) => db.prepare("INSERT INTO memory VALUES('planted-save-record','save','abc',NULL,'{\"portable\":true,\"codebaseFingerprint\":null}','sha256:00','2026')").run(),
    names: fixed('planted-save-record'),
  },
  {
    name: 'signature byte flipped',
    mutate: (db) => editEnvelope(db, (e) => { const s = Buffer.from(e.signatures[0].sig, 'base64'); s[3] = (s[3] ?? 0) ^ 1; e.signatures[0].sig = s.toString('base64'); }),
    names: signatureIds,
  },
  {
    name: 'payload replaced',
    mutate: (db) => editEnvelope(db, (e) => { const st = JSON.parse(Buffer.from(e.payload, 'base64').toString()); st.predicate.publisherId = 'io.github.mallory'; e.payload = Buffer.from(JSON.stringify(st)).toString('base64'); }),
    names: signatureIds,
  },
  { name: 'wrong payloadType', mutate: (db) => editEnvelope(db, (e) => { e.payloadType = 'application/vnd.acx.rom-manifest.v1+json'; }), names: signatureIds },
  { name: 'envelope without signatures', mutate: (db) => editEnvelope(db, (e) => { e.signatures = []; }), names: signatureIds },
  { name: 'envelope not JSON', mutate: (db) => db.exec("UPDATE signatures SET envelope='{not json'"), names: signatureIds },
  { name: 'envelope garbage base64', mutate: (db) => editEnvelope(db, (e) => { e.payload = '%%%'; }), names: signatureIds },
  { name: 'signature manifest_hash changed', mutate: (db) => db.exec("UPDATE signatures SET manifest_hash='sha256:' || printf('%064d', 2)"), names: signatureIds },
  { name: 'embedded public key swapped', mutate: (db) => db.prepare('UPDATE signatures SET public_key_pem=?').run(generateSigningKey().publicKeyPem), names: signatureIds },
  { name: 'skill index hash changed', mutate: (db) => db.exec("UPDATE acx_skill SET content_sha256 = printf('%064d', 3)"), names: (db) => column(db, 'SELECT sqlar_path FROM acx_skill') },
  { name: 'skill index points at a missing file', mutate: (db) => db.exec("UPDATE acx_skill SET sqlar_path = 'rom/skills/gone/SKILL.md'"), names: fixed('rom/skills/gone/SKILL.md') },
  // A table rebuilt without its primary key can hold a second row under a signed id: the signed
  // row still hashes right, so the rebuilt table itself is what the reason must name (the schema
  // check sees its definition differ from the format's before any row is compared).
  {
    name: 'memory table rebuilt with a duplicate ROM id',
    mutate: (db) => rebuildWithDuplicate(db, 'memory', 'id', "zone='rom'", 'payload', "payload || ' '"),
    names: fixed('table "memory"'),
  },
  {
    name: 'meta table rebuilt with a duplicate covered key',
    mutate: (db) => rebuildWithDuplicate(db, 'cartridge', 'key', "key='acx.agent_name'", 'value', "'Mallory'"),
    names: fixed('table "cartridge"'),
  },
  {
    name: 'sqlar table rebuilt with a duplicate ROM file',
    mutate: (db) => rebuildWithDuplicate(db, 'sqlar', 'name', "name GLOB 'rom/*'", 'data', "CAST('evil' AS BLOB)"),
    names: fixed('table "sqlar"'),
  },
];

/** Rebuilds `table` without its primary key and adds a copy of its first row (by `key`) matching `where`. */
function rebuildWithDuplicate(db: DatabaseSync, table: string, key: string, where: string, changed: string, replacement: string): void {
  const cols = (db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).map((c) => c.name);
  db.exec(`CREATE TABLE old_copy AS SELECT * FROM ${table}; DROP TABLE ${table};
    CREATE TABLE ${table}(${cols.join(', ')}); INSERT INTO ${table} SELECT * FROM old_copy;
    INSERT INTO ${table} SELECT ${cols.map((c) => (c === changed ? replacement : c)).join(', ')} FROM old_copy WHERE ${where} ORDER BY ${key} LIMIT 1;
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

  function namesIn(names: Mutation['names']): string[] {
    const db = new DatabaseSync(original, { readOnly: true });
    try {
      return names(db);
    } finally {
      db.close();
    }
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

  it.each(mutations)('rejects $name, naming what was changed', ({ mutate, names }) => {
    const expected = namesIn(names);
    expect(expected.length).toBeGreaterThan(0);
    const v = verifyCartridge(mutated(mutate));
    expect(v.verdict).toBe('tampered');
    for (const name of expected) expect(v.reasons.join('\n'), name).toContain(name);
  });

  it('refuses a file whose header brand was altered, with an error not a crash', () => {
    const path = join(tempDir(), 'h.acx');
    const bytes = readFileSync(original);
    bytes[70] = 0x00;
    writeFileSync(path, bytes);
    expect(() => verifyCartridge(path)).toThrow(AcxError);
  });
});
