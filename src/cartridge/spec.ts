import { existsSync, statSync } from 'node:fs';
import { AcxError, errorMessage } from '../core/errors.ts';
import { Cartridge } from './container.ts';
import { portablePathProblem } from './format.ts';
import { readAgentDir } from './layout.ts';
import { scanForSecrets } from './scrub-gate.ts';
import { memoryTierProblem } from './verify.ts';

export interface SpecReport {
  target: string;
  kind: 'cartridge' | 'directory';
  ok: boolean;
  issues: string[];
  artifacts: Array<{ role: string; schema: string; kind: string; required: boolean; count?: number }>;
}

type Profile = { keys: string[]; values: Record<string, unknown>; count?: boolean };

/** The closed acx.package-spec/1 profile: each role's exact keys and fixed values (SPEC §7.7). */
const PROFILES: Record<string, Profile> = {
  identity: { keys: ['role', 'kind', 'schema', 'required'], values: { kind: 'meta', schema: 'acx.cartridge-meta/1', required: true } },
  'memory-baseline': {
    keys: ['role', 'kind', 'table', 'mediaType', 'schema', 'required', 'count'],
    values: { kind: 'table', table: 'memory', mediaType: 'application/json', schema: 'acx.memory-record.v1', required: true }, count: true,
  },
  'memory-vectors': {
    keys: ['role', 'kind', 'path', 'schema', 'required', 'signed', 'reindexOnImport', 'descriptor'],
    values: { kind: 'lance', path: 'vectors/memories.lance', schema: 'acx.lance-memory/1', required: false, signed: false, reindexOnImport: true, descriptor: 'rom/schema/lance-memory.json' },
  },
  skills: { keys: ['role', 'kind', 'path', 'schema', 'required', 'count'], values: { kind: 'sqlar', path: 'rom/skills/', schema: 'acx.skill/1', required: false }, count: true },
  capabilities: { keys: ['role', 'kind', 'table', 'schema', 'required', 'count'], values: { kind: 'table', table: 'capabilities', schema: 'acx.capability/1', required: false }, count: true },
  harness: { keys: ['role', 'kind', 'path', 'schema', 'required'], values: { kind: 'sqlar', path: 'rom/manifest/harness-requirements.json', schema: 'acx.harness.v1', required: true } },
  'loop-context': { keys: ['role', 'kind', 'path', 'schema', 'required'], values: { kind: 'sqlar', path: 'rom/policy/loop-context-policy.json', schema: 'acx.loop-context-policy/1.1', required: true } },
  level: { keys: ['role', 'kind', 'schema', 'required', 'count'], values: { kind: 'attestation', schema: 'acx.level-credential.v1', required: false }, count: true },
};
const TOP_KEYS = ['schemaVersion', 'cartridgeId', 'specVersion', 'embeddingEngine', 'artifacts'];
const MEMORY_FIELDS = ['id', 'title', 'summary', 'sourceType', 'portable', 'codebaseFingerprint', 'timestamp', 'impact', 'xpAwarded', 'tags', 'artifactFingerprint', 'zone'];

/** `acx spec FILE|DIR`: package-spec validation of a cartridge, or a pre-build check of a directory. */
export function checkSpec(target: string): SpecReport {
  if (!existsSync(target)) throw new AcxError('spec-missing', `no such file or directory: ${target}`);
  return statSync(target).isDirectory() ? checkDirectory(target) : checkCartridgeSpec(target);
}

function checkDirectory(dir: string): SpecReport {
  const issues: string[] = [];
  try {
    const plan = readAgentDir(dir);
    for (const f of scanForSecrets(plan.scanItems)) issues.push(`scrub gate: ${f.file}@${f.byteOffset} (${f.ruleId})`);
    for (const s of plan.skipped) issues.push(`note: ${s}`);
    const blocking = issues.filter((i) => !i.startsWith('note: '));
    return { target: dir, kind: 'directory', ok: blocking.length === 0, issues, artifacts: [] };
  } catch (error) {
    if (AcxError.isInstance(error)) return { target: dir, kind: 'directory', ok: false, issues: [error.describe()], artifacts: [] };
    throw error;
  }
}

export function checkCartridgeSpec(path: string): SpecReport {
  const cart = Cartridge.open(path, { readonly: true });
  const issues: string[] = [];
  const artifacts: SpecReport['artifacts'] = [];
  try {
    for (const row of cart.fileRows()) {
      const problem = portablePathProblem(row.name);
      if (problem) issues.push(`sqlar path ${JSON.stringify(String(row.name).slice(0, 120))} is unsafe: ${problem}`);
    }
    const readJson = (name: string): Record<string, unknown> | null => {
      let bytes: Buffer | null;
      try {
        bytes = cart.getFile(name);
      } catch (error) {
        issues.push(`${name}: ${errorMessage(error)}`);
        return null;
      }
      if (!bytes) {
        issues.push(`missing ${name}`);
        return null;
      }
      try {
        const v = JSON.parse(bytes.toString('utf8')) as unknown;
        if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
        issues.push(`${name} must hold a JSON object`);
      } catch (error) {
        issues.push(`${name} is not JSON: ${errorMessage(error)}`);
      }
      return null;
    };
    const engine = parseEngine(cart.getMeta('acx.embedding_engine'), issues);
    const spec = readJson('rom/package-spec.json');
    if (spec) {
      for (const k of Object.keys(spec)) if (!TOP_KEYS.includes(k)) issues.push(`package-spec has unknown field '${k}'`);
      if (spec.schemaVersion !== 'acx.package-spec/1') issues.push(`package-spec schemaVersion is ${JSON.stringify(spec.schemaVersion)}, expected acx.package-spec/1`);
      if (spec.cartridgeId !== cart.getMeta('acx.cartridge_id')) issues.push('package-spec cartridgeId does not match acx.cartridge_id');
      if (spec.specVersion !== cart.getMeta('acx.spec_version')) issues.push('package-spec specVersion does not match acx.spec_version');
      const e = spec.embeddingEngine as Record<string, unknown> | undefined;
      if (!e || typeof e !== 'object' || Object.keys(e).some((k) => k !== 'id' && k !== 'dim') || e.id !== engine?.id || e.dim !== engine?.dim) {
        issues.push('package-spec embeddingEngine must be exactly {id, dim} of acx.embedding_engine');
      }
      if (!Array.isArray(spec.artifacts)) issues.push('package-spec artifacts must be an array');
      else {
        const seen = new Set<string>();
        spec.artifacts.forEach((a: unknown, i: number) => {
          const where = `package-spec artifacts[${i}]`;
          if (!a || typeof a !== 'object' || Array.isArray(a)) return void issues.push(`${where} must be an object`);
          const art = a as Record<string, unknown>;
          const role = String(art.role);
          const profile = PROFILES[role];
          if (!profile) return void issues.push(`${where}: role '${role}' is not part of acx.package-spec/1`);
          if (seen.has(role)) issues.push(`${where}: role '${role}' is duplicated`);
          seen.add(role);
          for (const k of Object.keys(art)) if (!profile.keys.includes(k)) issues.push(`${where} has unknown field '${k}'`);
          for (const k of profile.keys) if (!(k in art)) issues.push(`${where} is missing '${k}'`);
          for (const [k, v] of Object.entries(profile.values)) if (art[k] !== v) issues.push(`${where}.${k} must be ${JSON.stringify(v)}`);
          if (profile.count && (!Number.isInteger(art.count) || (art.count as number) < 0)) issues.push(`${where}.count must be a non-negative integer`);
          artifacts.push({ role, schema: String(art.schema), kind: String(art.kind), required: art.required === true, ...(Number.isInteger(art.count) ? { count: art.count as number } : {}) });
        });
        for (const role of Object.keys(PROFILES)) if (!seen.has(role)) issues.push(`package-spec is missing role '${role}'`);
      }
    }
    const harness = readJson('rom/manifest/harness-requirements.json');
    if (harness && harness.schemaVersion !== 'acx.harness.v1') issues.push('harness-requirements schemaVersion must be acx.harness.v1');
    const policy = readJson('rom/policy/loop-context-policy.json');
    if (policy && !['acx.loop-context-policy/1', 'acx.loop-context-policy/1.1'].includes(String(policy.schemaVersion))) {
      issues.push('loop-context-policy schemaVersion is not recognised');
    }
    const lance = readJson('rom/schema/lance-memory.json');
    if (lance) {
      const dim = (lance.embeddingEngine as { dim?: unknown } | undefined)?.dim;
      if (dim !== engine?.dim) issues.push(`lance schema dim ${String(dim)} differs from the engine dim ${String(engine?.dim)}`);
      if (!Array.isArray(lance.columns) || lance.columns.length !== 14) issues.push('lance schema must list the 14 acx.lance-memory/1 columns');
    }
    const rows = cart.db.prepare('SELECT id, zone, codebase_fingerprint, payload FROM memory').all() as Array<{ id: string; zone: string; codebase_fingerprint: string | null; payload: string }>;
    for (const row of rows) {
      const tier = memoryTierProblem(row);
      if (tier) {
        issues.push(`memory ${row.id}: ${tier}`);
        continue;
      }
      const rec = JSON.parse(row.payload) as Record<string, unknown>;
      const missing = MEMORY_FIELDS.filter((f) => !(f in rec));
      if (missing.length) issues.push(`memory ${row.id} lacks ${missing.join(', ')}`);
      if (!['positive', 'neutral', 'negative'].includes(String(rec.impact))) issues.push(`memory ${row.id}: impact is invalid`);
      if (rec.zone !== row.zone) issues.push(`memory ${row.id}: payload zone differs from the row zone`);
    }
    return { target: path, kind: 'cartridge', ok: issues.length === 0, issues, artifacts };
  } finally {
    cart.close();
  }
}

function parseEngine(text: string | null, issues: string[]): { id?: unknown; dim?: unknown } | null {
  try {
    const v = JSON.parse(text ?? 'null') as unknown;
    return v && typeof v === 'object' ? (v as { id?: unknown; dim?: unknown }) : null;
  } catch {
    issues.push('acx.embedding_engine meta is not JSON');
    return null;
  }
}
