import { timingSafeEqual, type KeyObject } from 'node:crypto';
import { AcxError, errorMessage } from '../util/errors.ts';
import { sha256Hex } from '../util/jcs.ts';
import { Cartridge } from './container.ts';
import { parseEnvelope, parseStatement, verifyEnvelopeSignature, type Statement } from './dsse.ts';
import { portablePathProblem, UNSIGNED_META_KEYS } from './format.ts';
import { keyIdOf, publicKeyFromPem } from './keys.ts';
import { computeRomManifest } from './manifest.ts';
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

/** Opens `path` read-only and evaluates the trust taxonomy. Throws AcxError if it is not a cartridge. */
export function verifyCartridge(path: string, options: VerifyOptions = {}): VerifyResult {
  const registry = typeof options.registry === 'string' ? loadTrustRegistry(options.registry) : options.registry;
  const cart = Cartridge.open(path, { readonly: true });
  try {
    return verifyOpen(cart, { ...options, registry: registry ?? emptyRegistry() });
  } finally {
    cart.close();
  }
}

/** Same as verifyCartridge on an already open cartridge. Never throws for content defects. */
export function verifyOpen(cart: Cartridge, options: VerifyOptions = {}): VerifyResult {
  try {
    return evaluate(cart, options);
  } catch (error) {
    // A damaged file must become a rejection, not a crash.
    return { verdict: 'tampered', reasons: [`cartridge could not be read: ${errorMessage(error)}`], warnings: [], manifestHash: null };
  }
}

function evaluate(cart: Cartridge, options: VerifyOptions): VerifyResult {
  const registry = typeof options.registry === 'object' ? options.registry : emptyRegistry();
  const now = (options.now ?? new Date()).getTime();
  const warnings: string[] = [];
  const structural = structuralProblems(cart, warnings);
  const manifest = computeRomManifest(cart);
  const manifestHash = manifest.manifestHash;
  const tampered = (reasons: string[], extra: Partial<VerifyResult> = {}): VerifyResult => ({
    verdict: 'tampered', reasons, warnings, manifestHash, ...extra,
  });

  // 1. tampered: content that no longer matches what was registered, or unsafe structure.
  const contentProblems = [
    ...structural,
    ...manifest.mismatches.map((m) => `ROM object ${m.sourceRef}: ${m.reason}`),
  ];
  const recorded = cart.getMeta('acx.rom_manifest_hash');
  if (recorded != null && !digestsEqual(recorded, manifestHash)) {
    contentProblems.push(`acx.rom_manifest_hash ${recorded} differs from the recomputed ${manifestHash}`);
  }
  if (contentProblems.length) return tampered(contentProblems);

  const sigRows = cart.db
    .prepare("SELECT * FROM signatures WHERE target='rom-manifest' ORDER BY created_at DESC, sig_id")
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
      if (entry) publicKey = publicKeyFromPem(entry.publicKeyPem);
      else if (typeof row.public_key_pem === 'string' && row.public_key_pem.trim()) {
        try {
          publicKey = publicKeyFromPem(row.public_key_pem);
        } catch (error) {
          return tampered([`${label}: embedded public key is unusable: ${errorMessage(error)}`], { keyid });
        }
        if (keyIdOf(publicKey) !== keyid) return tampered([`${label}: embedded public key does not match keyid ${keyid}`], { keyid });
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
function structuralProblems(cart: Cartridge, warnings: string[]): string[] {
  const problems: string[] = [];
  const romObjects = cart.objects('rom');
  const covered = new Set(romObjects.map((o) => o.source_ref));
  for (const row of cart.fileRows()) {
    const problem = portablePathProblem(row.name);
    if (problem) {
      problems.push(`unsafe archive path ${JSON.stringify(String(row.name).slice(0, 200))}: ${problem}`);
      continue;
    }
    if (row.name.startsWith('rom/') && !covered.has(row.name)) problems.push(`ROM file ${row.name} is not covered by the signed manifest`);
  }
  for (const obj of romObjects) {
    if (obj.source_ref.startsWith('save/')) problems.push(`ROM object points into the SAVE zone: ${obj.source_ref}`);
  }
  const memory = cart.db.prepare('SELECT id, zone, codebase_fingerprint, payload FROM memory').all() as Array<{
    id: string; zone: string; codebase_fingerprint: string | null; payload: string;
  }>;
  for (const m of memory) {
    if (m.zone === 'rom' && !covered.has(`memory:${m.id}`)) problems.push(`ROM memory ${m.id} is not covered by the signed manifest`);
    const tier = memoryTierProblem(m);
    if (tier) problems.push(`memory ${m.id}: ${tier}`);
  }
  if (cart.hasTable('capabilities')) {
    for (const c of cart.db.prepare('SELECT id FROM capabilities').all() as Array<{ id: string }>) {
      if (!covered.has(`capability:${c.id}`)) problems.push(`capability ${c.id} is not covered by the signed manifest`);
    }
  }
  if (cart.hasTable('acx_skill')) {
    for (const s of cart.db.prepare('SELECT sqlar_path, content_sha256 FROM acx_skill').all() as Array<{ sqlar_path: string; content_sha256: string }>) {
      const bytes = typeof s.sqlar_path === 'string' && !portablePathProblem(s.sqlar_path) ? cart.getFile(s.sqlar_path) : null;
      if (!bytes) problems.push(`skill index points at a missing SKILL.md ${String(s.sqlar_path)}`);
      else if (!digestsEqual(String(s.content_sha256).replace(/^sha256:/, ''), sha256Hex(bytes))) {
        problems.push(`skill index hash for ${s.sqlar_path} does not match the file`);
      }
    }
  }
  const unsigned = Object.keys(cart.allMeta()).filter((k) => !UNSIGNED_META_KEYS.has(k) && !covered.has(`cartridge:${k}`));
  if (unsigned.length) warnings.push(`metadata not covered by the signature (informational only): ${unsigned.join(', ')}`);
  return problems;
}

/** SPEC §7.1 tier rule on a stored memory row. */
export function memoryTierProblem(m: { zone: string; codebase_fingerprint: string | null; payload: string }): string | null {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(m.payload) as Record<string, unknown>;
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
