import { AcxError } from '../core/errors.ts';

/** SPEC §3.1: ASCII "ACX1" at header offset 68. */
export const APPLICATION_ID = 1094932529;
/** SPEC §3.1: [spec major 1][spec minor 0][vec0 format 1][flags]. */
export const USER_VERSION_BASE = 0x01000100;
export const FLAG_SAVE_PRESENT = 0x01;
export const SPEC_MAJOR = 1;
export const SPEC_VERSION = '0.1';
export const MEDIA_TYPE = 'application/vnd.acx.cartridge';

export type Zone = 'rom' | 'save';

/**
 * SPEC §3.2 tables. Two deliberate, reader-compatible deviations, shared with the reference
 * implementation: `vectors` is a plain derived table (node:sqlite cannot load sqlite-vec; vectors
 * are never signed), and `signatures` carries an extra `public_key_pem` column so a cartridge can
 * be checked without a registry. `acx_skill` (§5.3) and `capabilities` (§6.1) are created empty so
 * every cartridge has the same shape.
 */
export const DDL = `
CREATE TABLE cartridge (
  key   TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE sqlar (
  name TEXT PRIMARY KEY,
  mode INT, mtime INT,
  sz INT,
  data BLOB
);

CREATE TABLE memory (
  id                   TEXT PRIMARY KEY NOT NULL,
  zone                 TEXT NOT NULL CHECK (zone IN ('rom','save')),
  artifact_fingerprint TEXT NOT NULL,
  codebase_fingerprint TEXT,
  payload              TEXT NOT NULL,
  oid                  TEXT NOT NULL,
  created_at           TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX memory_zone_fp ON memory(zone, artifact_fingerprint);

CREATE TABLE vectors (
  memory_id            TEXT PRIMARY KEY,
  zone                 TEXT NOT NULL,
  embedding            BLOB NOT NULL,
  artifact_fingerprint TEXT
);

CREATE TABLE objects (
  oid        TEXT PRIMARY KEY NOT NULL,
  kind       TEXT NOT NULL CHECK (kind IN ('sqlar','memory','cartridge','skill','attestation')),
  source_ref TEXT NOT NULL,
  canon      TEXT NOT NULL,
  zone       TEXT NOT NULL CHECK (zone IN ('rom','save')),
  sz         INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE signatures (
  sig_id         TEXT PRIMARY KEY NOT NULL,
  target         TEXT NOT NULL DEFAULT 'rom-manifest',
  manifest_hash  TEXT NOT NULL,
  envelope       TEXT NOT NULL,
  keyid          TEXT NOT NULL,
  public_key_pem TEXT,
  alg            TEXT NOT NULL DEFAULT 'ed25519',
  created_at     TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE attestations (
  att_id      TEXT PRIMARY KEY NOT NULL,
  type        TEXT NOT NULL,
  subject_oid TEXT,
  media_type  TEXT NOT NULL,
  document    TEXT NOT NULL,
  status_url  TEXT,
  created_at  TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE acx_skill (
  name           TEXT PRIMARY KEY,
  description    TEXT NOT NULL,
  license        TEXT, compatibility TEXT, skill_version TEXT,
  sqlar_path     TEXT NOT NULL,
  body_tokens    INTEGER,
  content_sha256 TEXT NOT NULL,
  resources      TEXT NOT NULL,
  ext            TEXT,
  schema_version TEXT NOT NULL
);

CREATE TABLE capabilities (
  id           TEXT PRIMARY KEY NOT NULL,
  json         TEXT NOT NULL,
  content_hash TEXT NOT NULL
);
`;

/** Tables a reader needs; a file missing one of them is not a cartridge. */
export const REQUIRED_TABLES = ['cartridge', 'sqlar', 'memory', 'objects', 'signatures'] as const;

const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** SPEC §3.2 portable path rule; returns why a name is unsafe, or null when it is fine. */
export function portablePathProblem(name: unknown): string | null {
  if (typeof name !== 'string') return 'name is not a string';
  if (name.includes('\0')) return 'contains NUL';
  if (name.includes('\\')) return 'contains a backslash';
  if (name.startsWith('/')) return 'is absolute';
  const segments = name.split('/');
  if (segments.length < 2) return 'needs at least two segments (rom/... or save/...)';
  if (segments[0] !== 'rom' && segments[0] !== 'save') return "first segment must be 'rom' or 'save'";
  for (const segment of segments) {
    if (segment === '' || segment === '.' || segment === '..') return `has an empty, '.' or '..' segment`;
    if (!SEGMENT.test(segment)) return `segment '${segment.slice(0, 40)}' is not portable ([A-Za-z0-9][A-Za-z0-9._-]{0,127})`;
  }
  return null;
}

export function assertPortablePath(name: string): void {
  const problem = portablePathProblem(name);
  if (problem) {
    throw new AcxError('cartridge-path', `unsafe archive path ${JSON.stringify(name)}: ${problem}`, {
      hint: 'archive names must be relative rom/... or save/... paths of plain ASCII segments',
    });
  }
}

export function zoneOf(name: string): Zone {
  assertPortablePath(name);
  return name.startsWith('rom/') ? 'rom' : 'save';
}

export function userVersionFor(savePresent: boolean): number {
  return USER_VERSION_BASE | (savePresent ? FLAG_SAVE_PRESENT : 0);
}

/** Meta keys that belong to the SAVE zone or to the signature and are never ROM objects. */
export const UNSIGNED_META_KEYS = new Set(['acx.rom_manifest_hash', 'acx.save_codebase_fingerprint']);
