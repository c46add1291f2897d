import type { DatabaseSync } from 'node:sqlite';
import { DDL } from './format.ts';

/**
 * The schema objects a cartridge may hold, and the check that it holds nothing else.
 *
 * The signature covers rows (the ROM manifest), not the schema. A trigger, view or extra object
 * added to a signed file would therefore still verify, and a trigger runs inside acx's own
 * writes (an `AFTER INSERT ON sqlar` trigger fires when acx stores the compliance descriptor in
 * SAVE, and can delete the signatures). So every entry of `sqlite_schema` must be one of the
 * definitions below, compared token by token (case, whitespace and comments aside):
 *
 * - acx's own DDL (format.ts);
 * - SPEC §3.2 verbatim: `signatures` without acx's extra `public_key_pem` column, and `vectors`
 *   as a `vec0` virtual table (any arguments: its dimension is a template, §3.5) together with
 *   the shadow tables sqlite-vec keeps for it (and `sqlite_sequence`, which their AUTOINCREMENT
 *   keys bring). node:sqlite never loads vec0, so none of it runs;
 * - the reference implementation's `acx_skill`, keyed by `sqlar_path`;
 * - the indexes SQLite creates itself for those tables' keys (no SQL of their own), and its
 *   planner statistics tables (`ANALYZE`, `PRAGMA optimize`), which hold numbers only.
 *
 * Anything else — a trigger, a view, another table or index, or a known table redefined — is a
 * problem: `acx verify` calls the file tampered and acx never opens it for writing.
 */

/** SPEC §3.2 verbatim: `signatures` without `public_key_pem`. */
const SPEC_SIGNATURES = `CREATE TABLE signatures (
  sig_id TEXT PRIMARY KEY NOT NULL, target TEXT NOT NULL DEFAULT 'rom-manifest', manifest_hash TEXT NOT NULL,
  envelope TEXT NOT NULL, keyid TEXT NOT NULL, alg TEXT NOT NULL DEFAULT 'ed25519', created_at TEXT NOT NULL
) WITHOUT ROWID`;

/** The reference implementation's skill index: identity is the SKILL.md path (SPEC §5.3). */
const REFERENCE_ACX_SKILL = `CREATE TABLE acx_skill (
  sqlar_path TEXT PRIMARY KEY, name TEXT NOT NULL, description TEXT NOT NULL,
  license TEXT, compatibility TEXT, skill_version TEXT, body_tokens INTEGER,
  content_sha256 TEXT NOT NULL, resources TEXT NOT NULL, ext TEXT, schema_version TEXT NOT NULL
)`;

/** What SQLite writes for ANALYZE. */
const SQLITE_STATISTICS = 'CREATE TABLE sqlite_stat1(tbl,idx,stat); CREATE TABLE sqlite_stat4(tbl,idx,neq,nlt,ndlt,sample)';

/**
 * sqlite-vec's shadow tables of a vec0 table named `vectors`, and SQLite's own AUTOINCREMENT
 * counter that two of them bring along.
 */
const VEC0_SHADOW = /^vectors_(info|chunks|rowids|auxiliary|vector_chunks\d\d|metadatachunks\d\d|metadatatext\d\d)$/;
const SQLITE_SEQUENCE = 'create table sqlite_sequence ( name , seq )';

type Kind = 'table' | 'index' | 'view' | 'trigger' | 'virtual table';

interface Definition {
  kind: Kind;
  /** The statement's tokens, joined by single spaces. */
  canonical: string;
}

/** One row of sqlite_schema, as read (any column may hold anything in a hostile file). */
export interface SchemaRow {
  type: unknown;
  name: unknown;
  tbl_name: unknown;
  sql: unknown;
}

let accepted: Map<string, Definition[]> | undefined;

/** Object name (lower case) -> the definitions the format allows for it. */
function acceptedDefinitions(): Map<string, Definition[]> {
  if (accepted) return accepted;
  const map = new Map<string, Definition[]>();
  for (const text of [DDL, SPEC_SIGNATURES, REFERENCE_ACX_SKILL, SQLITE_STATISTICS]) {
    for (const tokens of splitStatements(tokenize(text))) {
      const head = describeTokens(tokens);
      if (!head) continue;
      const list = map.get(head.name) ?? [];
      list.push({ kind: head.kind, canonical: tokens.join(' ') });
      map.set(head.name, list);
    }
  }
  accepted = map;
  return map;
}

/**
 * Every schema entry of the open database that the format does not define, as readable problems
 * (empty when the schema is the format's). Reads `sqlite_schema` only: call it before anything
 * else reads the file, since a view can stand in for a table.
 */
export function schemaProblems(db: DatabaseSync): string[] {
  return schemaRowProblems(db.prepare('SELECT type, name, tbl_name, sql FROM sqlite_schema').all() as unknown as SchemaRow[]);
}

/** schemaProblems of sqlite_schema's rows read by the caller (all of them, before any other read of the file). */
export function schemaRowProblems(rows: readonly SchemaRow[]): string[] {
  const problems: string[] = [];
  const tables = new Set<string>();
  const automatic: SchemaRow[] = [];
  const shadows: string[] = [];
  let vec0 = false;
  // SQLite refuses to load a schema with two objects of one name, or an entry whose type or name
  // disagrees with its SQL, so each entry's SQL alone says what the object is.
  for (const row of rows) {
    if (row.sql == null) {
      automatic.push(row);
      continue;
    }
    const statement = classify(String(row.sql));
    if (statement.role === 'foreign') problems.push(statement.problem);
    else if (statement.role === 'vec0') vec0 = true;
    else if (statement.role === 'vec0-shadow') shadows.push(statement.name);
    else if (statement.kind === 'table') tables.add(statement.name);
  }
  for (const shadow of shadows) {
    if (!vec0) problems.push(`table ${shadow} is not part of the cartridge format (no vec0 table "vectors" owns it)`);
    else tables.add(shadow);
  }
  for (const row of automatic) {
    const name = String(row.name ?? '');
    const table = String(row.tbl_name ?? '').toLowerCase();
    const own = row.type === 'index' && tables.has(table) && name.toLowerCase().startsWith(`sqlite_autoindex_${table}_`);
    if (!own) problems.push(`schema entry ${JSON.stringify(name)} (${String(row.type)} without SQL) is not part of the cartridge format`);
  }
  return problems;
}

type Statement =
  | { role: 'format' | 'vec0' | 'vec0-shadow'; kind: Kind; name: string }
  | { role: 'foreign'; problem: string };

// The same few statements recur in every cartridge: each distinct text is judged once per process.
const judged = new Map<string, Statement>();

/** What one schema entry's SQL is, as far as the format is concerned. */
function classify(sql: string): Statement {
  const known = judged.get(sql);
  if (known) return known;
  const tokens = tokenize(sql);
  const head = describeTokens(tokens);
  const canonical = tokens.join(' ');
  let statement: Statement;
  if (!head) {
    statement = { role: 'foreign', problem: `schema entry ${JSON.stringify(sql.slice(0, 60))} is not part of the cartridge format` };
  } else if (head.name === 'vectors' && head.kind === 'virtual table' && tokens[tokens.indexOf('using') + 1] === 'vec0') {
    statement = { role: 'vec0', kind: head.kind, name: head.name };
  } else if ((VEC0_SHADOW.test(head.name) && head.kind === 'table') || canonical === SQLITE_SEQUENCE) {
    statement = { role: 'vec0-shadow', kind: head.kind, name: head.name };
  } else {
    const allowed = acceptedDefinitions().get(head.name);
    statement = allowed?.some((d) => d.kind === head.kind && d.canonical === canonical)
      ? { role: 'format', kind: head.kind, name: head.name }
      : { role: 'foreign', problem: `${label(head)} ${allowed ? "differs from the format's definition" : 'is not part of the cartridge format'}` };
  }
  if (judged.size >= 256) judged.clear();
  judged.set(sql, statement);
  return statement;
}

function label(head: { kind: Kind; name: string; table: string }): string {
  const name = JSON.stringify(head.name);
  if (head.kind === 'trigger' || head.kind === 'index') return `${head.kind} ${name} on ${head.table || '?'}`;
  return `${head.kind} ${name}`;
}

/** What a CREATE statement makes: its kind, name and (for an index or trigger) its table. */
function describeTokens(tokens: readonly string[]): { kind: Kind; name: string; table: string } | null {
  if (tokens[0] !== 'create') return null;
  let i = 1;
  if (tokens[i] === 'temp' || tokens[i] === 'temporary' || tokens[i] === 'unique') i++;
  let kind: Kind;
  if (tokens[i] === 'virtual' && tokens[i + 1] === 'table') {
    kind = 'virtual table';
    i += 2;
  } else if (tokens[i] === 'table' || tokens[i] === 'index' || tokens[i] === 'view' || tokens[i] === 'trigger') {
    kind = tokens[i] as Kind;
    i++;
  } else {
    return null;
  }
  if (tokens[i] === 'if' && tokens[i + 1] === 'not' && tokens[i + 2] === 'exists') i += 3;
  let name = tokens[i] ?? '';
  if (tokens[i + 1] === '.') name = tokens[(i += 2)] ?? ''; // schema-qualified
  let table = kind === 'table' || kind === 'virtual table' || kind === 'view' ? name : '';
  if (kind === 'index' || kind === 'trigger') {
    const on = tokens.indexOf('on', i + 1);
    if (on !== -1) table = tokens[on + 1] ?? '';
  }
  return name ? { kind, name, table } : null;
}

function splitStatements(tokens: readonly string[]): string[][] {
  const out: string[][] = [[]];
  for (const token of tokens) {
    if (token === ';') out.push([]);
    else out[out.length - 1]!.push(token);
  }
  return out.filter((s) => s.length > 0);
}

/**
 * SQL as tokens: keywords and identifiers in lower case (SQLite compares them that way, and a
 * quoted identifier names the same object as a bare one), string literals verbatim, comments and
 * whitespace dropped. An unterminated quote or comment runs to the end.
 */
function tokenize(sql: string): string[] {
  const tokens: string[] = [];
  for (const [token] of sql.matchAll(TOKEN)) {
    const c = token[0]!;
    if (c === "'") tokens.push(token);
    else if (c === '"' || c === '`' || c === '[') tokens.push(unquote(token).toLowerCase());
    else if (!/^(\s|--|\/\*)/.test(token)) tokens.push(token.toLowerCase());
  }
  return tokens;
}

const TOKEN = /\s+|--[^\n]*|\/\*[\s\S]*?(?:\*\/|$)|'(?:[^']|'')*'?|"(?:[^"]|"")*"?|`(?:[^`]|``)*`?|\[[^\]]*\]?|[A-Za-z0-9_$\u0080-\uffff]+|[\s\S]/g;

function unquote(token: string): string {
  const open = token[0]!;
  const close = open === '[' ? ']' : open;
  const body = token.endsWith(close) && token.length > 1 ? token.slice(1, -1) : token.slice(1);
  return open === '[' ? body : body.replaceAll(close + close, close);
}
