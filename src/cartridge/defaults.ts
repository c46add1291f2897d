/**
 * ROM documents every build generates (not part of the agent definition): the memory vector
 * descriptor and the package spec. The definition's own defaults live in src/agent-def/defaults.ts.
 */

/** acx.lance-memory/1 descriptor (SPEC §7.7): fixed columns, vector dim from the engine. */
export function lanceMemorySchema(engine: { id: string; dim: number }): Record<string, unknown> {
  const col = (name: string, type: string, nullable = false, extra: Record<string, unknown> = {}) => ({ name, type, nullable, ...extra });
  return {
    schemaVersion: 'acx.lance-memory/1',
    format: 'lancedb',
    table: 'memories',
    partitionBy: 'zone',
    distanceMetric: 'cosine',
    embeddingEngine: { id: engine.id, dim: engine.dim },
    textTemplate: 'title + "\\n\\n" + summary',
    columns: [
      col('id', 'utf8'),
      col('zone', 'utf8', false, { enum: ['rom', 'save'] }),
      col('portable', 'bool'),
      col('artifact_fingerprint', 'utf8'),
      col('codebase_fingerprint', 'utf8', true),
      col('title', 'utf8'),
      col('summary', 'utf8'),
      col('source_type', 'utf8'),
      col('tags', 'list<utf8>'),
      col('impact', 'utf8', false, { enum: ['positive', 'neutral', 'negative'] }),
      col('xp_awarded', 'int32'),
      col('timestamp', 'utf8'),
      col('text', 'utf8'),
      col('vector', `fixed_size_list<float32, ${engine.dim}>`),
    ],
  };
}

/** The closed acx.package-spec/1 eight-role profile (SPEC §7.7). */
export function packageSpec(input: {
  cartridgeId: string;
  specVersion: string;
  engine: { id: string; dim: number };
  memoryCount: number;
  skillCount: number;
  capabilityCount: number;
  levelCount: number;
}): Record<string, unknown> {
  return {
    schemaVersion: 'acx.package-spec/1',
    cartridgeId: input.cartridgeId,
    specVersion: input.specVersion,
    embeddingEngine: { id: input.engine.id, dim: input.engine.dim },
    artifacts: [
      { role: 'identity', kind: 'meta', schema: 'acx.cartridge-meta/1', required: true },
      { role: 'memory-baseline', kind: 'table', table: 'memory', mediaType: 'application/json', schema: 'acx.memory-record.v1', required: true, count: input.memoryCount },
      { role: 'memory-vectors', kind: 'lance', path: 'vectors/memories.lance', schema: 'acx.lance-memory/1', required: false, signed: false, reindexOnImport: true, descriptor: 'rom/schema/lance-memory.json' },
      { role: 'skills', kind: 'sqlar', path: 'rom/skills/', schema: 'acx.skill/1', required: false, count: input.skillCount },
      { role: 'capabilities', kind: 'table', table: 'capabilities', schema: 'acx.capability/1', required: false, count: input.capabilityCount },
      { role: 'harness', kind: 'sqlar', path: 'rom/manifest/harness-requirements.json', schema: 'acx.harness.v1', required: true },
      { role: 'loop-context', kind: 'sqlar', path: 'rom/policy/loop-context-policy.json', schema: 'acx.loop-context-policy/1.1', required: true },
      { role: 'level', kind: 'attestation', schema: 'acx.level-credential.v1', required: false, count: input.levelCount },
    ],
  };
}
