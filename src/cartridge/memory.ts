import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, openSync, closeSync, readFileSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { AcxError } from '../core/errors.ts';
import { canonicalJson } from '../util/jcs.ts';

export type Impact = 'positive' | 'neutral' | 'negative';

/** acx.memory-record.v1 as stored in `memory.payload` (SPEC §7). Extra fields are preserved. */
export interface MemoryRecord {
  id: string;
  title: string;
  summary: string;
  sourceType: string;
  portable: boolean;
  codebaseFingerprint: string | null;
  repoId: string | null;
  repoLabel: string;
  projectLabel: string;
  timestamp: string;
  impact: Impact;
  xpAwarded: number;
  tags: string[];
  artifactFingerprint?: string;
  zone?: 'rom' | 'save';
  [extra: string]: unknown;
}

const CBF = /^cbf1_[0-9a-f]{40}$/;

/** SPEC §7.3 content address: tier-independent, 10 hex chars of sha1 over the identity fields. */
export function artifactFingerprint(rec: Partial<MemoryRecord>): string {
  const norm = (v: unknown) => String(v ?? '').trim().toLowerCase();
  const identity = {
    title: norm(rec.title),
    summary: norm(rec.summary),
    sourceType: norm(rec.sourceType),
    repoId: rec.repoId ?? null,
    projectLabel: norm(rec.projectLabel),
    timestamp: rec.timestamp ?? '',
    impact: rec.impact ?? 'neutral',
    xpAwarded: rec.xpAwarded ?? 0,
    tags: [...(rec.tags ?? [])].map((t) => String(t).toLowerCase()).sort(),
  };
  return createHash('sha1').update(canonicalJson(identity)).digest('hex').slice(0, 10);
}

/** "cbf1_" + HMAC-SHA-256(salt, canonical repo identity), first 40 hex (SPEC §7.2). */
export function codebaseFingerprint(salt: Uint8Array | string, repoIdentity: string): string {
  const key = typeof salt === 'string' ? Buffer.from(salt, 'utf8') : Buffer.from(salt);
  if (key.length < 32) throw new AcxError('memory-salt', 'installation salt must be at least 256 bits');
  if (!repoIdentity) throw new AcxError('memory-repo', 'canonical repository identity is empty');
  return `cbf1_${createHmac('sha256', key).update(repoIdentity, 'utf8').digest('hex').slice(0, 40)}`;
}

/**
 * A SAVE record's host seal: "hs1_" + HMAC-SHA-256 over the fields a host shows of the record
 * (id, key, summary, codebase fingerprint), under a key derived from the installation salt.
 * It answers "did this installation write this?", which the codebase fingerprint cannot: the
 * fingerprint is no secret (every cartridge a host writes carries it), so anyone who has seen
 * one can stamp it on a record of their own. Only a holder of the salt can make a seal.
 *
 * Not sealed: the timestamp and tags, which the two-key merge rewrites (latest timestamp, union
 * of tags). When a merge takes text from another record, the seal no longer matches, so merged
 * content never passes as this host's.
 */
export function saveRecordSeal(salt: Uint8Array, rec: SealedFields): string {
  const key = createHmac('sha256', Buffer.from(salt)).update('acx save-record seal v1').digest();
  const fields = { codebaseFingerprint: rec.codebaseFingerprint ?? null, id: rec.id, key: rec.key ?? null, summary: rec.summary };
  return `hs1_${createHmac('sha256', key).update(canonicalJson(fields), 'utf8').digest('hex')}`;
}

/** Whether `rec` carries a seal this installation (salt) made over exactly these fields. */
export function hasHostSeal(salt: Uint8Array, rec: SealedFields & { hostSeal?: unknown }): boolean {
  if (typeof rec.hostSeal !== 'string') return false;
  const expected = Buffer.from(saveRecordSeal(salt, rec), 'utf8');
  const given = Buffer.from(rec.hostSeal, 'utf8');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export interface SealedFields {
  id: string;
  key?: string | null;
  summary: string;
  codebaseFingerprint?: string | null;
}

const DEFAULT_PORTS: Record<string, string> = { ssh: '22', 'git+ssh': '22', https: '443', http: '80', git: '9418' };

/**
 * host + "/" + path of a git origin: lowercased, credentials, default port and trailing ".git"
 * removed; falls back to "commit:<root sha>" when there is no remote.
 */
export function canonicalRepoIdentity(input: { originUrl?: string | null; rootCommit?: string | null }): string {
  const origin = input.originUrl?.trim();
  if (origin) {
    let scheme = 'ssh';
    let rest = origin;
    const m = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/i.exec(origin);
    if (m) {
      scheme = (m[1] ?? '').toLowerCase();
      rest = m[2] ?? '';
    } else {
      // scp-like: user@host:path
      rest = rest.replace(/^([^/@]+@)?([^/:]+):(?!\d+\/)/, '$1$2/');
    }
    rest = rest.replace(/^[^/@]*@/, ''); // credentials / ssh user
    const slash = rest.indexOf('/');
    let host = slash === -1 ? rest : rest.slice(0, slash);
    let path = slash === -1 ? '' : rest.slice(slash + 1);
    const port = /:(\d+)$/.exec(host);
    if (port && DEFAULT_PORTS[scheme] === port[1]) host = host.slice(0, port.index);
    path = path.replace(/[?#].*$/, '').replace(/\/+$/, '').replace(/\.git$/i, '').replace(/\/+$/, '');
    return `${host}/${path}`.toLowerCase();
  }
  const root = input.rootCommit?.trim();
  if (root && /^[0-9a-f]{7,64}$/i.test(root)) return `commit:${root.toLowerCase()}`;
  throw new AcxError('memory-repo', 'cannot identify the repository: no origin URL and no root commit', {
    hint: 'run inside a git repository with an origin remote or at least one commit',
  });
}

/** Reads origin URL / root commit of a working tree with git. */
export function repoIdentityOf(dir: string): string {
  const git = (args: string[]) => {
    const r = spawnSync('git', args, { cwd: dir, encoding: 'utf8' });
    return r.status === 0 ? r.stdout.trim().split('\n')[0] ?? '' : '';
  };
  return canonicalRepoIdentity({ originUrl: git(['config', '--get', 'remote.origin.url']), rootCommit: git(['rev-list', '--max-parents=0', 'HEAD']) });
}

/** Per-installation secret salt (hex, ≥256 bits), created with mode 0600 on first use. Never exported. */
export function loadOrCreateSalt(path: string): Buffer {
  if (existsSync(path)) {
    const text = readFileSync(path, 'utf8').trim();
    if (!/^[0-9a-f]{64,}$/i.test(text)) {
      throw new AcxError('memory-salt', `installation salt file ${path} is malformed`, {
        hint: 'it must hold at least 64 hex characters; restore it from backup (fingerprints depend on it)',
      });
    }
    return Buffer.from(text, 'hex');
  }
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const salt = randomBytes(32);
  const fd = openSync(path, 'wx', 0o600);
  try {
    writeSync(fd, `${salt.toString('hex')}\n`);
  } finally {
    closeSync(fd);
  }
  chmodSync(path, 0o600);
  return salt;
}

/** SPEC §7.1 tier invariants. Throws AcxError('memory-tier') on malformed combinations. */
export function validateMemoryRecord(rec: Partial<MemoryRecord>): void {
  const id = typeof rec.id === 'string' && rec.id ? rec.id : '?';
  const fail = (why: string) => {
    throw new AcxError('memory-tier', `memory record ${id}: ${why}`, {
      hint: 'portable:true records have codebaseFingerprint null and repoId null; portable:false records need a cbf1_ fingerprint',
    });
  };
  if (typeof rec.id !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/.test(rec.id)) fail("id must be 1-128 chars of [A-Za-z0-9._:/-]");
  if (typeof rec.portable !== 'boolean') fail("missing the boolean 'portable'");
  if (rec.portable) {
    if (rec.codebaseFingerprint != null) fail('portable:true must have codebaseFingerprint null');
    if (rec.repoId != null) fail('portable:true must have repoId null');
  } else if (typeof rec.codebaseFingerprint !== 'string' || !CBF.test(rec.codebaseFingerprint)) {
    fail('portable:false needs codebaseFingerprint "cbf1_" + 40 hex');
  }
  if (rec.impact !== undefined && !['positive', 'neutral', 'negative'].includes(rec.impact)) fail('impact must be positive, neutral or negative');
  if (rec.tags !== undefined && !Array.isArray(rec.tags)) fail('tags must be an array');
}

/** Completes a record: defaults, fingerprint, zone. The result is what goes into `payload`. */
export function normalizeMemoryRecord(rec: Partial<MemoryRecord> & { id: string; portable: boolean }): MemoryRecord {
  validateMemoryRecord(rec);
  const base: MemoryRecord = {
    ...rec,
    id: rec.id,
    title: String(rec.title ?? rec.id),
    summary: String(rec.summary ?? ''),
    sourceType: String(rec.sourceType ?? 'knowledge'),
    portable: rec.portable,
    codebaseFingerprint: rec.portable ? null : (rec.codebaseFingerprint ?? null),
    repoId: null,
    repoLabel: rec.portable ? 'portable-core' : 'field-learned',
    projectLabel: rec.portable ? 'portable-core' : 'field-learned',
    timestamp: String(rec.timestamp ?? new Date(0).toISOString()),
    impact: (rec.impact ?? 'neutral') as Impact,
    xpAwarded: Number(rec.xpAwarded ?? 0),
    tags: (rec.tags ?? []).map(String),
  };
  return { ...base, artifactFingerprint: artifactFingerprint(base), zone: rec.portable ? 'rom' : 'save' };
}

const IMPACT_RANK: Record<string, number> = { negative: 3, neutral: 2, positive: 1 };

/**
 * SPEC §7.3 two-key idempotent merge: dedupe by id, then by artifactFingerprint within one tier and
 * codebase; conflicts resolve the same way whatever the order (longer text, worse impact, max xp,
 * union of tags, latest timestamp). Merging never crosses the tier/codebase boundary.
 */
export function mergeMemoryRecords(existing: readonly MemoryRecord[], incoming: readonly MemoryRecord[]): MemoryRecord[] {
  const byId = new Map<string, MemoryRecord>();
  const bySecondKey = new Map<string, string>();
  const order: string[] = [];
  const secondKey = (r: MemoryRecord) => `${r.artifactFingerprint ?? artifactFingerprint(r)}|${r.portable ? 1 : 0}|${r.codebaseFingerprint ?? ''}`;
  for (const rec of [...existing, ...incoming]) {
    const r = { ...rec, artifactFingerprint: rec.artifactFingerprint ?? artifactFingerprint(rec) };
    const k2 = secondKey(r);
    const target = byId.has(r.id) ? r.id : bySecondKey.get(k2);
    if (target === undefined) {
      byId.set(r.id, r);
      bySecondKey.set(k2, r.id);
      order.push(r.id);
      continue;
    }
    const prev = byId.get(target) as MemoryRecord;
    if (prev.portable !== r.portable || (prev.codebaseFingerprint ?? null) !== (r.codebaseFingerprint ?? null)) {
      throw new AcxError('memory-merge', `refusing to merge ${prev.id} and ${r.id} across the tier/codebase boundary`);
    }
    byId.set(target, resolve(prev, r));
  }
  return order.map((id) => byId.get(id) as MemoryRecord);
}

function resolve(a: MemoryRecord, b: MemoryRecord): MemoryRecord {
  const [first, second] = a.id <= b.id ? [a, b] : [b, a];
  const longer = (x: string, y: string) => (x.length !== y.length ? (x.length > y.length ? x : y) : x <= y ? x : y);
  const merged: MemoryRecord = {
    ...first,
    title: longer(first.title, second.title),
    summary: longer(first.summary, second.summary),
    impact: (IMPACT_RANK[a.impact] ?? 2) >= (IMPACT_RANK[b.impact] ?? 2) ? a.impact : b.impact,
    xpAwarded: Math.max(a.xpAwarded ?? 0, b.xpAwarded ?? 0),
    tags: [...new Set([...a.tags, ...b.tags])].sort(),
    timestamp: a.timestamp >= b.timestamp ? a.timestamp : b.timestamp,
  };
  // The content address follows the merged content so the result is the same in any order.
  return { ...merged, artifactFingerprint: artifactFingerprint(merged) };
}
