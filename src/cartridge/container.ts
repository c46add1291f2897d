import { existsSync, statSync, type Stats } from 'node:fs';
import { DatabaseSync, type StatementSync } from '../store/sqlite.ts';
import { deflateSync, inflateRawSync, inflateSync } from 'node:zlib';
import { AcxError, errorMessage } from '../core/errors.ts';
import {
  APPLICATION_ID,
  DDL,
  FLAG_SAVE_PRESENT,
  REQUIRED_TABLES,
  SPEC_MAJOR,
  userVersionFor,
  zoneOf,
  type Zone,
} from './format.ts';
import { schemaProblems, type SchemaRow } from './schema.ts';

export type ObjectKind = 'sqlar' | 'memory' | 'cartridge' | 'skill' | 'attestation';
export type Canon = 'raw' | 'jcs-rfc8785';

export interface ObjectRow {
  oid: string;
  kind: ObjectKind;
  source_ref: string;
  canon: Canon;
  zone: Zone;
  sz: number;
}

export interface SqlarRow {
  name: string;
  mode: number | null;
  mtime: number | null;
  sz: number | null;
  stored: number;
}

/** What a snapshot's identity check read, in the snapshot: the table names and all of sqlite_schema. */
export interface SnapshotSchema {
  tables: ReadonlySet<string>;
  rows: readonly SchemaRow[];
}

/** How file bytes are stored in sqlar. 'none' is readable by every implementation. */
export type Compression = 'none' | 'zlib';

const MiB = 1024 * 1024;
/**
 * Inflation caps. A deflated entry is a zlib bomb waiting to happen (a 260 KB entry can declare
 * and inflate to 256 MiB), so: one entry inflates to at most 64 MiB, and one verification (one
 * ROM manifest computation) inflates at most 256 MiB in all, charged by declared size before any
 * work is done. A cartridge is prompts, skills and knowledge — kilobytes to a few megabytes — and
 * acx itself stores an entry raw rather than deflate it past these caps (putFile). Entries stored
 * raw cost no more than their bytes in the file, so they are not charged.
 */
export const MAX_INFLATED_ENTRY_BYTES = 64 * MiB;
export const MAX_INFLATED_TOTAL_BYTES = 256 * MiB;

/** The inflated bytes one verification may still spend (see MAX_INFLATED_TOTAL_BYTES). */
export class InflateBudget {
  readonly limit: number;
  private used = 0;
  constructor(limit = MAX_INFLATED_TOTAL_BYTES) {
    this.limit = limit;
  }

  /** Charges `bytes` for entry `name`; throws once the total would pass the limit. */
  charge(name: string, bytes: number): void {
    this.used += bytes;
    if (this.used > this.limit) {
      throw new AcxError(
        'cartridge-too-large',
        `archive entries inflate to more than ${this.limit / MiB} MiB in total (reached at ${JSON.stringify(name)}), more than acx inflates for one cartridge`,
        { hint: 'a cartridge holds prompts, skills and knowledge; this one looks like a decompression bomb — do not use it' },
      );
    }
  }
}

/**
 * One .acx file opened through node:sqlite. Cartridges use the default rollback journal (never WAL)
 * so the artifact stays a single self-contained file.
 */
export class Cartridge {
  readonly db: DatabaseSync;
  readonly path: string;
  readonly readonly: boolean;
  private readonly statements = new Map<string, StatementSync>();
  /** Raw bytes this instance stored deflated, so that it never writes what a reader refuses to inflate. */
  private deflatedBytes = 0;

  private constructor(db: DatabaseSync, path: string, readonly: boolean) {
    this.db = db;
    this.path = path;
    this.readonly = readonly;
  }

  /** Creates a new, empty cartridge at `path` (which must not exist). */
  static create(path: string): Cartridge {
    const cart = new Cartridge(openNew(path), path, false);
    // Header and schema in one transaction: one journal + fsync cycle instead of one per table.
    cart.tx(() => cart.db.exec(SCHEMA));
    return cart;
  }

  /**
   * Creates a new cartridge at `path` (which must not exist) and fills it in ONE transaction:
   * header, schema and everything `fill` writes commit together (one fsync), or nothing does.
   * The rollback journal is kept in memory, so this is only for a scratch file that the caller
   * renames into place after success and deletes after failure (as `buildCartridge` does); the
   * finished file is an ordinary rollback-journal cartridge. The cartridge is closed on return.
   */
  static createWith<T>(path: string, fill: (cart: Cartridge) => T): T {
    const cart = new Cartridge(openNew(path), path, false);
    try {
      cart.db.exec('PRAGMA journal_mode = MEMORY');
      return cart.tx(() => {
        cart.db.exec(SCHEMA);
        return fill(cart);
      });
    } finally {
      cart.close();
    }
  }

  /** Opens and checks the file identity (application_id, spec major, required tables). */
  static open(path: string, options: { readonly?: boolean } = {}): Cartridge {
    return Cartridge.openChecked(path, options.readonly ?? true, false).cart;
  }

  /**
   * Opens `path` read-only and runs `fn` in ONE read transaction that begins before the identity
   * check: `fn` sees exactly the file that was identified (with its table names and schema rows,
   * read in the same statement), and the file is locked and checked once. Closes the cartridge afterwards.
   */
  static readSnapshot<T>(path: string, fn: (cart: Cartridge, schema: SnapshotSchema) => T): T {
    const { cart, schema } = Cartridge.openChecked(path, true, true);
    try {
      return fn(cart, schema);
    } finally {
      if (cart.db.isOpen && cart.db.isTransaction) cart.db.exec('ROLLBACK'); // read-only: nothing to keep
      cart.close();
    }
  }

  private static openChecked(path: string, readonly: boolean, snapshot: boolean): { cart: Cartridge; schema: SnapshotSchema } {
    assertRegularFile(path);
    let db: DatabaseSync;
    try {
      db = connect(path, readonly);
    } catch (error) {
      throw notACartridge(path, errorMessage(error));
    }
    try {
      if (snapshot) db.exec('BEGIN');
      // One statement (one lock/read cycle) for the whole identity check, and the schema rows
      // with it: a verification checks them next, so it need not prepare a statement of its own.
      let appId = 0;
      let userVersion = 0;
      const tables = new Set<string>();
      const rows: SchemaRow[] = [];
      for (const row of db.prepare(IDENTITY_SQL).all() as Array<{ k: string; v: unknown; name: unknown; tbl_name: unknown; sql: unknown }>) {
        if (row.k === 'app') appId = Number(row.v);
        else if (row.k === 'uv') userVersion = Number(row.v);
        else {
          rows.push({ type: row.v, name: row.name, tbl_name: row.tbl_name, sql: row.sql });
          if (row.v === 'table') tables.add(String(row.name));
        }
      }
      if (appId !== APPLICATION_ID) {
        throw notACartridge(path, `application_id is 0x${(appId >>> 0).toString(16)}, expected 0x41435831 ("ACX1")`);
      }
      const major = (userVersion >>> 24) & 0xff;
      if (major !== SPEC_MAJOR) {
        throw new AcxError('cartridge-version', `${path} uses cartridge spec major ${major}; acx reads major ${SPEC_MAJOR}`, {
          hint: 'upgrade acx or re-export the cartridge with a compatible tool',
        });
      }
      const missing = REQUIRED_TABLES.filter((t) => !tables.has(t));
      if (missing.length) throw notACartridge(path, `missing table(s) ${missing.join(', ')}`);
      const cart = new Cartridge(db, path, readonly);
      if (!readonly) cart.assertWritableSchema();
      return { cart, schema: { tables, rows } };
    } catch (error) {
      db.close();
      if (AcxError.isInstance(error)) throw error;
      throw notACartridge(path, errorMessage(error));
    }
  }

  close(): void {
    if (this.db.isOpen) this.db.close();
  }

  /**
   * acx's own writes would fire a trigger the file carries, so acx never writes to a schema the
   * format does not define (every writable open checks; `strip` checks its input before copying
   * it). Reading cannot run one; `acx verify` reports such a file as tampered.
   */
  assertWritableSchema(): void {
    const problems = schemaProblems(this.db);
    if (problems.length) {
      throw new AcxError('cartridge-schema', `acx will not write to ${this.path}: ${problems.join('; ')}`, {
        hint: 'the file was altered after it was built; run `acx verify` on it and get a fresh copy from its publisher',
      });
    }
  }

  /** A cached prepared statement (preparing costs more than running these small queries). */
  stmt(sql: string): StatementSync {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  hasTable(name: string): boolean {
    return this.stmt("SELECT 1 AS x FROM sqlite_master WHERE type='table' AND name=?").get(name) !== undefined;
  }

  /** Names of all tables (one query, for callers that check several). */
  tableNames(): Set<string> {
    const rows = this.stmt("SELECT name FROM sqlite_master WHERE type='table'").all() as Array<{ name: string }>;
    return new Set(rows.map((r) => r.name));
  }

  tx<T>(fn: () => T): T {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const result = fn();
      this.db.exec('COMMIT');
      return result;
    } catch (error) {
      this.db.exec('ROLLBACK');
      throw error;
    }
  }

  /**
   * Runs `fn` inside one read transaction, so everything it reads comes from one consistent
   * snapshot and the file is locked and checked once, not once per statement. Inside an open
   * transaction it just runs `fn`.
   */
  read<T>(fn: () => T): T {
    if (this.db.isTransaction) return fn();
    this.db.exec('BEGIN');
    let done = false;
    try {
      const result = fn();
      done = true;
      return result;
    } finally {
      if (this.db.isTransaction) this.db.exec(done ? 'COMMIT' : 'ROLLBACK');
    }
  }

  // ---- header -----------------------------------------------------------------------------
  get userVersion(): number {
    return Number(pragma(this.db, 'user_version'));
  }

  get savePresent(): boolean {
    return (this.userVersion & FLAG_SAVE_PRESENT) !== 0;
  }

  setSavePresent(present: boolean): void {
    const next = present ? this.userVersion | FLAG_SAVE_PRESENT : this.userVersion & ~FLAG_SAVE_PRESENT;
    this.db.exec(`PRAGMA user_version = ${next >>> 0}`);
  }

  // ---- meta -------------------------------------------------------------------------------
  getMeta(key: string): string | null {
    const row = this.stmt('SELECT value FROM cartridge WHERE key=?').get(key) as { value: string | null } | undefined;
    return row?.value ?? null;
  }

  setMeta(key: string, value: string): void {
    this.stmt('INSERT INTO cartridge(key,value) VALUES(?,?) ON CONFLICT(key) DO UPDATE SET value=excluded.value').run(key, value);
  }

  deleteMeta(key: string): void {
    this.stmt('DELETE FROM cartridge WHERE key=?').run(key);
  }

  allMeta(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const row of this.stmt('SELECT key,value FROM cartridge ORDER BY key').all() as Array<{ key: string; value: string }>) {
      out[row.key] = row.value;
    }
    return out;
  }

  // ---- sqlar ------------------------------------------------------------------------------
  /** Stores a file; the name must be a portable rom/ or save/ path. Returns the raw size. */
  putFile(name: string, bytes: Uint8Array, options: { mode?: number; mtime?: number; compression?: Compression } = {}): number {
    zoneOf(name);
    const raw = Buffer.from(bytes);
    let data = raw;
    const inflatable = raw.length <= MAX_INFLATED_ENTRY_BYTES && this.deflatedBytes + raw.length <= MAX_INFLATED_TOTAL_BYTES;
    if (options.compression === 'zlib' && raw.length > 0 && inflatable) {
      const packed = deflateSync(raw, { level: 9 });
      if (packed.length < raw.length) {
        data = packed;
        this.deflatedBytes += raw.length;
      }
    }
    this.stmt(
      'INSERT INTO sqlar(name,mode,mtime,sz,data) VALUES(?,?,?,?,?) ON CONFLICT(name) DO UPDATE SET mode=excluded.mode,mtime=excluded.mtime,sz=excluded.sz,data=excluded.data',
    ).run(name, options.mode ?? 0o100644, options.mtime ?? 0, raw.length, data);
    return raw.length;
  }

  /**
   * The uncompressed bytes of a file, or null if there is no such entry. Inflating is charged
   * to `budget` when one is given (a verification passes its own).
   */
  getFile(name: string, budget?: InflateBudget): Buffer | null {
    const row = this.stmt('SELECT sz, data FROM sqlar WHERE name=?').get(name) as
      | { sz: number | null; data: Uint8Array | null }
      | undefined;
    if (!row || row.data == null || row.sz == null) return null;
    // node:sqlite hands out a fresh copy of the blob, so it can be wrapped without copying again.
    return decodeSqlarData(name, Number(row.sz), row.data, false, budget);
  }

  listFiles(prefix = ''): string[] {
    const rows = this.stmt('SELECT name FROM sqlar ORDER BY name').all() as Array<{ name: string }>;
    return rows.map((r) => r.name).filter((n) => typeof n === 'string' && n.startsWith(prefix));
  }

  fileRows(): SqlarRow[] {
    return this.stmt('SELECT name, mode, mtime, sz, length(data) AS stored FROM sqlar ORDER BY name').all() as unknown as SqlarRow[];
  }

  // ---- objects ----------------------------------------------------------------------------
  putObject(row: ObjectRow): void {
    this.stmt('INSERT INTO objects(oid,kind,source_ref,canon,zone,sz) VALUES(?,?,?,?,?,?)').run(row.oid, row.kind, row.source_ref, row.canon, row.zone, row.sz);
  }

  objects(zone?: Zone): ObjectRow[] {
    const sql = zone
      ? 'SELECT oid,kind,source_ref,canon,zone,sz FROM objects WHERE zone=?'
      : 'SELECT oid,kind,source_ref,canon,zone,sz FROM objects';
    const stmt = this.stmt(sql);
    return (zone ? stmt.all(zone) : stmt.all()) as unknown as ObjectRow[];
  }
}

/** sqlar convention: sz == length(data) means stored raw; otherwise deflated. */
export function decodeSqlarData(name: string, sz: number, data: Uint8Array, copy = true, budget?: InflateBudget): Buffer {
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (buf.length === sz) return copy ? Buffer.from(buf) : buf;
  if (!Number.isInteger(sz) || sz < 0) {
    throw new AcxError('cartridge-entry', `archive entry ${JSON.stringify(name)} declares an impossible size ${sz}`);
  }
  if (sz > MAX_INFLATED_ENTRY_BYTES) {
    throw new AcxError('cartridge-entry', `archive entry ${JSON.stringify(name)} declares ${sz} bytes deflated; acx inflates at most ${MAX_INFLATED_ENTRY_BYTES / MiB} MiB per entry`, {
      hint: 'a cartridge holds prompts, skills and knowledge; this entry looks like a decompression bomb — do not use the file',
    });
  }
  // Inflating never yields more than the declared size (maxOutputLength), so charge that up front.
  budget?.charge(name, sz);
  // Stock sqlar uses zlib streams; some writers (the reference implementation) use raw deflate.
  // zlib carries an Adler-32 check, so trying it first cannot mis-decode a raw stream.
  const limit = Math.max(sz, 1);
  const b0 = buf[0] ?? 0;
  const looksZlib = (b0 & 0x0f) === 8 && ((b0 << 8) | (buf[1] ?? 0)) % 31 === 0;
  for (const inflate of looksZlib ? [inflateSync, inflateRawSync] : [inflateRawSync]) {
    try {
      const out = inflate(buf, { maxOutputLength: limit });
      if (out.length === sz) return out;
    } catch {
      // try the next format
    }
  }
  throw new AcxError('cartridge-entry', `archive entry ${JSON.stringify(name)} cannot be decompressed to its declared ${sz} bytes`, {
    hint: 'the file is damaged or was altered; get a fresh copy from its publisher',
  });
}

/** application_id, user_version and every sqlite_schema row (v its type), as rows of one statement. */
const IDENTITY_SQL = `SELECT 'app' AS k, application_id AS v, NULL AS name, NULL AS tbl_name, NULL AS sql FROM pragma_application_id()
  UNION ALL SELECT 'uv', user_version, NULL, NULL, NULL FROM pragma_user_version()
  UNION ALL SELECT 's', type, name, tbl_name, sql FROM sqlite_schema`;

const SCHEMA = `PRAGMA application_id = ${APPLICATION_ID}; PRAGMA user_version = ${userVersionFor(false)};\n${DDL}`;

function openNew(path: string): DatabaseSync {
  if (existsSync(path)) {
    throw new AcxError('cartridge-exists', `refusing to create ${path}: the file already exists`, {
      hint: 'choose another output path or remove the file first',
    });
  }
  return connect(path, false);
}

/**
 * Every connection acx opens on a cartridge. `trusted_schema = OFF`: SQL functions and virtual
 * tables a schema names run only if SQLite marks them harmless. The defensive flag turns off
 * what lets plain SQL corrupt the file (writable_schema and the like); node:sqlite honours the
 * option from Node 24.12 and 25.1 on, and older releases ignore it.
 */
function connect(path: string, readonly: boolean): DatabaseSync {
  const db = new DatabaseSync(path, { readOnly: readonly, defensive: true });
  try {
    db.exec('PRAGMA trusted_schema = OFF');
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

/**
 * SQLite opens whatever a path names: a FIFO blocks the open (and a FIFO where the rollback
 * journal would be blocks the first read), a device reads forever. Only regular files are
 * opened; symbolic links are followed to what they name.
 */
function assertRegularFile(path: string): void {
  let stat: Stats | undefined;
  try {
    stat = statSync(path, { throwIfNoEntry: false });
  } catch (error) {
    throw new AcxError('cartridge-unreadable', `${path} cannot be read: ${errorMessage(error)}`, { hint: 'check the path and its permissions' });
  }
  if (!stat) throw new AcxError('cartridge-missing', `no such cartridge: ${path}`, { hint: 'check the path' });
  if (!stat.isFile()) {
    throw new AcxError('cartridge-not-a-file', `${path} is not a regular file (it is ${fileKind(stat)}); acx opens only regular .acx files`, {
      hint: 'give the path of the cartridge file itself',
    });
  }
  for (const sibling of [`${path}-journal`, `${path}-wal`]) {
    let other: Stats | undefined;
    try {
      other = statSync(sibling, { throwIfNoEntry: false });
    } catch {
      continue; // unreadable: SQLite reports that itself
    }
    if (other && !other.isFile()) {
      throw new AcxError('cartridge-not-a-file', `${sibling} is ${fileKind(other)}, where SQLite keeps the cartridge's journal; acx will not open ${path} beside it`, {
        hint: `remove ${sibling}`,
      });
    }
  }
}

function fileKind(stat: Stats): string {
  if (stat.isDirectory()) return 'a directory';
  if (stat.isFIFO()) return 'a FIFO (named pipe)';
  if (stat.isSocket()) return 'a socket';
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return 'a device';
  return 'some other kind of file';
}

function pragma(db: DatabaseSync, name: string): unknown {
  const row = db.prepare(`PRAGMA ${name}`).get() as Record<string, unknown> | undefined;
  return row?.[name];
}

function notACartridge(path: string, why: string): AcxError {
  return new AcxError('cartridge-format', `${path} is not an .acx cartridge: ${why}`, {
    hint: 'acx reads SQLite files branded application_id 0x41435831; build one with `acx build`',
  });
}
