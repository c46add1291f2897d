import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { buildCartridge } from '../../src/cartridge/build.ts';
import { generateSigningKey } from '../../src/cartridge/keys.ts';
import { revokeKey, trustKey } from '../../src/cartridge/trust-store.ts';
import { codebaseFingerprint } from '../../src/cartridge/memory.ts';
import { withSaveZone } from '../../src/cartridge/save.ts';
import { verifyCartridge } from '../../src/cartridge/verify.ts';
import { REFERENCE_DIR, referenceMissing } from '../support/reference-acx.ts';
import { FIXTURES, REFERENCE_CARTRIDGES, tempDir, writeAgentDir, writeKey } from './helpers.ts';

/**
 * Interop against the reference implementation's own CLI (lboel/acx, see
 * test/support/reference-acx.ts for where it is found).
 */
const CLI = join(REFERENCE_DIR, 'src', 'cli.mjs');
const missing = referenceMissing();

function ref(...args: string[]): { code: number; out: string } {
  const r = spawnSync(process.execPath, ['--no-warnings', '--experimental-sqlite', CLI, ...args], { cwd: REFERENCE_DIR, encoding: 'utf8' });
  return { code: r.status ?? -1, out: `${r.stdout}${r.stderr}` };
}

function refTrust(path: string, registry?: string): string {
  return /trust:\s+(\S+)/.exec(ref('verify', path, ...(registry ? ['--registry', registry] : [])).out)?.[1] ?? 'error';
}

function acxBuilt(root: string): string {
  const agent = join(root, 'agent');
  mkdirSync(agent);
  writeAgentDir(agent);
  const out = join(root, 'built.acx');
  buildCartridge({ dir: agent, out, key: writeKey(root).keyPath, publisher: 'io.github.example' });
  return out;
}

describe.skipIf(missing !== undefined)(missing ? `interop with the reference CLI (skipped: ${missing})` : 'interop with the reference CLI', () => {
  it('gives the same verdict on the reference registry cartridges', () => {
    for (const path of REFERENCE_CARTRIDGES) expect(verifyCartridge(path).verdict).toBe(refTrust(path));
  });

  it('verifies, spec-checks and strips cartridges acx builds (including with SAVE rows)', () => {
    const root = tempDir();
    const out = acxBuilt(root);
    const v = ref('verify', out);
    expect(v.code).toBe(0);
    expect(v.out).toMatch(/trust:\s+portable/);
    expect(v.out).toMatch(/Signature valid/);
    expect(ref('spec', out).out).toMatch(/CLEAN/);
    withSaveZone(out, (save) => {
      save.putMemory([{ id: 'ci', portable: false, codebaseFingerprint: codebaseFingerprint(Buffer.alloc(32, 1), 'github.com/a/b'), summary: 'x' }]);
      save.putFile('save/notes.md', Buffer.from('note'));
    });
    expect(refTrust(out)).toBe('portable');
    const strip = ref('strip', out, join(root, 'stripped.acx'));
    expect(strip.code).toBe(0);
    expect(verifyCartridge(join(root, 'stripped.acx')).verdict).toBe('portable');
  });

  it('agrees that a single flipped ROM byte is tampered', () => {
    const root = tempDir();
    const out = acxBuilt(root);
    for (const source of [out, REFERENCE_CARTRIDGES[1]!]) {
      const copy = join(tempDir(), 'flip.acx');
      copyFileSync(source, copy);
      const db = new DatabaseSync(copy);
      const row = db.prepare("SELECT name, data FROM sqlar WHERE name='rom/manifest/harness-requirements.json'").get() as { name: string; data: Uint8Array };
      const data = Buffer.from(row.data);
      data[10] = (data[10] ?? 0) ^ 0x01;
      db.prepare('UPDATE sqlar SET data=? WHERE name=?').run(data, row.name);
      db.close();
      expect(verifyCartridge(copy).verdict).toBe('tampered');
      const r = ref('verify', copy);
      expect(r.code).not.toBe(0);
      expect(r.out).toMatch(/tampered|Error/);
    }
  });

  it('reads a trust registry `acx trust` writes, and agrees with acx before and after a revocation', () => {
    const root = tempDir();
    const agent = join(root, 'agent');
    mkdirSync(agent);
    writeAgentDir(agent);
    const key = generateSigningKey();
    const out = join(root, 'trusted.acx');
    buildCartridge({ dir: agent, out, key, publisher: 'dev.acx.examples' });
    const registry = join(root, 'trust-registry.json');
    trustKey(registry, { key: { publicKeyPem: key.publicKeyPem }, publisherId: 'dev.acx.examples', now: new Date(Date.now() - 60_000) });
    expect(verifyCartridge(out, { registry }).verdict).toBe('trusted');
    expect(refTrust(out, registry)).toBe('trusted');
    revokeKey(registry, key.keyid, 'superseded');
    expect(verifyCartridge(out, { registry }).verdict).toBe('portable');
    expect(refTrust(out, registry)).toBe('portable');
  });

  it('verifies what the reference CLI exports', () => {
    const root = tempDir();
    const out = join(root, 'sample.acx');
    const e = ref('export', join(FIXTURES, 'sample-agent-package'), out, '--publisher', 'io.github.example');
    expect(e.code).toBe(0);
    const v = verifyCartridge(out);
    expect(v.verdict).toBe('portable');
    expect(v.verdict).toBe(refTrust(out));
    expect(e.out).toContain(v.keyid);
  });
});
