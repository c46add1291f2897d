import { existsSync, readFileSync } from 'node:fs';
import { writeFileAtomic } from '../util/atomic-write.ts';
import { AcxError, errorMessage } from '../core/errors.ts';
import { keyIdOf, publicKeyFromPem } from './keys.ts';
import {
  dnsChallengeRecord,
  githubOwnerOf,
  GITHUB_OIDC_ISSUER,
  isRfc3339,
  KEYID,
  loadTrustRegistry,
  namespaceProofProblems,
  parseTrustRegistry,
  PUBLISHER_ID,
  type NamespaceProof,
  type RevocationReason,
  type TrustedKey,
  type TrustRegistry,
  TRUST_REGISTRY_SCHEMA,
} from './trust.ts';

/**
 * The trust files an installation keeps (docs/trust.md): an acx.trust-registry/1 file edited by
 * `acx trust` and `acx keygen --trust`, and the list of the installation's own keyids (what makes
 * a trusted verdict `local`). Every write validates the whole new document first and replaces the
 * file atomically; a file that does not parse is reported and never overwritten.
 */

/** How long a newly trusted key stays valid when no --not-after is given. */
export const DEFAULT_VALIDITY_YEARS = 2;

export interface TrustKeyInput {
  /** An Ed25519 public key (SPKI PEM) for a new entry, or the keyid of one already in the registry. */
  key: { publicKeyPem: string } | { keyid: string };
  /** Reverse-DNS publisher id; required for a new entry. */
  publisherId?: string;
  /** RFC 3339; a new entry defaults to `now`. */
  notBefore?: string;
  /** RFC 3339; a new entry defaults to notBefore + DEFAULT_VALIDITY_YEARS. */
  notAfter?: string;
  /** io.github.* publishers: the GitHub Actions OIDC subject that proves the namespace, e.g. repo:alice/agents:ref:refs/heads/main. */
  oidcSubject?: string;
  now?: Date;
}

export interface TrustChange {
  entry: TrustedKey;
  change: 'added' | 'updated' | 'unchanged';
}

/** The registry document at `path`, or an empty one when the file does not exist yet. */
export function readRegistryDocument(path: string): TrustRegistry {
  if (!existsSync(path)) return { schemaVersion: TRUST_REGISTRY_SCHEMA, keys: [] };
  return loadTrustRegistry(path).registry;
}

/**
 * Adds a key to the registry at `path` (creating the file), or updates its entry. `dryRun` checks
 * everything and reports the change without writing.
 */
export function trustKey(path: string, input: TrustKeyInput, options: { dryRun?: boolean } = {}): TrustChange {
  const doc = readRegistryDocument(path);
  const now = input.now ?? new Date();
  const keyid = 'keyid' in input.key ? checkedKeyId(input.key.keyid) : keyIdFromPublicPem(input.key.publicKeyPem);
  const index = doc.keys.findIndex((k) => k.keyid === keyid);
  const existing = index >= 0 ? doc.keys[index] : undefined;
  if (!existing && 'keyid' in input.key) {
    throw trustError(`${keyid} is not in the trust registry ${path}`, 'pass the public key file (…pub.pem) to add it: the registry stores the key itself, so a keyid alone can only change an entry already there');
  }
  if (existing?.status === 'revoked') {
    throw trustError(`${keyid} was revoked (${existing.revocationReason}) at ${existing.revokedAt}; a revocation is final`, 'create a new key with `acx keygen` and trust that one instead');
  }
  const publisherId = input.publisherId ?? existing?.publisherId;
  if (!publisherId) throw usageError('a new registry entry needs its publisher', 'pass --publisher with the reverse-DNS id the key signs for, e.g. io.github.alice');
  if (!PUBLISHER_ID.test(publisherId)) throw usageError(`publisher ${JSON.stringify(publisherId)} is not a reverse-DNS id`, 'use your namespace reversed, e.g. io.github.alice or com.example.team');
  const notBefore = checkedTime(input.notBefore, '--not-before') ?? existing?.notBefore ?? now.toISOString();
  const notAfter = checkedTime(input.notAfter, '--not-after') ?? existing?.notAfter ?? yearsAfter(notBefore, DEFAULT_VALIDITY_YEARS);
  if (Date.parse(notBefore) > Date.parse(notAfter)) throw usageError(`--not-before ${notBefore} is after --not-after ${notAfter}`);
  if (Date.parse(notAfter) <= now.getTime()) throw usageError(`the validity window ends at ${notAfter}, which has passed`, 'give a --not-after in the future');
  // A proof is recorded for a new publisher or when a new subject is given; otherwise kept.
  const keepProof = existing?.namespaceProof && existing.publisherId === publisherId && input.oidcSubject === undefined;
  const namespaceProof = keepProof ? existing.namespaceProof! : proofFor(publisherId, input.oidcSubject, now);
  const entry: TrustedKey = {
    ...(existing ?? { keyid, algorithm: 'ed25519', publicKeyPem: (input.key as { publicKeyPem: string }).publicKeyPem }),
    keyid,
    publisherId,
    status: 'active',
    notBefore,
    notAfter,
    namespaceProof,
  };
  if (existing && JSON.stringify(existing) === JSON.stringify(entry)) return { entry, change: 'unchanged' };
  const keys = [...doc.keys];
  if (existing) keys[index] = entry;
  else keys.push(entry);
  const next = { ...doc, updatedAt: now.toISOString(), keys };
  if (options.dryRun) parseTrustRegistry(next);
  else saveRegistryDocument(path, next);
  return { entry, change: existing ? 'updated' : 'added' };
}

/** Marks a key revoked. Revoking again only escalates to key-compromise; otherwise nothing changes. */
export function revokeKey(path: string, keyidText: string, reason: RevocationReason, now = new Date()): TrustChange {
  const keyid = checkedKeyId(keyidText);
  if (!existsSync(path)) throw trustError(`there is no trust registry at ${path}`, 'nothing to revoke: `acx trust list` shows the keys you trust');
  const doc = readRegistryDocument(path);
  const index = doc.keys.findIndex((k) => k.keyid === keyid);
  const existing = doc.keys[index];
  if (!existing) throw trustError(`${keyid} is not in the trust registry ${path}`, '`acx trust list` shows the keys it holds');
  if (existing.status === 'revoked' && (existing.revocationReason === reason || reason !== 'key-compromise')) {
    return { entry: existing, change: 'unchanged' };
  }
  const entry: TrustedKey = { ...existing, status: 'revoked', revokedAt: now.toISOString(), revocationReason: reason };
  const keys = [...doc.keys];
  keys[index] = entry;
  saveRegistryDocument(path, { ...doc, updatedAt: now.toISOString(), keys });
  return { entry, change: 'updated' };
}

/** Validates the whole document, then replaces the file atomically (public keys only, mode 0644). */
export function saveRegistryDocument(path: string, doc: TrustRegistry): void {
  parseTrustRegistry(doc);
  writeFileAtomic(path, `${JSON.stringify(doc, null, 2)}\n`, 0o644);
}

// ---------------------------------------------------------------------------------------------
// This installation's own keys: {"schemaVersion": "acx.own-keys/1", "keys": ["ed25519:…"]}

export const OWN_KEYS_SCHEMA = 'acx.own-keys/1';

/** The keyids in an own-keys file; none when it does not exist. */
export function readOwnKeys(path: string): string[] {
  if (!existsSync(path)) return [];
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw trustError(`${path} is not JSON: ${errorMessage(error)}`, `fix or delete it (it lists this installation's own keyids as {"schemaVersion": "${OWN_KEYS_SCHEMA}", "keys": [...]})`);
  }
  const doc = value as { schemaVersion?: unknown; keys?: unknown };
  if (!doc || typeof doc !== 'object' || doc.schemaVersion !== OWN_KEYS_SCHEMA || !Array.isArray(doc.keys) || doc.keys.some((k) => typeof k !== 'string' || !KEYID.test(k))) {
    throw trustError(`${path} must be {"schemaVersion": "${OWN_KEYS_SCHEMA}", "keys": ["ed25519:<64 hex>", ...]}`, 'fix or delete the file; nothing was changed');
  }
  return doc.keys as string[];
}

/** Records `keyid` as one of this installation's own keys (idempotent). */
export function addOwnKey(path: string, keyid: string): void {
  const keys = readOwnKeys(path);
  if (keys.includes(keyid)) return;
  writeFileAtomic(path, `${JSON.stringify({ schemaVersion: OWN_KEYS_SCHEMA, keys: [...keys, checkedKeyId(keyid)] }, null, 2)}\n`, 0o644);
}

// ---------------------------------------------------------------------------------------------

/**
 * The namespace proof recorded for a publisher (SPEC §4.3). acx looks nothing up: the record says
 * that the operator adding the key verified the namespace (`_acx-challenge.<domain>` for dns-txt,
 * the workflow subject for io.github.* publishers).
 */
function proofFor(publisherId: string, oidcSubject: string | undefined, now: Date): NamespaceProof {
  const verifiedAt = now.toISOString();
  const owner = githubOwnerOf(publisherId);
  if (owner && oidcSubject === undefined) {
    throw usageError(`${publisherId} is a GitHub namespace, proven by a GitHub Actions OIDC subject`, `pass --oidc-subject repo:${owner}/<repository>[:ref:…] (the workflow that signs for it)`);
  }
  if (!owner && oidcSubject !== undefined) throw usageError('--oidc-subject applies to io.github.* publishers only', `${publisherId} is proven by the DNS record ${dnsChallengeRecord(publisherId)}`);
  const proof: NamespaceProof = owner
    ? { method: 'github-oidc', oidcSubject: oidcSubject!, oidcIssuer: GITHUB_OIDC_ISSUER, verifiedAt }
    : { method: 'dns-txt', txtRecord: dnsChallengeRecord(publisherId), verifiedAt };
  const problems = namespaceProofProblems(proof, publisherId, now.getTime());
  if (problems.length) throw usageError(`the namespace proof for ${publisherId} would not hold: ${problems.join('; ')}`);
  return proof;
}

function keyIdFromPublicPem(pem: string): string {
  if (/PRIVATE KEY/.test(pem)) {
    throw usageError('that is a private key; a trust registry holds public keys only', 'pass the public key file (acx keygen writes it as acx-signing.pub.pem)');
  }
  try {
    return keyIdOf(publicKeyFromPem(pem));
  } catch (error) {
    throw usageError(`not an Ed25519 public key: ${errorMessage(error)}`, 'pass a PEM public key file, e.g. acx-signing.pub.pem from `acx keygen`');
  }
}

function checkedKeyId(keyid: string): string {
  if (!KEYID.test(keyid)) throw usageError(`${JSON.stringify(keyid)} is not a keyid`, 'a keyid looks like ed25519:<64 hex digits> (`acx trust list` shows them)');
  return keyid;
}

function checkedTime(value: string | undefined, flag: string): string | undefined {
  if (value === undefined) return undefined;
  if (!isRfc3339(value)) throw usageError(`${flag} ${JSON.stringify(value)} is not an RFC 3339 time`, 'write it like 2027-01-31T00:00:00Z');
  return value;
}

function yearsAfter(iso: string, years: number): string {
  const t = new Date(iso);
  t.setUTCFullYear(t.getUTCFullYear() + years);
  return t.toISOString();
}

function trustError(message: string, hint: string): AcxError {
  return new AcxError('trust-registry', message, { hint });
}

function usageError(message: string, hint?: string): AcxError {
  return new AcxError('usage', message, hint ? { hint } : {});
}
