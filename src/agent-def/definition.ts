import { DEFAULT_MAX_STEPS } from '../engine/caps.ts';
import { PROVIDERS } from '../model/providers.ts';
import { DEFAULT_BUILTINS, type BuiltinName } from '../tools/builtin/names.ts';
import { isPluginFileName } from '../tools/plugin-names.ts';
import { AcxError } from '../core/errors.ts';
import { DEFAULT_EMBEDDING_ENGINE, defaultLoopContextPolicy, harnessRequirementsFor, ROLE_BUILTINS } from './defaults.ts';
import { normalizeAuthors, parseJson, readDirectorySource } from './directory.ts';
import { definitionError } from './errors.ts';
import { type AgentManifest, parseAgentManifest } from './manifest.ts';
import type { MemorySeed } from './memory.ts';
import { type LoopContextIntent, parseLoopPolicy } from './policy.ts';
import { readRomSource } from './rom.ts';
import { parseSkill, type Skill } from './skill.ts';
import {
  AGENT_JSON_PATH,
  type AgentLayout,
  type AgentSource,
  type DefinitionFile,
  INITIALIZE_PATH,
  LOOP_POLICY_PATH,
  REQUIREMENTS_PATH,
  type RomFileMap,
  type SourceCatalog,
  SYSTEM_PROMPT_PATH,
} from './source.ts';

/**
 * The one reader of an agent definition. A directory and a cartridge's ROM come in as the same
 * map of ROM-named files (source.ts); everything below reads that map, so `acx run DIR` and
 * `acx run` of the cartridge built from DIR see the same agent: the same agent.json (one schema),
 * prompts, skills (one SKILL.md parser), memory seeds, MCP drop-ins, harness requirements and
 * loop-context policy. Where a directory leaves a document out, the default is made here, once,
 * and a build packs that very document.
 */
export interface AgentDefinition {
  kind: AgentSource['kind'];
  /** The directory, or the cartridge file. */
  path: string;
  layout: AgentLayout;
  manifest: AgentManifest;
  /** agent.json as written (absent for the agent-package layout and reference cartridges). */
  agentJson: Record<string, unknown> | undefined;
  systemPrompt: string;
  initialize: string;
  /** Parsed on first read. */
  readonly skills: Skill[];
  memory: MemorySeed[];
  /** rom/mcp/*.json drop-ins: the server name (file stem) and the document. */
  mcp: Array<{ name: string; file: string; text: string }>;
  /** rom/tools/* code plugins: the file name and its bytes (a directory run imports them from disk). */
  plugins: Array<{ name: string; file: string; bytes: Buffer }>;
  requirements: {
    bytes: Uint8Array;
    origin: 'definition' | 'derived';
    /** Required roles (SPEC §8.4) the declared built-ins cannot bind (derived requirements only). */
    unbound: string[];
  };
  policy: { bytes: Uint8Array | null; origin: 'definition' | 'derived'; intent: LoopContextIntent };
  /** Every ROM file of the definition, the generated ones included: what a build packs. */
  files: DefinitionFile[];
  /** What a build writes besides the files (meta and catalog). */
  catalog: SourceCatalog & { publisher: string | null; meta: Record<string, string> };
  /** The source's notes (memory left out of a cartridge, and why). */
  notes: string[];
  /** Everything read from a directory, for the scrub gate; links a build refuses. */
  inputs: AgentSource['inputs'];
  links: string[];
}

/** Reads the agent directory at `dir`. */
export function readAgentDirectory(dir: string): AgentDefinition {
  return readAgentDefinition(readDirectorySource(dir));
}

/**
 * Reads a cartridge's ROM (`path` names it in messages). A ROM acx cannot read is the
 * publisher's to fix, so its errors say so.
 */
export function readCartridgeDefinition(path: string, rom: RomFileMap): AgentDefinition {
  try {
    return readAgentDefinition(readRomSource(path, rom));
  } catch (error) {
    if (!(error instanceof AcxError) || error.code !== 'agent-definition') throw error;
    throw new AcxError('cartridge-rom', `${path}: ${error.message}`, {
      hint: 'The cartridge verified, but its ROM is not bootable by acx; ask its publisher for a fixed build.',
      cause: error,
    });
  }
}

export function readAgentDefinition(source: AgentSource): AgentDefinition {
  const text = (name: string) => source.files.get(name)?.bytes.toString('utf8');
  const where = (name: string) => (source.kind === 'directory' ? source.files.get(name)?.source ?? name : name);
  const agentBytes = source.files.get(AGENT_JSON_PATH)?.bytes;
  const agentJson = agentBytes ? (parseJson(agentBytes, where(AGENT_JSON_PATH)) as Record<string, unknown>) : undefined;
  const meta = source.meta;
  // Reference cartridges carry acx.provider/acx.model; use them only when acx knows the provider.
  const provider = meta['acx.provider'];
  const metaModel = provider && PROVIDERS[provider] && meta['acx.model'] ? `${provider}:${meta['acx.model']}` : undefined;
  const manifest = parseAgentManifest(agentJson ?? {}, where(AGENT_JSON_PATH), {
    id: meta['acx.artifact_id'] ?? (source.kind === 'directory' ? basenameOf(source.path) : 'cartridge'),
    ...(meta['acx.agent_name'] ? { name: meta['acx.agent_name'] } : {}),
    ...(meta['acx.artifact_version'] ? { version: meta['acx.artifact_version'] } : {}),
    ...(metaModel ? { model: metaModel } : {}),
  });

  const files = new Map(source.files);
  const generate = (name: string, value: unknown) => {
    const file = { name, bytes: Buffer.from(`${JSON.stringify(value, null, 2)}\n`), source: '<generated>' };
    files.set(name, file);
    return file;
  };
  // Defaults a directory leaves out; a cartridge always carries both (a build writes them).
  let unbound: string[] = [];
  let requirementsFile = files.get(REQUIREMENTS_PATH);
  if (!requirementsFile) {
    if (source.kind === 'cartridge') throw definitionError(`${REQUIREMENTS_PATH} is missing: a cartridge without harness requirements cannot be negotiated`);
    const derived = harnessRequirementsFor((manifest.tools ?? DEFAULT_BUILTINS) as readonly BuiltinName[]);
    unbound = derived.unbound;
    requirementsFile = generate(REQUIREMENTS_PATH, derived.manifest);
  }
  let policyFile = files.get(LOOP_POLICY_PATH);
  if (!policyFile && source.kind === 'directory') {
    policyFile = generate(LOOP_POLICY_PATH, defaultLoopContextPolicy(manifest.stepBudget ?? DEFAULT_MAX_STEPS, DEFAULT_EMBEDDING_ENGINE.id));
  }

  // Parsed on first use (their YAML frontmatter needs the YAML parser): a command that only needs
  // the agent's identity and budget (a wake answering from its store) never reads them.
  let skills: Skill[] | undefined;
  const readSkills = (): Skill[] =>
    (skills ??= [...files.keys()]
      .filter((name) => /^rom\/skills\/[^/]+\/SKILL\.md$/.test(name))
      .map((name) => parseSkill(text(name) ?? '', name.split('/')[2]!, name, where(name)))
      .sort((a, b) => a.name.localeCompare(b.name)));

  const knowledge = (name: string) => stripHtmlComments(text(`rom/knowledge/${name}`) ?? '');
  // acx layout: prompts/; the agent-package layout: knowledge/IDENTITY.md + STYLE.md.
  const systemPrompt = stripHtmlComments(text(SYSTEM_PROMPT_PATH) ?? '') || [knowledge('IDENTITY.md'), knowledge('STYLE.md')].filter(Boolean).join('\n\n');

  return {
    kind: source.kind,
    path: source.path,
    layout: source.layout,
    manifest,
    agentJson,
    systemPrompt,
    initialize: stripHtmlComments(text(INITIALIZE_PATH) ?? ''),
    get skills() {
      return readSkills();
    },
    // In id order, as a cartridge stores its ROM rows.
    memory: [...source.memory].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
    mcp: [...files.keys()]
      .filter((name) => name.startsWith('rom/mcp/') && name.endsWith('.json'))
      .sort()
      .map((name) => ({ name: name.slice('rom/mcp/'.length, -'.json'.length), file: name, text: text(name) ?? '' })),
    plugins: [...files.keys()]
      // Only plugin file names (never "..", hidden or odd names): the host writes these files to import them.
      .filter((name) => /^rom\/tools\/[^/]+$/.test(name) && isPluginFileName(name.slice('rom/tools/'.length)))
      .sort()
      .map((name) => ({ name: name.slice('rom/tools/'.length), file: name, bytes: files.get(name)!.bytes })),
    requirements: { bytes: new Uint8Array(requirementsFile.bytes), origin: requirementsFile.source === '<generated>' ? 'derived' : 'definition', unbound },
    policy: {
      bytes: policyFile ? new Uint8Array(policyFile.bytes) : null,
      origin: policyFile?.source === '<generated>' ? 'derived' : 'definition',
      intent: parseLoopPolicy(policyFile?.bytes ?? null, source.path),
    },
    files: [...files.values()],
    catalog: catalogOf(source, manifest, agentJson),
    notes: source.notes,
    inputs: source.inputs,
    links: source.links,
  };
}

function catalogOf(source: AgentSource, manifest: AgentManifest, agentJson: Record<string, unknown> | undefined): AgentDefinition['catalog'] {
  if (!agentJson) {
    const catalog = source.catalog ?? {
      description: source.meta['acx.description'] ?? '',
      license: source.meta['acx.license'] ?? 'Apache-2.0',
      authors: [],
      tags: [],
      createdAt: source.meta['acx.created_at'] ?? null,
    };
    return { ...catalog, publisher: null, meta: source.meta };
  }
  const [provider, ...modelRest] = (manifest.model ?? '').split(':');
  const meta: Record<string, string> = {};
  if (manifest.model) {
    meta['acx.provider'] = provider ?? '';
    meta['acx.model'] = modelRest.join(':');
  }
  if (manifest.homepage) meta['acx.homepage'] = manifest.homepage;
  return {
    description: manifest.description ?? '',
    license: manifest.license ?? 'Apache-2.0',
    authors: normalizeAuthors(manifest.authors),
    tags: manifest.tags ?? [],
    createdAt: null,
    publisher: manifest.publisher ?? null,
    meta,
  };
}

/**
 * Why the derived requirements cannot be packed: a cartridge must require the four roles of
 * SPEC §8.4, and acx binds them to built-ins the agent does not declare. Null when they can.
 */
export function unboundRolesProblem(definition: AgentDefinition): { message: string; hint: string } | null {
  const { unbound } = definition.requirements;
  if (unbound.length === 0) return null;
  const tools = definition.manifest.tools ?? DEFAULT_BUILTINS;
  const missing = [...new Set(unbound.map((role) => ROLE_BUILTINS[role]!))];
  const quoted = (names: readonly string[]) => names.map((n) => JSON.stringify(n)).join(', ');
  return {
    message:
      `agent.json "tools" [${quoted(tools)}] has no tool for the required role${unbound.length > 1 ? 's' : ''} ${unbound.join(', ')}: ` +
      `every cartridge requires ${Object.keys(ROLE_BUILTINS).join(', ')} (SPEC §8.4), which acx binds to its built-ins ${quoted([...new Set(Object.values(ROLE_BUILTINS))])}`,
    hint: `add ${quoted(missing)} to "tools" in agent.json (or leave "tools" out for every default built-in), or write a harness-requirements.json whose roles the tools of your MCP servers (mcp/*.json) satisfy`,
  };
}

/** HTML comments are operator notes; they never reach the model. */
export function stripHtmlComments(text: string): string {
  return text.replace(/<!--[\s\S]*?-->/g, '').replace(/\n{3,}/g, '\n\n').trim();
}

function basenameOf(path: string): string {
  return path.split(/[\\/]/).filter(Boolean).pop() ?? path;
}
