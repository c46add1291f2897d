import { copyFileSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { buildCartridge } from '../../src/cartridge/build.ts';
import { Cartridge } from '../../src/cartridge/container.ts';
import { checkSpec } from '../../src/cartridge/spec.ts';
import { formatInspect, inspectCartridge } from '../../src/cartridge/inspect.ts';
import {
  artifactFingerprint, canonicalRepoIdentity, codebaseFingerprint, loadOrCreateSalt, mergeMemoryRecords,
  normalizeMemoryRecord, validateMemoryRecord, type MemoryRecord,
} from '../../src/cartridge/memory.ts';
import { readComplianceDescriptor, withSaveZone } from '../../src/cartridge/save.ts';
import { stripCartridge } from '../../src/cartridge/strip.ts';
import { verifyCartridge } from '../../src/cartridge/verify.ts';
import { REFERENCE_CARTRIDGES, tempDir, writeAgentDir, writeKey } from './helpers.ts';

const SALT = Buffer.alloc(32, 7);
const CBF = codebaseFingerprint(SALT, 'github.com/example/app');

function fieldRecord(id: string, over: Partial<MemoryRecord> = {}) {
  return { id, portable: false as const, codebaseFingerprint: CBF, title: 'CI quirk', summary: 'CI is slow on Mondays', tags: ['ci'], timestamp: '2026-05-01T00:00:00Z', ...over };
}

describe('memory partition', () => {
  it('matches the reference artifactFingerprint and builds cbf1_ fingerprints', () => {
    const db = new DatabaseSync(REFERENCE_CARTRIDGES[0]!, { readOnly: true });
    const row = db.prepare("SELECT artifact_fingerprint, payload FROM memory WHERE zone='rom'").get() as { artifact_fingerprint: string; payload: string };
    db.close();
    expect(artifactFingerprint(JSON.parse(row.payload))).toBe(row.artifact_fingerprint);
    expect(CBF).toMatch(/^cbf1_[0-9a-f]{40}$/);
    expect(CBF).not.toContain('example');
    expect(codebaseFingerprint(Buffer.alloc(32, 8), 'github.com/example/app')).not.toBe(CBF);
  });

  it('canonicalises repository identities', () => {
    const same = ['https://user:pw@GitHub.com:443/Example/App.git', 'git@github.com:example/app.git', 'ssh://git@github.com:22/example/app/', 'https://github.com/example/app'];
    for (const url of same) expect(canonicalRepoIdentity({ originUrl: url }), url).toBe('github.com/example/app');
    expect(canonicalRepoIdentity({ originUrl: 'https://git.example.com:8443/a/b.git' })).toBe('git.example.com:8443/a/b');
    expect(canonicalRepoIdentity({ rootCommit: 'ABCDEF1234567' })).toBe('commit:abcdef1234567');
    expect(() => canonicalRepoIdentity({})).toThrow(/cannot identify/);
  });

  it('creates a per-installation salt file with mode 0600 and reuses it', () => {
    const path = join(tempDir(), 'home', 'installation-salt');
    const a = loadOrCreateSalt(path);
    expect(a.length).toBe(32);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(loadOrCreateSalt(path)).toEqual(a);
  });

  it('rejects malformed tier combinations', () => {
    expect(() => validateMemoryRecord({ id: 'a', portable: true, codebaseFingerprint: CBF })).toThrow(/portable:true/);
    expect(() => validateMemoryRecord({ id: 'a', portable: true, codebaseFingerprint: null, repoId: 'r' })).toThrow(/repoId/);
    expect(() => validateMemoryRecord({ id: 'a', portable: false, codebaseFingerprint: null })).toThrow(/portable:false/);
    expect(() => validateMemoryRecord({ id: 'a', codebaseFingerprint: null } as never)).toThrow(/boolean 'portable'/);
  });

  it('merges idempotently by id, then by fingerprint, in any order', () => {
    const a = normalizeMemoryRecord(fieldRecord('a', { impact: 'positive', xpAwarded: 5 }));
    const b = normalizeMemoryRecord(fieldRecord('b', { impact: 'positive', xpAwarded: 5 }));
    const longer = normalizeMemoryRecord(fieldRecord('a', { summary: 'CI is slow on Mondays because of the nightly backup', impact: 'negative', tags: ['infra'], xpAwarded: 9 }));
    expect(mergeMemoryRecords([a], [b])).toHaveLength(1); // same content, different id → one record
    const once = mergeMemoryRecords([a], [longer]);
    expect(once).toHaveLength(1);
    expect(once[0]).toMatchObject({ summary: longer.summary, impact: 'negative', xpAwarded: 9, tags: ['ci', 'infra'] });
    expect(mergeMemoryRecords(once, [longer])).toEqual(once);
    expect(mergeMemoryRecords([longer], [a])).toEqual(once);
    const other = normalizeMemoryRecord(fieldRecord('a', { codebaseFingerprint: codebaseFingerprint(SALT, 'github.com/x/y') }));
    expect(() => mergeMemoryRecords([a], [other])).toThrow(/tier\/codebase boundary/);
  });
});

describe('SAVE zone, strip, inspect, spec', () => {
  function built() {
    const root = tempDir();
    const agent = join(root, 'agent');
    mkdirSync(agent);
    writeAgentDir(agent);
    const out = join(root, 'a.acx');
    const r = buildCartridge({ dir: agent, out, key: writeKey(root).keyPath, publisher: 'io.github.example' });
    return { root, out, hash: r.manifestHash };
  }

  it('writes SAVE rows without touching ROM; strip removes them and proves hash equality', () => {
    const b = built();
    withSaveZone(b.out, (save) => {
      save.putMemory([fieldRecord('ci-quirk')]);
      save.putMemory([fieldRecord('ci-quirk', { summary: 'CI is slow on Mondays (backup window)' })]);
      save.putFile('save/notes/today.md', Buffer.from('learned things'));
      save.putComplianceDescriptor({ schemaVersion: 'acx.harness.compliance.v1', verdict: 'accept' });
    });
    expect(readComplianceDescriptor(b.out)).toMatchObject({ verdict: 'accept' });
    const c = Cartridge.open(b.out);
    expect(c.savePresent).toBe(true);
    expect(c.getMeta('acx.save_codebase_fingerprint')).toBe(CBF);
    expect((c.db.prepare("SELECT COUNT(*) AS n FROM memory WHERE zone='save'").get() as { n: number }).n).toBe(1);
    c.close();
    expect(verifyCartridge(b.out)).toMatchObject({ verdict: 'portable', manifestHash: b.hash });

    expect(() => withSaveZone(b.out, (s) => s.putFile('rom/x.md', Buffer.from('x')))).toThrow(/not a SAVE path/);
    expect(() => withSaveZone(b.out, (s) => s.putMemory([{ id: 'p', portable: true, codebaseFingerprint: null }]))).toThrow(/only field-learned/);

    const stripped = join(b.root, 'stripped.acx');
    const r = stripCartridge(b.out, stripped);
    expect(r).toMatchObject({ equal: true, signedHash: b.hash, strippedHash: b.hash });
    expect(r.removed).toMatchObject({ memory: 1, files: 2 });
    const s = Cartridge.open(stripped);
    expect(s.savePresent).toBe(false);
    expect(s.listFiles('save/')).toEqual([]);
    expect(s.getMeta('acx.save_codebase_fingerprint')).toBeNull();
    s.close();
    expect(verifyCartridge(stripped).verdict).toBe('portable');
  });

  it('strips reference cartridges and refuses to strip a tampered one', () => {
    const dir = tempDir();
    for (const ref of REFERENCE_CARTRIDGES) {
      const r = stripCartridge(ref, join(dir, `s-${ref.split('/').pop()}`));
      expect(r.equal).toBe(true);
    }
    const bad = join(dir, 'bad.acx');
    copyFileSync(REFERENCE_CARTRIDGES[0]!, bad);
    const db = new DatabaseSync(bad);
    db.exec("UPDATE cartridge SET value='Mallory' WHERE key='acx.agent_name'");
    db.close();
    expect(() => stripCartridge(bad, join(dir, 'out.acx'))).toThrow(/signature covers/);
  });

  it('inspects reference and acx cartridges (human and JSON)', () => {
    const report = inspectCartridge(REFERENCE_CARTRIDGES[0]!);
    expect(report.rom.objects).toBe(27);
    expect(report.rom.byKind).toEqual({ cartridge: 18, memory: 1, sqlar: 8 });
    expect(report.skills.map((s) => s.name)).toEqual(['expertise-security-expert']);
    expect(report.attestations).toHaveLength(1);
    expect(report.meta.find((m) => m.key === 'acx.package_spec')?.signed).toBe(false);
    expect(report.verification.verdict).toBe('portable');
    const text = formatInspect(report);
    expect(text).toContain('Rex Calder 1.0.0');
    expect(text).toContain('verdict:   portable');
    expect(JSON.parse(JSON.stringify(inspectCartridge(built().out))).skills[0].name).toBe('release-notes');
  });

  it('validates the package spec of reference and acx cartridges, and agent directories', () => {
    for (const ref of REFERENCE_CARTRIDGES) expect(checkSpec(ref)).toMatchObject({ ok: true, issues: [] });
    const b = built();
    const report = checkSpec(b.out);
    expect(report.issues).toEqual([]);
    expect(report.artifacts.map((a) => a.role)).toHaveLength(8);
    const db = new DatabaseSync(b.out);
    const spec = JSON.parse(Buffer.from((db.prepare("SELECT data FROM sqlar WHERE name='rom/package-spec.json'").get() as { data: Uint8Array }).data).toString());
    spec.artifacts.push({ role: 'extra', kind: 'meta', schema: 'x', required: false });
    spec.artifacts[0].schema = 'acx.cartridge-meta/2';
    const bytes = Buffer.from(JSON.stringify(spec));
    db.prepare("UPDATE sqlar SET data=?, sz=? WHERE name='rom/package-spec.json'").run(bytes, bytes.length);
    db.close();
    const bad = checkSpec(b.out);
    expect(bad.ok).toBe(false);
    expect(bad.issues.join('\n')).toMatch(/role 'extra' is not part/);
    expect(bad.issues.join('\n')).toMatch(/schema must be "acx.cartridge-meta\/1"/);

    const dirRoot = tempDir();
    writeAgentDir(dirRoot);
    expect(checkSpec(dirRoot).ok).toBe(true);
    writeAgentDir(dirRoot, { 'prompts/initialize.md': 'token AKIAIOSFODNN7EXAMPLE' });
    expect(checkSpec(dirRoot)).toMatchObject({ ok: false, issues: expect.arrayContaining([expect.stringMatching(/aws-access-key/)]) });
  });
});
