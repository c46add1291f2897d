import { Cartridge } from './container.ts';
import { computeRomManifest } from './manifest.ts';
import { UNSIGNED_META_KEYS } from './format.ts';
import { verifyOpen, type VerifyOptions, type VerifyResult } from './verify.ts';

export interface InspectReport {
  path: string;
  applicationId: string;
  userVersion: string;
  savePresent: boolean;
  meta: Array<{ key: string; value: string; signed: boolean }>;
  rom: { objects: number; byKind: Record<string, number>; manifestHash: string };
  files: Array<{ name: string; zone: string; size: number; stored: number; compressed: boolean }>;
  memory: Record<string, number>;
  skills: Array<{ name: string; description: string; path: string }>;
  capabilities: string[];
  signatures: Array<{ sigId: string; keyid: string; createdAt: string }>;
  attestations: Array<{ id: string; type: string; mediaType: string; createdAt: string }>;
  verification: VerifyResult;
}

export function inspectCartridge(path: string, options: VerifyOptions = {}): InspectReport {
  const cart = Cartridge.open(path, { readonly: true });
  try {
    const manifest = computeRomManifest(cart);
    const romObjects = cart.objects('rom');
    const covered = new Set(romObjects.map((o) => o.source_ref));
    const byKind: Record<string, number> = {};
    for (const o of romObjects) byKind[o.kind] = (byKind[o.kind] ?? 0) + 1;
    const memory: Record<string, number> = {};
    for (const r of cart.db.prepare('SELECT zone, COUNT(*) AS n FROM memory GROUP BY zone').all() as Array<{ zone: string; n: number }>) {
      memory[r.zone] = Number(r.n);
    }
    const all = <T>(table: string, sql: string): T[] => (cart.hasTable(table) ? (cart.db.prepare(sql).all() as T[]) : []);
    return {
      path,
      applicationId: '0x41435831',
      userVersion: `0x${cart.userVersion.toString(16).padStart(8, '0')}`,
      savePresent: cart.savePresent,
      meta: Object.entries(cart.allMeta()).map(([key, value]) => ({ key, value, signed: !UNSIGNED_META_KEYS.has(key) && covered.has(`cartridge:${key}`) })),
      rom: { objects: romObjects.length, byKind, manifestHash: manifest.manifestHash },
      files: cart.fileRows().map((r) => ({
        name: String(r.name),
        zone: String(r.name).startsWith('rom/') ? 'rom' : String(r.name).startsWith('save/') ? 'save' : 'invalid',
        size: Number(r.sz ?? 0),
        stored: Number(r.stored ?? 0),
        compressed: Number(r.sz ?? 0) !== Number(r.stored ?? 0),
      })),
      memory,
      skills: all<{ name: string; description: string; sqlar_path: string }>('acx_skill', 'SELECT name, description, sqlar_path FROM acx_skill ORDER BY name').map((s) => ({
        name: s.name, description: s.description, path: s.sqlar_path,
      })),
      capabilities: all<{ id: string }>('capabilities', 'SELECT id FROM capabilities ORDER BY id').map((c) => c.id),
      signatures: all<{ sig_id: string; keyid: string; created_at: string }>('signatures', 'SELECT sig_id, keyid, created_at FROM signatures ORDER BY created_at').map((s) => ({
        sigId: s.sig_id, keyid: s.keyid, createdAt: s.created_at,
      })),
      attestations: all<{ att_id: string; type: string; media_type: string; created_at: string }>('attestations', 'SELECT att_id, type, media_type, created_at FROM attestations ORDER BY created_at').map((a) => ({
        id: a.att_id, type: a.type, mediaType: a.media_type, createdAt: a.created_at,
      })),
      verification: verifyOpen(cart, options),
    };
  } finally {
    cart.close();
  }
}

export function formatInspect(r: InspectReport): string {
  const lines: string[] = [];
  const meta = (k: string) => r.meta.find((m) => m.key === k)?.value ?? '';
  lines.push(`${meta('acx.agent_name') || '(unnamed)'} ${meta('acx.artifact_version')}  (${meta('acx.cartridge_id')})`);
  lines.push(`verdict:   ${r.verification.verdict}${r.verification.keyid ? `  key ${r.verification.keyid}` : ''}`);
  lines.push(`rom hash:  ${r.rom.manifestHash}`);
  lines.push(`format:    application_id ${r.applicationId}, user_version ${r.userVersion}, SAVE zone ${r.savePresent ? 'present' : 'absent'}`);
  lines.push('', 'meta:');
  for (const m of r.meta) lines.push(`  ${m.signed ? ' ' : '!'} ${m.key} = ${m.value.length > 100 ? `${m.value.slice(0, 97)}...` : m.value}`);
  if (r.meta.some((m) => !m.signed)) lines.push('  (! = not covered by the signature)');
  lines.push('', `rom objects: ${r.rom.objects}  (${Object.entries(r.rom.byKind).map(([k, n]) => `${k}:${n}`).join(', ')})`);
  lines.push('', 'files:');
  for (const f of r.files) lines.push(`  ${f.zone.padEnd(4)} ${String(f.size).padStart(7)}${f.compressed ? ' z' : '  '} ${f.name}`);
  lines.push('', `memory: ${Object.entries(r.memory).map(([z, n]) => `${z}:${n}`).join(', ') || 'none'}`);
  lines.push('', 'skills:');
  for (const s of r.skills) lines.push(`  - ${s.name}: ${s.description.length > 90 ? `${s.description.slice(0, 87)}...` : s.description}`);
  if (!r.skills.length) lines.push('  (none)');
  if (r.capabilities.length) lines.push('', `capabilities: ${r.capabilities.join(', ')}`);
  lines.push('', `signatures: ${r.signatures.length}   attestations: ${r.attestations.length}`);
  for (const a of r.attestations) lines.push(`  - ${a.id} ${a.type} ${a.mediaType}`);
  return lines.join('\n');
}
