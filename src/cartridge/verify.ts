import { timingSafeEqual, type KeyObject } from 'node:crypto';
import { AcxError, errorMessage } from '../core/errors.ts';
import { sha256Hex } from '../util/jcs.ts';
import { Cartridge, type SnapshotSchema } from './container.ts';
import { parseEnvelope, parseStatement, verifyEnvelopeSignature, type Statement } from './dsse.ts';
import { portablePathProblem, UNSIGNED_META_KEYS } from './format.ts';
import { keyIdOf, publicKeyFromPem } from './keys.ts';
import { schemaProblems, schemaRowProblems } from './schema.ts';
import { compareCodePoints, computeRomManifest, liveSize, readRomSources, type RomSources } from './manifest.ts';
import { emptyRegistry, loadTrustRegistry, trustProblems, type LoadedRegistry } from './trust.ts';

/** SPEC §4.5, in evaluation order. Only `tampered` is a rejection. */
export type Verdict = 'tampered' | 'legacy' | 'portable' | 'trusted' | 'local';

export interface VerifyResult {
  verdict: Verdict;
  /** Why this verdict (and not a better one). */
  reasons: string[];
  /** Things worth knowing that do not change the verdict. */
  warnings: string[];
  /** The recomputed ROM manifest hash ("sha256:…"), null only if it could not be computed. */
  manifestHash: string | null;
  keyid?: string;
  publisherId?: string;
  signedAt?: string;
}

export interface VerifyOptions {
  /** A loaded registry, or a path to an acx.trust-registry/1 file. */
  registry?: LoadedRegistry | string;
  /** Keyids of this installation's own keys (`local` verdict). */
  ownKeys?: readonly string[];
  /** Verification time; defaults to now. */
  now?: Date;
}

const RANK: Record<Verdict, number> = { tampered: 0, legacy: 1, portable: 2, trusted: 3, local: 4 };

/**
 * The one place a registry option becomes a registry: a path is loaded (a missing or invalid file
 * is an error, never an empty registry that would quietly turn trusted signers portable).
 */
function loadedRegistry(registry: VerifyOptions['registry']): LoadedRegistry {
  if (typeof registry === 'string') return loadTrustRegistry(registry);
  return registry ?? emptyRegistry();
}

/** Opens `path` read-only and evaluates the trust taxonomy. Throws AcxError if it is not a cartridge. */
export function verifyCartridge(path: string, options: VerifyOptions = {}): VerifyResult {
  const registry = loadedRegistry(options.registry);
  // The identity check and the whole evaluation read one snapshot of the file.
  return Cartridge.readSnapshot(path, (cart, schema) => verifyGuarded(cart, { ...options, registry }, schema));
}

/** Same as verifyCartridge on an already open cartridge. Never throws for content defects. */
export function verifyOpen(cart: Cartridge, options: VerifyOptions = {}): VerifyResult {
  return verifyGuarded(cart, { ...options, registry: loadedRegistry(options.registry) });
}

function verifyGuarded(cart: Cartridge, options: VerifyOptions, schema?: SnapshotSchema): VerifyResult {
  try {
    // One read transaction: a consistent snapshot, and one lock/check of the file for all reads.
    return cart.read(() => evaluate(cart, options, schema));
  } catch (error) {
    // A damaged file must become a rejection, not a crash.
    return { verdict: 'tampered', reasons: [`cartridge could not be read: ${errorMessage(error)}`], warnings: [], manifestHash: null };
  }
}

/** Runs inside one read transaction; `snapshot`, when given, was read in it. */
function evaluate(cart: Cartridge, options: VerifyOptions, snapshot: SnapshotSchema | undefined): VerifyResult {
  const registry = loadedRegistry(options.registry);
  const now = (options.now ?? new Date()).getTime();
  // First, before any other read: a schema object the format does not define (a trigger would
  // run inside acx's SAVE writes; a view could stand in for a table) is tampering on its own.
  const schema = snapshot ? schemaRowProblems(snapshot.rows) : schemaProblems(cart.db);
  if (schema.length) return { verdict: 'tampered', reasons: schema, warnings: [], manifestHash: null };
  const tables = snapshot?.tables ?? cart.tableNames();
  const warnings: string[] = [];
  const sources = readRomSources(cart, tables);
  // Every ROM object's oid is recomputed from its live source here; the structural checks then
  // reuse those digests (same bytes, same snapshot) instead of hashing the files again.
  const manifest = computeRomManifest(cart, sources);
  const structural = structuralProblems(cart, sources, tables, warnings);
  const manifestHash = manifest.manifestHash;
  const tampered = (reasons: string[], extra: Partial<VerifyResult> = {}): VerifyResult => ({
    verdict: 'tampered', reasons, warnings, manifestHash, ...extra,
  });

  // 1. tampered: content that no longer matches what was registered, or unsafe structure.
  const contentProblems = [
    ...structural,
    ...manifest.mismatches.map((m) => `ROM object ${m.sourceRef}: ${m.reason}`),
  ];
  const recorded = sources.meta.get('acx.rom_manifest_hash') ?? null;
  if (recorded != null && !digestsEqual(recorded, manifestHash)) {
    const differs = `acx.rom_manifest_hash ${recorded} differs from the recomputed ${manifestHash}`;
    // With every source matching its row, the change is in the objects table itself.
    if (manifest.mismatches.length > 0) contentProblems.push(differs);
    else contentProblems.push(`${differs}: a row of the objects table was added, removed or changed`, ...objectsTableSuspects(cart, sources));
  }
  if (contentProblems.length) return tampered(contentProblems);

  const sigRows = cart
    .stmt("SELECT * FROM signatures WHERE target='rom-manifest' ORDER BY created_at DESC, sig_id")
    .all() as Array<Record<string, unknown>>;
  // 2. legacy: no DSSE envelope at all.
  if (sigRows.length === 0) {
    return { verdict: 'legacy', reasons: ['no DSSE signature over the ROM manifest (unsigned or pre-standard)'], warnings, manifestHash };
  }

  let best: VerifyResult | null = null;
  for (const row of sigRows) {
    const label = `signature ${String(row.sig_id)}`;
    if (typeof row.manifest_hash !== 'string' || !digestsEqual(row.manifest_hash, manifestHash)) {
      return tampered([`${label} records manifest hash ${String(row.manifest_hash)}, the ROM hashes to ${manifestHash}`]);
    }
    let env;
    try {
      env = parseEnvelope(row.envelope);
    } catch (error) {
      return tampered([`${label}: ${errorMessage(error)}`]);
    }
    for (let i = 0; i < env.signatures.length; i++) {
      const keyid = env.signatures[i]?.keyid ?? (typeof row.keyid === 'string' ? row.keyid : '');
      const entry = registry.byKeyId.get(keyid);
      let publicKey: KeyObject | null = null;
      if (entry) publicKey = cachedPublicKey(entry.publicKeyPem).key;
      else if (typeof row.public_key_pem === 'string' && row.public_key_pem.trim()) {
        let parsed: { key: KeyObject; keyid: string };
        try {
          parsed = cachedPublicKey(row.public_key_pem);
        } catch (error) {
          return tampered([`${label}: embedded public key is unusable: ${errorMessage(error)}`], { keyid });
        }
        publicKey = parsed.key;
        if (parsed.keyid !== keyid) return tampered([`${label}: embedded public key does not match keyid ${keyid}`], { keyid });
      }
      if (!publicKey) {
        const result: VerifyResult = {
          verdict: 'legacy',
          reasons: [`${label} by ${keyid} cannot be checked: no public key in the cartridge or the registry`],
          warnings, manifestHash, keyid,
        };
        best = pickBetter(best, result);
        continue;
      }
      const checked = verifyEnvelopeSignature(env, i, publicKey);
      if (!checked.ok) return tampered([`${label}: ${checked.reason}`], { keyid });
      let statement: Statement;
      try {
        statement = parseStatement(checked.payload);
      } catch (error) {
        return tampered([`${label}: ${errorMessage(error)}`], { keyid });
      }
      const subject = statement.subject[0]?.digest.sha256 ?? '';
      if (!digestsEqual(subject, manifest.manifestHashHex)) {
        return tampered([`${label}: signed subject digest ${subject} is not the ROM manifest hash ${manifest.manifestHashHex}`], { keyid });
      }
      for (const field of ['manifestHash', 'romDigest'] as const) {
        const v = statement.predicate[field];
        if (v != null && !digestsEqual(String(v), manifestHash)) {
          return tampered([`${label}: predicate.${field} ${String(v)} is not the ROM manifest hash`], { keyid });
        }
      }
      const publisherId = typeof statement.predicate.publisherId === 'string' ? statement.predicate.publisherId : undefined;
      const signedAt = typeof statement.predicate.signedAt === 'string' ? statement.predicate.signedAt : undefined;
      const facts = { keyid, ...(publisherId ? { publisherId } : {}), ...(signedAt ? { signedAt } : {}) };
      let result: VerifyResult;
      if (!entry) {
        result = { verdict: 'portable', reasons: [`signature is valid but key ${keyid} is not in the trust registry`], warnings, manifestHash, ...facts };
      } else {
        const judged = trustProblems(entry, { publisherId: publisherId ?? null, signedAt: signedAt ?? null, now });
        if (judged.compromised) return tampered(judged.problems, facts);
        result = judged.problems.length
          ? { verdict: 'portable', reasons: judged.problems, warnings, manifestHash, ...facts }
          : (options.ownKeys ?? []).includes(keyid)
            ? { verdict: 'local', reasons: [`signed by this installation's own key, active for ${entry.publisherId}`], warnings, manifestHash, ...facts }
            : { verdict: 'trusted', reasons: [`signed by ${entry.publisherId} with an active registry key`], warnings, manifestHash, ...facts };
      }
      best = pickBetter(best, result);
    }
  }
  return best ?? { verdict: 'legacy', reasons: ['no usable signature'], warnings, manifestHash };
}

/** Problems that make a cartridge unsafe or inconsistent regardless of its signature. */
function structuralProblems(cart: Cartridge, sources: RomSources, tables: ReadonlySet<string>, warnings: string[]): string[] {
  const problems: string[] = [...sources.keyProblems];
  const romObjects = sources.objects;
  const covered = new Set(romObjects.map((o) => o.source_ref));
  const names = new Set<unknown>();
  for (const row of cart.stmt('SELECT name FROM sqlar ORDER BY name').all() as Array<{ name: unknown }>) {
    if (names.has(row.name)) problems.push(`archive path ${JSON.stringify(String(row.name).slice(0, 200))} appears more than once`);
    names.add(row.name);
    const problem = portablePathProblem(row.name);
    if (problem) {
      problems.push(`unsafe archive path ${JSON.stringify(String(row.name).slice(0, 200))}: ${problem}`);
      continue;
    }
    const name = row.name as string;
    if (name.startsWith('rom/') && !covered.has(name)) problems.push(`ROM file ${name} is not covered by the signed manifest`);
  }
  for (const obj of romObjects) {
    if (obj.source_ref.startsWith('save/')) problems.push(`ROM object points into the SAVE zone: ${obj.source_ref}`);
  }
  for (const m of sources.memory.values()) {
    if (m.zone === 'rom' && !covered.has(`memory:${m.id}`)) problems.push(`ROM memory ${m.id} is not covered by the signed manifest`);
    const tier = memoryTierProblem(m);
    if (tier) problems.push(`memory ${m.id}: ${tier}`);
  }
  for (const id of sources.capabilities?.keys() ?? []) {
    if (!covered.has(`capability:${id}`)) problems.push(`capability ${id} is not covered by the signed manifest`);
  }
  if (tables.has('acx_skill')) {
    for (const s of cart.stmt('SELECT sqlar_path, content_sha256 FROM acx_skill').all() as Array<{ sqlar_path: string; content_sha256: string }>) {
      const path = typeof s.sqlar_path === 'string' && !portablePathProblem(s.sqlar_path) ? s.sqlar_path : null;
      // The manifest pass already hashed this file's live bytes in this snapshot (when it is a ROM object).
      let digest = path ? sources.fileDigests.get(path) : undefined;
      if (path && digest === undefined) {
        const bytes = cart.getFile(path, sources.inflateBudget);
        if (bytes) digest = sha256Hex(bytes);
      }
      if (digest === undefined) problems.push(`skill index points at a missing SKILL.md ${String(s.sqlar_path)}`);
      else if (!digestsEqual(String(s.content_sha256).replace(/^sha256:/, ''), digest)) {
        problems.push(`skill index hash for ${s.sqlar_path} does not match the file`);
      }
    }
  }
  const unsigned = uncoveredMetaKeys(sources);
  if (unsigned.length) warnings.push(`metadata not covered by the signature (informational only): ${unsigned.join(', ')}`);
  return problems;
}

/** Meta keys of the ROM zone that no objects row covers (informational in a cartridge as built). */
function uncoveredMetaKeys(sources: RomSources): string[] {
  const covered = new Set(sources.objects.map((o) => o.source_ref));
  return [...sources.meta.keys()].sort(compareCodePoints).filter((k) => !UNSIGNED_META_KEYS.has(k) && !covered.has(`cartridge:${k}`));
}

/**
 * Once the objects table no longer hashes to the recorded manifest, the rows that can explain it,
 * so the reason names them: a recorded size its source does not have, and meta keys left
 * without a row (where a removed row shows).
 */
function objectsTableSuspects(cart: Cartridge, sources: RomSources): string[] {
  const suspects: string[] = [];
  for (const obj of sources.objects) {
    const size = liveSize(cart, obj, sources);
    if (size !== null && size !== Number(obj.sz)) suspects.push(`ROM object ${obj.source_ref}: the objects row records ${String(obj.sz)} bytes, its source has ${size}`);
  }
  const uncovered = uncoveredMetaKeys(sources);
  if (uncovered.length) suspects.push(`meta keys without an objects row: ${uncovered.join(', ')}`);
  return suspects;
}

// Parsed public keys by PEM text: KeyObjects are immutable, and parsing plus deriving the keyid
// costs more than the signature check itself. Bounded: a long-lived process sees few keys.
const publicKeys = new Map<string, { key: KeyObject; keyid: string }>();

function cachedPublicKey(pem: string): { key: KeyObject; keyid: string } {
  let hit = publicKeys.get(pem);
  if (!hit) {
    const key = publicKeyFromPem(pem);
    hit = { key, keyid: keyIdOf(key) };
    if (publicKeys.size >= 64) publicKeys.clear();
    publicKeys.set(pem, hit);
  }
  return hit;
}

/** SPEC §7.1 tier rule on a stored memory row. */
export function memoryTierProblem(m: { zone: string; codebase_fingerprint: string | null; payload: string | null }): string | null {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(m.payload as string) as Record<string, unknown>;
  } catch {
    return 'payload is not JSON';
  }
  if (!rec || typeof rec !== 'object' || Array.isArray(rec)) return 'payload is not an object';
  if (typeof rec.portable !== 'boolean') return "payload lacks the boolean 'portable'";
  const fp = rec.codebaseFingerprint ?? null;
  if (rec.portable) {
    if (m.zone !== 'rom') return 'portable:true record stored in the SAVE zone';
    if (fp !== null || m.codebase_fingerprint != null) return 'portable:true record carries a codebase fingerprint';
  } else {
    if (m.zone !== 'save') return 'portable:false record stored in the ROM zone';
    if (typeof fp !== 'string' || !/^cbf1_[0-9a-f]{40}$/.test(fp) || m.codebase_fingerprint !== fp) {
      return 'portable:false record needs a matching cbf1_ codebase fingerprint';
    }
  }
  return null;
}

function pickBetter(a: VerifyResult | null, b: VerifyResult): VerifyResult {
  return !a || RANK[b.verdict] > RANK[a.verdict] ? b : a;
}

/** Constant-time string comparison for digests. */
export function digestsEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

export function assertNotTampered(result: VerifyResult): void {
  if (result.verdict === 'tampered') {
    throw new AcxError('cartridge-tampered', `cartridge rejected: ${result.reasons.join('; ')}`, {
      hint: 'do not run this file; get a fresh copy from its publisher',
    });
  }
}
