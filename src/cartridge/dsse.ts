import { sign as edSign, verify as edVerify, type KeyObject } from 'node:crypto';
import { AcxError } from '../core/errors.ts';
import { canonicalBytes } from '../util/jcs.ts';

export const PAYLOAD_TYPE = 'application/vnd.in-toto+json';
export const STATEMENT_TYPE = 'https://in-toto.io/Statement/v1';
export const PREDICATE_TYPE = 'https://acx.dev/attestation/cartridge/v1';

export interface DsseEnvelope {
  payloadType: string;
  payload: string;
  signatures: Array<{ keyid: string; sig: string }>;
}

export interface CartridgePredicate {
  acxSchemaVersion: string;
  publisherId: string;
  romDigest: string;
  manifestHash: string;
  checksumHash: string | null;
  fileCount: number | null;
  embeddingEngine: { id: string; dim: number };
  signedAt: string;
  provenanceInstanceId?: string | null;
}

export interface Statement {
  _type: string;
  subject: Array<{ name: string; digest: { sha256: string } }>;
  predicateType: string;
  predicate: CartridgePredicate;
}

/** DSSE pre-authentication encoding: "DSSEv1" SP len(type) SP type SP len(body) SP body. */
export function pae(payloadType: string, payload: Uint8Array): Buffer {
  const type = Buffer.from(payloadType, 'utf8');
  return Buffer.concat([
    Buffer.from(`DSSEv1 ${type.length} `, 'ascii'),
    type,
    Buffer.from(` ${payload.length} `, 'ascii'),
    payload,
  ]);
}

export function signStatement(statement: Statement, key: { privateKey: KeyObject; keyid: string }): DsseEnvelope {
  const body = canonicalBytes(statement);
  const sig = edSign(null, pae(PAYLOAD_TYPE, body), key.privateKey);
  return {
    payloadType: PAYLOAD_TYPE,
    payload: body.toString('base64'),
    signatures: [{ keyid: key.keyid, sig: sig.toString('base64') }],
  };
}

/** Decodes standard or URL-safe base64 (padding optional); null if the text is not base64. */
export function decodeBase64(text: unknown): Buffer | null {
  if (typeof text !== 'string') return null;
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(trimmed)) return null;
  if (/[+/]/.test(trimmed) && /[-_]/.test(trimmed)) return null; // mixed alphabets
  const standard = trimmed.replace(/-/g, '+').replace(/_/g, '/').replace(/=+$/, '');
  if (standard.length % 4 === 1) return null;
  return Buffer.from(standard, 'base64');
}

/** Shape-checks a parsed envelope; throws AcxError('dsse-malformed') on anything unexpected. */
export function parseEnvelope(raw: unknown): DsseEnvelope {
  let value = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw);
    } catch {
      throw new AcxError('dsse-malformed', 'signature envelope is not JSON');
    }
  }
  const env = value as Partial<DsseEnvelope> | null;
  if (!env || typeof env !== 'object' || Array.isArray(env)) throw new AcxError('dsse-malformed', 'signature envelope is not an object');
  if (typeof env.payloadType !== 'string' || typeof env.payload !== 'string') {
    throw new AcxError('dsse-malformed', 'signature envelope lacks payloadType/payload');
  }
  if (!Array.isArray(env.signatures) || env.signatures.length === 0) {
    throw new AcxError('dsse-malformed', 'signature envelope has no signatures');
  }
  for (const s of env.signatures) {
    if (!s || typeof s !== 'object' || typeof s.sig !== 'string' || (s.keyid !== undefined && typeof s.keyid !== 'string')) {
      throw new AcxError('dsse-malformed', 'signature envelope has a malformed signature entry');
    }
  }
  return env as DsseEnvelope;
}

/**
 * Verifies one envelope signature against a public key. Returns the decoded payload bytes on
 * success; a reason string otherwise. Only the in-toto payload type is accepted.
 */
export function verifyEnvelopeSignature(
  env: DsseEnvelope,
  sigIndex: number,
  publicKey: KeyObject,
): { ok: true; payload: Buffer } | { ok: false; reason: string } {
  if (env.payloadType !== PAYLOAD_TYPE) return { ok: false, reason: `payloadType is ${JSON.stringify(env.payloadType)}, expected ${PAYLOAD_TYPE}` };
  const payload = decodeBase64(env.payload);
  if (!payload) return { ok: false, reason: 'envelope payload is not base64' };
  const entry = env.signatures[sigIndex];
  const sig = entry ? decodeBase64(entry.sig) : null;
  if (!sig || sig.length !== 64) return { ok: false, reason: 'signature is not a base64 Ed25519 signature' };
  let ok = false;
  try {
    ok = edVerify(null, pae(env.payloadType, payload), publicKey, sig);
  } catch {
    ok = false;
  }
  return ok ? { ok: true, payload } : { ok: false, reason: 'Ed25519 signature over the DSSE PAE does not verify' };
}

/** Parses the statement and checks its fixed fields; throws AcxError('dsse-statement'). */
export function parseStatement(payload: Buffer): Statement {
  let value: unknown;
  try {
    value = JSON.parse(payload.toString('utf8'));
  } catch {
    throw new AcxError('dsse-statement', 'signed payload is not JSON');
  }
  const st = value as Partial<Statement> | null;
  if (!st || typeof st !== 'object') throw new AcxError('dsse-statement', 'signed payload is not an object');
  if (st._type !== STATEMENT_TYPE) throw new AcxError('dsse-statement', `statement _type is ${JSON.stringify(st._type)}, expected ${STATEMENT_TYPE}`);
  if (st.predicateType !== PREDICATE_TYPE) throw new AcxError('dsse-statement', `predicateType is ${JSON.stringify(st.predicateType)}, expected ${PREDICATE_TYPE}`);
  const digest = st.subject?.[0]?.digest?.sha256;
  if (typeof digest !== 'string' || !/^[0-9a-f]{64}$/.test(digest)) throw new AcxError('dsse-statement', 'statement subject[0].digest.sha256 is missing or malformed');
  if (!st.predicate || typeof st.predicate !== 'object') throw new AcxError('dsse-statement', 'statement has no predicate');
  return st as Statement;
}
