import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateSigningKey } from '../../src/cartridge/keys.ts';
import { loadTrustRegistry } from '../../src/cartridge/trust.ts';
import { addOwnKey, readOwnKeys, revokeKey, trustKey } from '../../src/cartridge/trust-store.ts';
import { tempDir } from './helpers.ts';

const NOW = new Date('2026-12-01T10:00:00.000Z');

describe('trust store (acx trust add|revoke, own keys)', () => {
  it('adds an entry with the namespace proof its publisher needs, and re-adding the same key changes nothing', () => {
    const dir = tempDir();
    const path = join(dir, 'registry.json');
    const key = generateSigningKey();
    const first = trustKey(path, { key: { publicKeyPem: key.publicKeyPem }, publisherId: 'dev.acx.examples', now: NOW });
    expect(first).toEqual({
      change: 'added',
      entry: {
        keyid: key.keyid,
        algorithm: 'ed25519',
        publicKeyPem: key.publicKeyPem,
        publisherId: 'dev.acx.examples',
        status: 'active',
        notBefore: '2026-12-01T10:00:00.000Z',
        notAfter: '2028-12-01T10:00:00.000Z',
        namespaceProof: { method: 'dns-txt', txtRecord: '_acx-challenge.examples.acx.dev', verifiedAt: '2026-12-01T10:00:00.000Z' },
      },
    });
    const written = readFileSync(path, 'utf8');
    expect(loadTrustRegistry(path).byKeyId.get(key.keyid)).toEqual(first.entry);
    const again = trustKey(path, { key: { publicKeyPem: key.publicKeyPem }, publisherId: 'dev.acx.examples', now: new Date('2026-12-02T00:00:00Z') });
    expect(again.change).toBe('unchanged');
    expect(readFileSync(path, 'utf8')).toBe(written);
    // A dry run reports the change and writes nothing.
    const other = generateSigningKey();
    expect(trustKey(path, { key: { publicKeyPem: other.publicKeyPem }, publisherId: 'com.example', now: NOW }, { dryRun: true }).change).toBe('added');
    expect(readFileSync(path, 'utf8')).toBe(written);
    expect(readdirSync(dir), 'no temporary file is left behind').toEqual(['registry.json']);
  });

  it('revokes once; revoking again only escalates to key-compromise', () => {
    const path = join(tempDir(), 'registry.json');
    const key = generateSigningKey();
    trustKey(path, { key: { publicKeyPem: key.publicKeyPem }, publisherId: 'com.example', now: NOW });
    expect(revokeKey(path, key.keyid, 'superseded', NOW)).toMatchObject({ change: 'updated', entry: { status: 'revoked', revocationReason: 'superseded', revokedAt: NOW.toISOString() } });
    expect(revokeKey(path, key.keyid, 'retired', new Date('2027-01-01T00:00:00Z'))).toMatchObject({ change: 'unchanged', entry: { revocationReason: 'superseded' } });
    expect(revokeKey(path, key.keyid, 'key-compromise', new Date('2027-01-01T00:00:00Z'))).toMatchObject({ change: 'updated', entry: { revocationReason: 'key-compromise', revokedAt: '2027-01-01T00:00:00.000Z' } });
    expect(loadTrustRegistry(path).byKeyId.get(key.keyid)?.revocationReason).toBe('key-compromise');
  });

  it('keeps this installation\'s own keyids, once each, and refuses a malformed list', () => {
    const path = join(tempDir(), 'own-keys.json');
    const key = generateSigningKey();
    expect(readOwnKeys(path)).toEqual([]);
    addOwnKey(path, key.keyid);
    addOwnKey(path, key.keyid);
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ schemaVersion: 'acx.own-keys/1', keys: [key.keyid] });
    writeFileSync(path, JSON.stringify({ schemaVersion: 'acx.own-keys/1', keys: ['nope'] }));
    expect(() => addOwnKey(path, key.keyid)).toThrow(/own-keys.json must be/);
    expect(JSON.parse(readFileSync(path, 'utf8')).keys).toEqual(['nope']);
  });
});
