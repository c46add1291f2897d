import { existsSync, lstatSync } from 'node:fs';
import { type AgentDefinition, readAgentDirectory, unboundRolesProblem } from '../agent-def/definition.ts';
import { detectLayout, parseJson } from '../agent-def/directory.ts';
import { packingProblems } from '../agent-def/manifest.ts';
import { type DefinitionFile, LOOP_POLICY_PATH, REQUIREMENTS_PATH } from '../agent-def/source.ts';
import { definitionError } from '../agent-def/errors.ts';
import { portablePathProblem } from './format.ts';
import type { MemoryRecord } from './memory.ts';
import type { ScanItem } from './scrub-gate.ts';

/**
 * What a build packs: the agent definition as src/agent-def reads it (the same reading a
 * directory run uses), plus what only a cartridge needs — every packing rule (a name, a SemVer
 * version and a description; a system prompt; plain files with portable names; the four
 * required roles bound) checked before anything is written.
 */

export type PlannedFile = DefinitionFile;

export interface PlannedSkill {
  name: string;
  description: string;
  license: string | null;
  compatibility: string | null;
  version: string | null;
  sqlarPath: string;
}

/** Everything a build needs, read and validated from an agent directory before any write. */
export interface AgentPlan {
  layout: AgentDefinition['layout'];
  /** Publisher named by the directory itself (agent.json `publisher`), if any. */
  publisher: string | null;
  id: string;
  name: string;
  version: string;
  description: string;
  license: string;
  authors: Array<{ name: string; url?: string }>;
  tags: string[];
  createdAt: string | null;
  meta: Record<string, string>;
  files: PlannedFile[];
  skills: PlannedSkill[];
  memory: Array<Partial<MemoryRecord> & { id: string; portable: boolean }>;
  /** Human-readable notes on what was left out (e.g. field-learned memory). */
  skipped: string[];
  /** What the scrub gate scans: every input the cartridge content comes from. */
  scanItems: ScanItem[];
}

export { detectLayout };

export function readAgentDir(dir: string): AgentPlan {
  if (!existsSync(dir) || !lstatSync(dir).isDirectory()) {
    throw layoutError(`${dir} is not a directory`, 'pass the agent directory (the one holding agent.json)');
  }
  if (!detectLayout(dir)) {
    throw layoutError(`${dir} holds neither agent.json (acx layout) nor manifest.json (agent-package layout)`, 'see docs/agent-layout.md for the directory shape');
  }
  return planOf(readAgentDirectory(dir));
}

function planOf(definition: AgentDefinition): AgentPlan {
  const link = definition.links[0];
  if (link) throw layoutError(`${link} is a symbolic link`, 'agent directories are packed as plain files; replace the link with the file it points at');
  if (definition.agentJson) {
    const missing = packingProblems(definition.agentJson)[0];
    if (missing) throw layoutError(`agent.json: ${missing}`, 'a cartridge needs id, name, version and description; see docs/agent-layout.md for the fields');
    if (!definition.files.some((f) => f.name === 'rom/prompts/system-prompt.md')) {
      throw layoutError('prompts/system-prompt.md is missing', 'write the agent identity and operating instructions there');
    }
  }
  for (const file of definition.files) {
    const problem = portablePathProblem(file.name);
    if (problem) throw layoutError(`${file.source} cannot be packed: ${problem}`, 'rename the file to plain ASCII segments');
  }
  // The documents a build packs are checked for what they claim to be (a run only reads their intent).
  const schemaVersion = (name: string) => {
    const file = definition.files.find((f) => f.name === name)!;
    return (parseJson(file.bytes, file.source) as { schemaVersion?: unknown } | null)?.schemaVersion;
  };
  if (schemaVersion(REQUIREMENTS_PATH) !== 'acx.harness.v1') throw layoutError('harness-requirements.json: schemaVersion must be "acx.harness.v1"');
  const policyVersion = schemaVersion(LOOP_POLICY_PATH);
  if (policyVersion !== 'acx.loop-context-policy/1' && policyVersion !== 'acx.loop-context-policy/1.1') {
    throw layoutError('loop-context-policy.json: schemaVersion must be "acx.loop-context-policy/1" or "/1.1"');
  }
  // A run skips a broken drop-in loudly; a build refuses to pack one.
  for (const dropIn of definition.mcp) parseJson(Buffer.from(dropIn.text), `mcp/${dropIn.name}.json`);
  const unbound = unboundRolesProblem(definition);
  if (unbound) throw layoutError(unbound.message, unbound.hint);
  const { manifest, catalog } = definition;
  return {
    layout: definition.layout,
    publisher: catalog.publisher,
    id: manifest.id,
    name: manifest.name,
    version: manifest.version,
    description: catalog.description,
    license: catalog.license,
    authors: catalog.authors,
    tags: catalog.tags,
    createdAt: catalog.createdAt,
    meta: definition.agentJson ? catalog.meta : Object.fromEntries(Object.entries(catalog.meta).filter(([k]) => !BUILD_META.has(k))),
    files: definition.files,
    skills: definition.skills.map((s) => ({ name: s.name, description: s.description, license: s.license, compatibility: s.compatibility, version: s.version, sqlarPath: s.path })),
    memory: definition.memory.filter((seed) => seed.portable).map((seed) => seed.record as AgentPlan['memory'][number]),
    skipped: definition.notes,
    scanItems: definition.inputs,
  };
}

/** Meta keys the build writes itself (from the plan's id, name and version). */
const BUILD_META = new Set(['acx.artifact_id', 'acx.artifact_version', 'acx.agent_name']);

const layoutError = definitionError;
