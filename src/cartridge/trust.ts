import { readFileSync } from 'node:fs';
import { AcxError, errorMessage } from '../core/errors.ts';
import { keyIdOf, publicKeyFromPem } from './keys.ts';

export const TRUST_REGISTRY_SCHEMA = 'acx.trust-registry/1';

export type KeyStatus = 'active' | 'revoked' | 'expired';
export const REVOCATION_REASONS = ['key-compromise', 'superseded', 'retired'] as const;
export type RevocationReason = (typeof REVOCATION_REASONS)[number];

export type NamespaceProof =
  | { method: 'dns-txt'; txtRecord: string; verifiedAt: string }
  | { method: 'github-oidc'; oidcSubject: string; oidcIssuer: string; verifiedAt: string };

export interface TrustedKey {
  keyid: string;
  publisherId: string;
  algorithm: 'ed25519';
  publicKeyPem: string;
  status: KeyStatus;
  notBefore: string;
  notAfter: string;
  namespaceProof?: NamespaceProof;
  rotatedFrom?: string | null;
  rotatedTo?: string | null;
  revokedAt?: string | null;
  revocationReason?: RevocationReason | null;
}

export interface TrustRegistry {
  schemaVersion: typeof TRUST_REGISTRY_SCHEMA;
  registryId?: string;
  updatedAt?: string;
  keys: TrustedKey[];
}

export interface LoadedRegistry {
  registry: TrustRegistry;
  byKeyId: Map<string, TrustedKey>;
}

export const KEYID = /^ed25519:[0-9a-f]{64}$/;
/** Reverse-DNS publisher id, optionally with a /sub-namespace. */
export const PUBLISHER_ID = /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\/[a-z0-9][a-z0-9._-]*)*$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/;
export const GITHUB_OIDC_ISSUER = 'https://token.actions.githubusercontent.com';
const ENTRY_FIELDS = new Set([
  'keyid', 'publisherId', 'algorithm', 'publicKeyPem', 'status', 'notBefore', 'notAfter',
  'rotatedFrom', 'rotatedTo', 'revokedAt', 'revocationReason', 'namespaceProof',
]);

export function isRfc3339(value: unknown): value is string {
  return typeof value === 'string' && RFC3339.test(value) && !Number.isNaN(Date.parse(value));
}

/** Reads and validates a registry file (public keys only). */
export function loadTrustRegistry(path: string): LoadedRegistry {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw registryError(`cannot read trust registry ${path}: ${errorMessage(error)}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw registryError(`trust registry ${path} is not JSON: ${errorMessage(error)}`);
  }
  return parseTrustRegistry(value);
}

/** Validates a parsed registry. Any defect rejects the whole file: trust input must be exact. */
export function parseTrustRegistry(value: unknown): LoadedRegistry {
  if (/PRIVATE KEY/.test(JSON.stringify(value) ?? '')) {
    throw registryError('trust registry contains private key material; refusing to load it', 'a registry holds public keys only; remove the private key and rotate it');
  }
  const reg = value as Partial<TrustRegistry> | null;
  if (!isRecord(reg) || reg.schemaVersion !== TRUST_REGISTRY_SCHEMA || !Array.isArray(reg.keys)) {
    throw registryError(`trust registry must be a ${TRUST_REGISTRY_SCHEMA} object with a keys array`);
  }
  for (const k of Object.keys(reg)) {
    if (!['schemaVersion', 'registryId', 'updatedAt', 'keys'].includes(k)) throw registryError(`trust registry has unknown field '${k}'`);
  }
  const byKeyId = new Map<string, TrustedKey>();
  reg.keys.forEach((entry: unknown, i) => {
    const where = `trust registry keys[${i}]`;
    if (!isRecord(entry)) throw registryError(`${where} must be an object`);
    for (const k of Object.keys(entry)) if (!ENTRY_FIELDS.has(k)) throw registryError(`${where} has unknown field '${k}'`);
    const e = entry as unknown as TrustedKey;
    if (!KEYID.test(String(e.keyid))) throw registryError(`${where}.keyid must be ed25519:<64 hex>`);
    if (byKeyId.has(e.keyid)) throw registryError(`${where} duplicates keyid ${e.keyid}`);
    if (!PUBLISHER_ID.test(String(e.publisherId))) throw registryError(`${where}.publisherId must be reverse-DNS (e.g. io.github.alice)`);
    if (e.algorithm !== 'ed25519') throw registryError(`${where}.algorithm must be ed25519`);
    if (!['active', 'revoked', 'expired'].includes(e.status)) throw registryError(`${where}.status must be active, revoked or expired`);
    if (!isRfc3339(e.notBefore) || !isRfc3339(e.notAfter)) throw registryError(`${where} needs RFC 3339 notBefore and notAfter`);
    if (Date.parse(e.notBefore) > Date.parse(e.notAfter)) throw registryError(`${where} has notBefore after notAfter`);
    if (e.revokedAt != null && !isRfc3339(e.revokedAt)) throw registryError(`${where}.revokedAt must be RFC 3339`);
    if (e.revocationReason != null && !(REVOCATION_REASONS as readonly string[]).includes(e.revocationReason)) {
      throw registryError(`${where}.revocationReason must be ${REVOCATION_REASONS.join(', ')}`);
    }
    if (e.status === 'revoked' && (e.revocationReason == null || e.revokedAt == null)) {
      throw registryError(`${where} is revoked but lacks revokedAt/revocationReason`);
    }
    for (const f of ['rotatedFrom', 'rotatedTo'] as const) {
      if (e[f] != null && !KEYID.test(String(e[f]))) throw registryError(`${where}.${f} must be a keyid`);
    }
    let computed: string;
    try {
      computed = keyIdOf(publicKeyFromPem(String(e.publicKeyPem)));
    } catch (error) {
      throw registryError(`${where}.publicKeyPem is not an Ed25519 public key: ${errorMessage(error)}`);
    }
    if (computed !== e.keyid) throw registryError(`${where}.publicKeyPem does not match its keyid`);
    byKeyId.set(e.keyid, e);
  });
  // Rotation links must point at keys of the same publisher when both ends are present.
  for (const e of byKeyId.values()) {
    for (const link of [e.rotatedFrom, e.rotatedTo]) {
      const other = link ? byKeyId.get(link) : undefined;
      if (other && other.publisherId !== e.publisherId) {
        throw registryError(`rotation link ${e.keyid} ↔ ${other.keyid} crosses publishers`);
      }
    }
  }
  return { registry: reg as TrustRegistry, byKeyId };
}

export function emptyRegistry(): LoadedRegistry {
  return { registry: { schemaVersion: TRUST_REGISTRY_SCHEMA, keys: [] }, byKeyId: new Map() };
}

/** Problems with a namespace proof for `publisherId` (SPEC §4.3); empty when it binds. */
export function namespaceProofProblems(proof: unknown, publisherId: string, now: number): string[] {
  if (!isRecord(proof)) return ['namespace proof is missing'];
  const problems: string[] = [];
  const p = proof as Record<string, unknown>;
  if (!isRfc3339(p.verifiedAt)) problems.push('namespace proof verifiedAt must be RFC 3339');
  else if (Date.parse(p.verifiedAt) > now) problems.push('namespace proof verifiedAt is in the future');
  const github = githubOwnerOf(publisherId);
  if (github) {
    if (p.method !== 'github-oidc') return [...problems, 'io.github.* publishers need a github-oidc proof'];
    if (p.oidcIssuer !== GITHUB_OIDC_ISSUER) problems.push('github-oidc proof has an unexpected issuer');
    if (typeof p.oidcSubject !== 'string' || !p.oidcSubject.startsWith(`repo:${github}/`)) {
      problems.push(`github-oidc subject does not bind io.github.${github}`);
    }
    return problems;
  }
  if (p.method !== 'dns-txt') return [...problems, 'publishers outside io.github need a dns-txt proof'];
  const expected = dnsChallengeRecord(publisherId);
  if (p.txtRecord !== expected) problems.push(`dns-txt proof must name ${expected}`);
  return problems;
}

/** The GitHub user or org an `io.github.<owner>` publisher names, else undefined. */
export function githubOwnerOf(publisherId: string): string | undefined {
  const root = publisherId.split('/')[0] ?? publisherId;
  return /^io\.github\.([a-z0-9](?:[a-z0-9-]*[a-z0-9])?)$/.exec(root)?.[1];
}

/** The TXT record a dns-txt proof for `publisherId` names: `_acx-challenge.<domain>` (SPEC §4.3). */
export function dnsChallengeRecord(publisherId: string): string {
  const root = publisherId.split('/')[0] ?? publisherId;
  return `_acx-challenge.${root.split('.').reverse().join('.')}`;
}

/**
 * Why a valid signature by `entry` is NOT `trusted` (SPEC §4.4). Empty means trusted.
 * `compromised` is set when the key was revoked for key-compromise: never trusted, rejected.
 */
export function trustProblems(
  entry: TrustedKey,
  facts: { publisherId: string | null; signedAt: string | null; now: number },
): { problems: string[]; compromised: boolean } {
  const problems: string[] = [];
  if (entry.status === 'revoked') {
    if (entry.revocationReason === 'key-compromise') {
      return { problems: [`signer key ${entry.keyid} was revoked for key-compromise at ${entry.revokedAt}`], compromised: true };
    }
    const before = facts.signedAt && entry.revokedAt && Date.parse(facts.signedAt) < Date.parse(entry.revokedAt);
    problems.push(
      before
        ? `signer key was revoked (${entry.revocationReason}) after this cartridge was signed`
        : `signer key was revoked (${entry.revocationReason}) before this cartridge was signed`,
    );
  } else if (entry.status === 'expired') {
    problems.push('signer key is marked expired in the registry');
  }
  if (facts.now > Date.parse(entry.notAfter)) problems.push(`signer key expired at ${entry.notAfter}`);
  if (facts.publisherId !== entry.publisherId) {
    problems.push(`signed publisherId ${JSON.stringify(facts.publisherId)} does not match the registry's ${entry.publisherId}`);
  }
  if (!isRfc3339(facts.signedAt)) problems.push('signedAt in the statement is missing or not RFC 3339');
  else {
    const t = Date.parse(facts.signedAt);
    if (t < Date.parse(entry.notBefore)) problems.push(`signed at ${facts.signedAt}, before the key became valid (${entry.notBefore})`);
    if (t > Date.parse(entry.notAfter)) problems.push(`signed at ${facts.signedAt}, after the key's validity ended (${entry.notAfter})`);
    if (t > facts.now + 5 * 60_000) problems.push(`signedAt ${facts.signedAt} is in the future`);
  }
  problems.push(...namespaceProofProblems(entry.namespaceProof, entry.publisherId, facts.now));
  return { problems, compromised: false };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function registryError(message: string, hint = 'fix the registry file (nothing was changed); docs/trust.md describes the acx.trust-registry/1 format'): AcxError {
  return new AcxError('trust-registry', message, { hint });
}
