import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { buildCartridge } from '../../src/cartridge/build.ts';
import { parseTrustRegistry, type TrustedKey } from '../../src/cartridge/trust.ts';
import { verifyCartridge } from '../../src/cartridge/verify.ts';
import { tempDir, writeAgentDir, writeKey } from './helpers.ts';

const SIGNED_AT = new Date('2026-06-01T00:00:00.000Z');
const NOW = new Date('2026-07-01T00:00:00.000Z');

function built() {
  const root = tempDir();
  const agent = join(root, 'agent');
  mkdirSync(agent);
  writeAgentDir(agent);
  const key = writeKey(root);
  const out = join(root, 'a.acx');
  buildCartridge({ dir: agent, out, key: key.keyPath, publisher: 'io.github.example', now: SIGNED_AT });
  return { root, out, key };
}

function entry(key: { keyid: string; publicKeyPem: string }, over: Partial<TrustedKey> = {}): TrustedKey {
  return {
    keyid: key.keyid,
    publisherId: 'io.github.example',
    algorithm: 'ed25519',
    publicKeyPem: key.publicKeyPem,
    status: 'active',
    notBefore: '2026-01-01T00:00:00Z',
    notAfter: '2027-01-01T00:00:00Z',
    namespaceProof: { method: 'github-oidc', oidcSubject: 'repo:example/agents:ref:refs/heads/main', oidcIssuer: 'https://token.actions.githubusercontent.com', verifiedAt: '2026-01-02T00:00:00Z' },
    ...over,
  };
}

const reg = (...keys: TrustedKey[]) => parseTrustRegistry({ schemaVersion: 'acx.trust-registry/1', keys });

describe('trust taxonomy', () => {
  it('is trusted with an active, namespace-proven registry key and local for our own key', () => {
    const b = built();
    expect(verifyCartridge(b.out, { registry: reg(entry(b.key)), now: NOW })).toMatchObject({ verdict: 'trusted', publisherId: 'io.github.example' });
    expect(verifyCartridge(b.out, { registry: reg(entry(b.key)), ownKeys: [b.key.keyid], now: NOW }).verdict).toBe('local');
    // ownKeys alone never lifts an unregistered key above portable
    expect(verifyCartridge(b.out, { ownKeys: [b.key.keyid], now: NOW }).verdict).toBe('portable');
  });

  it('loads a registry from a file path', () => {
    const b = built();
    const path = join(b.root, 'registry.json');
    writeFileSync(path, JSON.stringify({ schemaVersion: 'acx.trust-registry/1', keys: [entry(b.key)] }));
    expect(verifyCartridge(b.out, { registry: path, now: NOW }).verdict).toBe('trusted');
  });

  it('downgrades to portable for expiry, validity window, publisher mismatch, missing proof, non-compromise revocation', () => {
    const b = built();
    const cases: Array<[Partial<TrustedKey>, Date, RegExp]> = [
      [{ notAfter: '2026-06-15T00:00:00Z' }, NOW, /expired/],
      [{ status: 'expired' }, NOW, /expired/],
      [{ notBefore: '2026-06-10T00:00:00Z' }, NOW, /before the key became valid/],
      [{ publisherId: 'io.github.someone' , namespaceProof: { method: 'github-oidc', oidcSubject: 'repo:someone/x', oidcIssuer: 'https://token.actions.githubusercontent.com', verifiedAt: '2026-01-02T00:00:00Z' } }, NOW, /does not match/],
      [{ namespaceProof: undefined }, NOW, /namespace proof is missing/],
      [{ namespaceProof: { method: 'dns-txt', txtRecord: '_acx-challenge.example.github.io', verifiedAt: '2026-01-02T00:00:00Z' } }, NOW, /github-oidc/],
      [{ status: 'revoked', revocationReason: 'superseded', revokedAt: '2026-06-20T00:00:00Z' }, NOW, /revoked \(superseded\) after/],
      [{ status: 'revoked', revocationReason: 'retired', revokedAt: '2026-05-01T00:00:00Z' }, NOW, /revoked \(retired\) before/],
    ];
    for (const [over, now, why] of cases) {
      const v = verifyCartridge(b.out, { registry: reg(entry(b.key, over)), now });
      expect(v.verdict, JSON.stringify(over)).toBe('portable');
      expect(v.reasons.join('; ')).toMatch(why);
    }
  });

  it('never trusts a key revoked for key-compromise: the cartridge is rejected', () => {
    const b = built();
    const v = verifyCartridge(b.out, { registry: reg(entry(b.key, { status: 'revoked', revocationReason: 'key-compromise', revokedAt: '2026-12-01T00:00:00Z' })), now: NOW });
    expect(v.verdict).toBe('tampered');
    expect(v.reasons[0]).toMatch(/key-compromise/);
  });

  it('keeps a cartridge trusted after rotation while the predecessor is still valid', () => {
    const b = built();
    const successor = writeKey(tempDir());
    const registry = reg(
      entry(b.key, { rotatedTo: successor.keyid, notAfter: '2026-09-01T00:00:00Z' }),
      entry(successor, { rotatedFrom: b.key.keyid, notBefore: '2026-06-15T00:00:00Z' }),
    );
    expect(verifyCartridge(b.out, { registry, now: NOW }).verdict).toBe('trusted');
    expect(verifyCartridge(b.out, { registry, now: new Date('2026-10-01T00:00:00Z') }).verdict).toBe('portable');
  });

  it('rejects malformed registries, including any private key material', () => {
    const b = built();
    expect(() => parseTrustRegistry({ schemaVersion: 'acx.trust-registry/2', keys: [] })).toThrow(/acx.trust-registry\/1/);
    expect(() => parseTrustRegistry({ schemaVersion: 'acx.trust-registry/1', keys: [{ ...entry(b.key), privateKeyPem: '-----BEGIN PRIVATE KEY-----' }] })).toThrow(/private key/);
    expect(() => reg(entry(b.key, { keyid: `ed25519:${'0'.repeat(64)}` }))).toThrow(/does not match its keyid/);
    expect(() => reg(entry(b.key), entry(b.key))).toThrow(/duplicates/);
    expect(() => reg(entry(b.key, { notBefore: '2027-02-01T00:00:00Z' }))).toThrow(/notBefore after notAfter/);
    expect(() => reg(entry(b.key, { status: 'revoked' }))).toThrow(/lacks revokedAt/);
  });

  it('accepts URL-safe base64 in the envelope', () => {
    const b = built();
    const db = new DatabaseSync(b.out);
    const row = db.prepare('SELECT sig_id, envelope FROM signatures').get() as { sig_id: string; envelope: string };
    const env = JSON.parse(row.envelope);
    const urlSafe = (s: string) => s.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    env.payload = urlSafe(env.payload);
    env.signatures[0].sig = urlSafe(env.signatures[0].sig);
    db.prepare('UPDATE signatures SET envelope=? WHERE sig_id=?').run(JSON.stringify(env), row.sig_id);
    db.close();
    expect(verifyCartridge(b.out, { registry: reg(entry(b.key)), now: NOW }).verdict).toBe('trusted');
  });
});
