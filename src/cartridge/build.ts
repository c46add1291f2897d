import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { AcxError } from '../util/errors.ts';
import { canonicalJson, sha256Hex, sha256Oid } from '../util/jcs.ts';
import { Cartridge, type Compression } from './container.ts';
import { lanceMemorySchema, packageSpec } from './defaults.ts';
import { signStatement, STATEMENT_TYPE, PREDICATE_TYPE, type Statement } from './dsse.ts';
import { DEFAULT_EMBEDDING_ENGINE, SPEC_VERSION, UNSIGNED_META_KEYS } from './format.ts';
import { loadSigningKey, type SigningKey } from './keys.ts';
import { readAgentDir, type AgentPlan } from './layout.ts';
import { computeRomManifest, metaOid } from './manifest.ts';
import { normalizeMemoryRecord } from './memory.ts';
import { scrubGate } from './scrub-gate.ts';
import { PUBLISHER_ID } from './trust.ts';

export interface BuildOptions {
  /** Agent directory (acx layout or reference agent-package layout). */
  dir: string;
  /** Output .acx path. */
  out: string;
  /** Signing key, or a path to its PKCS#8 PEM file. */
  key: SigningKey | string;
  /** Reverse-DNS publisher id, e.g. io.github.alice; defaults to agent.json `publisher`. */
  publisher?: string;
  /** Replace an existing output file. */
  overwrite?: boolean;
  /** sqlar storage; 'none' (default) is readable by every implementation. */
  compression?: Compression;
  /** Clock for created_at / signedAt (tests). */
  now?: Date;
}

export interface BuildResult {
  out: string;
  layout: AgentPlan['layout'];
  cartridgeId: string;
  manifestHash: string;
  keyid: string;
  objectCount: number;
  fileCount: number;
  memoryCount: number;
  skipped: string[];
}

/**
 * Packs an agent directory into a signed cartridge. Order: read + validate everything → scrub gate
 * → write a temp file next to `out` → sign → rename. Nothing is left behind on failure.
 */
export function buildCartridge(options: BuildOptions): BuildResult {
  const dir = resolve(options.dir);
  const out = resolve(options.out);
  if (typeof options.key === 'string' && isInside(dir, resolve(options.key))) {
    throw new AcxError('build-key-location', `the signing key ${options.key} is inside the agent directory`, {
      hint: 'move the private key out of the directory being packed; private keys never go into a cartridge',
    });
  }
  if (isInside(dir, out)) {
    throw new AcxError('build-output', `output ${out} is inside the agent directory`, { hint: 'write the cartridge somewhere else' });
  }
  if (existsSync(out) && !options.overwrite) {
    throw new AcxError('build-output', `${out} already exists`, { hint: 'pass --force to replace it, or choose another -o path' });
  }
  const key = typeof options.key === 'string' ? loadSigningKey(options.key) : options.key;
  const plan = readAgentDir(dir);
  const publisher = options.publisher ?? plan.publisher ?? '';
  if (!PUBLISHER_ID.test(publisher)) {
    throw new AcxError('build-publisher', publisher ? `publisher ${JSON.stringify(publisher)} is not a reverse-DNS id` : 'no publisher given', {
      hint: 'pass --publisher (or set "publisher" in agent.json) with your namespace reversed, e.g. io.github.alice',
    });
  }
  scrubGate(plan.scanItems);
  const digests = fileDigests(plan);

  const now = options.now ?? new Date();
  const tmp = join(dirname(out), `.${basename(out)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    // Schema and content commit in one transaction (one fsync) into the temp file, which only
    // becomes `out` by rename after that commit: a reader never sees a half-written cartridge.
    const result = Cartridge.createWith(tmp, (cart) => writePlan(cart, plan, digests, key, publisher, now, options.compression ?? 'none'));
    renameSync(tmp, out);
    return { ...result, out, layout: plan.layout, skipped: plan.skipped };
  } catch (error) {
    rmSync(tmp, { force: true });
    rmSync(`${tmp}-journal`, { force: true });
    throw error;
  }
}

/** Fills a fresh cartridge; runs inside the caller's transaction. */
function writePlan(cart: Cartridge, plan: AgentPlan, digests: Map<string, string>, key: SigningKey, publisher: string, now: Date, compression: Compression) {
  const engine = { ...DEFAULT_EMBEDDING_ENGINE };
  const cartridgeId = `${publisher}/${plan.id}@${randomUUID()}`;
  const createdAt = plan.createdAt ?? now.toISOString();
  const meta: Record<string, string> = {
    'acx.spec_version': SPEC_VERSION,
    'acx.cartridge_id': cartridgeId,
    'acx.artifact_id': plan.id,
    'acx.artifact_version': plan.version,
    'acx.created_at': createdAt,
    'acx.embedding_engine': JSON.stringify({ id: engine.id, dim: engine.dim }),
    'acx.vec0_format': '1',
    'acx.publisher_id': publisher,
    'acx.agent_name': plan.name,
    'acx.description': plan.description,
    'acx.license': plan.license,
    'acx.authors': JSON.stringify(plan.authors.length ? plan.authors : [{ name: publisher }]),
    'acx.tags': JSON.stringify(plan.tags),
    'acx.package_spec': 'rom/package-spec.json',
    'acx.lance_schema': 'rom/schema/lance-memory.json',
    ...plan.meta,
  };
  for (const [k, v] of Object.entries(meta)) cart.setMeta(k, v);

  for (const file of plan.files) putRomFile(cart, file.name, file.bytes, compression, digests.get(file.name));

  for (const rec of plan.memory) {
    const full = normalizeMemoryRecord(rec);
    const payload = canonicalJson(full);
    const oid = sha256Oid(payload);
    cart
      .stmt('INSERT INTO memory(id,zone,artifact_fingerprint,codebase_fingerprint,payload,oid,created_at) VALUES(?,?,?,?,?,?,?)')
      .run(full.id, 'rom', full.artifactFingerprint ?? '', null, payload, oid, full.timestamp);
    cart.putObject({ oid, kind: 'memory', source_ref: `memory:${full.id}`, canon: 'jcs-rfc8785', zone: 'rom', sz: Buffer.byteLength(payload) });
  }

  // The skill index describes the files just written (the same bytes, hashed once above);
  // the manifest pass below re-reads every ROM file from the database and checks it.
  const planned = new Map(plan.files.map((f) => [f.name, f]));
  const fileNames = [...planned.keys()].sort();
  for (const skill of plan.skills) {
    const body = planned.get(skill.sqlarPath)?.bytes ?? Buffer.alloc(0);
    const skillDir = skill.sqlarPath.slice(0, -'/SKILL.md'.length);
    const resources = fileNames
      .filter((n) => n.startsWith(`${skillDir}/`) && n !== skill.sqlarPath)
      .map((n) => ({ path: n, bytes: planned.get(n)?.bytes.length ?? 0, sha256: digests.get(n) ?? '' }));
    cart
      .stmt('INSERT INTO acx_skill(name,description,license,compatibility,skill_version,sqlar_path,body_tokens,content_sha256,resources,ext,schema_version) VALUES(?,?,?,?,?,?,?,?,?,?,?)')
      .run(skill.name, skill.description, skill.license, skill.compatibility, skill.version, skill.sqlarPath, Math.ceil(body.length / 4), digests.get(skill.sqlarPath) ?? sha256Hex(body), JSON.stringify(resources), null, 'acx.skill/1');
  }

  putRomFile(cart, 'rom/schema/lance-memory.json', Buffer.from(`${JSON.stringify(lanceMemorySchema(engine), null, 2)}\n`), compression);
  const spec = packageSpec({
    cartridgeId, specVersion: SPEC_VERSION, engine,
    memoryCount: plan.memory.length, skillCount: plan.skills.length, capabilityCount: 0, levelCount: 0,
  });
  putRomFile(cart, 'rom/package-spec.json', Buffer.from(`${JSON.stringify(spec, null, 2)}\n`), compression);

  // Every meta key except the signature's own hash and SAVE keys is a signed ROM object.
  for (const [k, v] of Object.entries(cart.allMeta())) {
    if (UNSIGNED_META_KEYS.has(k)) continue;
    cart.putObject({ oid: metaOid(k, v), kind: 'cartridge', source_ref: `cartridge:${k}`, canon: 'jcs-rfc8785', zone: 'rom', sz: Buffer.byteLength(v) });
  }

  const manifest = computeRomManifest(cart);
  if (manifest.mismatches.length) {
    throw new AcxError('build-internal', `refusing to sign: ${manifest.mismatches.map((m) => m.sourceRef).join(', ')} diverge from their objects`);
  }
  cart.setMeta('acx.rom_manifest_hash', manifest.manifestHash);
  // No mismatches: the recomputed oids are the stored ones.
  const checksumLines = manifest.entries.map((o) => `${o.oid}  ${o.sourceRef}`).sort().join('\n');
  const signedAt = now.toISOString();
  const statement: Statement = {
    _type: STATEMENT_TYPE,
    subject: [{ name: cartridgeId, digest: { sha256: manifest.manifestHashHex } }],
    predicateType: PREDICATE_TYPE,
    predicate: {
      acxSchemaVersion: SPEC_VERSION,
      publisherId: publisher,
      romDigest: manifest.manifestHash,
      manifestHash: manifest.manifestHash,
      checksumHash: sha256Oid(checksumLines),
      fileCount: manifest.entries.length,
      embeddingEngine: engine,
      signedAt,
      provenanceInstanceId: null,
    },
  };
  const envelope = signStatement(statement, key);
  cart
    .stmt('INSERT INTO signatures(sig_id,target,manifest_hash,envelope,keyid,public_key_pem,alg,created_at) VALUES(?,?,?,?,?,?,?,?)')
    .run(`sig-rom-${manifest.manifestHashHex.slice(0, 12)}`, 'rom-manifest', manifest.manifestHash, JSON.stringify(envelope), key.keyid, key.publicKeyPem, 'ed25519', signedAt);
  return {
    cartridgeId,
    manifestHash: manifest.manifestHash,
    keyid: key.keyid,
    objectCount: manifest.entries.length,
    fileCount: cart.listFiles('rom/').length,
    memoryCount: plan.memory.length,
  };
}

function putRomFile(cart: Cartridge, name: string, bytes: Buffer, compression: Compression, hex = sha256Hex(bytes)): void {
  const size = cart.putFile(name, bytes, { compression });
  cart.putObject({ oid: `sha256:${hex}`, kind: 'sqlar', source_ref: name, canon: 'raw', zone: 'rom', sz: size });
}

/**
 * Hex SHA-256 of every planned file, by ROM name (each file is hashed once for the whole build).
 * objects.oid is the table's primary key, so two ROM files with identical bytes cannot both be
 * registered; one would be left unsigned. Refuse up front with the two names.
 */
function fileDigests(plan: AgentPlan): Map<string, string> {
  const digests = new Map<string, string>();
  const seen = new Map<string, string>();
  for (const f of plan.files) {
    const oid = sha256Hex(f.bytes);
    digests.set(f.name, oid);
    const other = seen.get(oid);
    if (other) {
      throw new AcxError('build-duplicate', `${other} and ${f.source === '<generated>' ? f.name : f.source} have identical bytes`, {
        hint: 'a cartridge addresses ROM files by content hash; remove the duplicate or make the files differ',
      });
    }
    seen.set(oid, f.source === '<generated>' ? f.name : f.source);
  }
  return digests;
}

function isInside(dir: string, target: string): boolean {
  const rel = relative(dir, target);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}
