import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { AcxError, errorMessage } from '../core/errors.ts';
import { canonicalJson } from '../util/jcs.ts';
import { DEFAULT_BUILTINS, isBuiltinName, KNOWN_BUILTINS, type BuiltinName } from '../tools/builtin/names.ts';
import { defaultHarnessRequirements, defaultLoopContextPolicy, harnessRequirementsFor, ROLE_BUILTINS } from './defaults.ts';
import { DEFAULT_EMBEDDING_ENGINE, portablePathProblem } from './format.ts';
import type { MemoryRecord } from './memory.ts';
import type { ScanItem } from './scrub-gate.ts';

/** A file destined for the ROM zone. `source` is the path relative to the agent dir, or "<generated>". */
export interface PlannedFile {
  name: string;
  bytes: Buffer;
  source: string;
}

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
  layout: 'acx' | 'agent-package';
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

/** agent.json of the acx layout (docs/agent-layout.md). */
export interface AgentJson {
  id: string;
  name: string;
  version: string;
  description: string;
  /** Default publisher for `acx build` when --publisher is not given. */
  publisher?: string;
  model?: string;
  /** 'direct' / 'final-text': the final text is the reply; 'unspoken' or {tool}: only that tool speaks. */
  speech?: 'unspoken' | 'direct' | 'final-text' | { tool: string };
  stepBudget?: number;
  /** Alias of stepBudget (the name src/config uses). */
  maxSteps?: number;
  license?: string;
  tags?: string[];
  authors?: Array<string | { name: string; url?: string }>;
  homepage?: string;
  /** The built-ins the agent uses (default: DEFAULT_BUILTINS); what a derived harness manifest is built from. */
  tools?: string[];
}

const ID = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;
const SKILL_NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const SKILL_KEYS = new Set(['name', 'description', 'license', 'compatibility', 'metadata', 'allowed-tools']);
const MODEL = /^[a-z0-9][a-z0-9._-]*:\S+$/;
const REFERENCE_KNOWLEDGE = ['IDENTITY.md', 'SKILLS.md', 'MEMORY.md', 'CAREER.md', 'EQUIPMENT.md', 'LEARNING_PATH.md', 'EXCHANGE.md', 'STYLE.md'];

/** Which layout a directory uses, or null when it is neither. */
export function detectLayout(dir: string): AgentPlan['layout'] | null {
  if (existsSync(join(dir, 'agent.json'))) return 'acx';
  if (existsSync(join(dir, 'manifest.json'))) return 'agent-package';
  return null;
}

export function readAgentDir(dir: string): AgentPlan {
  if (!existsSync(dir) || !lstatSync(dir).isDirectory()) {
    throw layoutError(`${dir} is not a directory`, 'pass the agent directory (the one holding agent.json)');
  }
  const layout = detectLayout(dir);
  if (layout === 'acx') return readAcxLayout(dir);
  if (layout === 'agent-package') return readAgentPackage(dir);
  throw layoutError(`${dir} holds neither agent.json (acx layout) nor manifest.json (agent-package layout)`, 'see docs/agent-layout.md for the directory shape');
}

// ---------------------------------------------------------------------------------------------
// acx layout

function readAcxLayout(dir: string): AgentPlan {
  const scanItems: ScanItem[] = [];
  const read = (rel: string): Buffer => {
    const abs = join(dir, rel);
    if (lstatSync(abs).isSymbolicLink()) throw layoutError(`${rel} is a symbolic link`, 'agent directories are packed as plain files; replace the link with the file');
    const bytes = readFileSync(abs);
    scanItems.push({ file: rel, bytes });
    return bytes;
  };
  const agentBytes = read('agent.json');
  const agent = parseJson<AgentJson>(agentBytes, 'agent.json');
  validateAgentJson(agent);
  const stepBudget = agent.stepBudget ?? agent.maxSteps ?? 24;
  const files: PlannedFile[] = [{ name: 'rom/agent.json', bytes: agentBytes, source: 'agent.json' }];

  const systemPrompt = join('prompts', 'system-prompt.md');
  if (!existsSync(join(dir, systemPrompt))) throw layoutError('prompts/system-prompt.md is missing', 'write the agent identity and operating instructions there');
  files.push({ name: 'rom/prompts/system-prompt.md', bytes: read(systemPrompt), source: systemPrompt });
  const initialize = join('prompts', 'initialize.md');
  if (existsSync(join(dir, initialize))) files.push({ name: 'rom/prompts/initialize.md', bytes: read(initialize), source: initialize });

  const skills: PlannedSkill[] = [];
  const skillsDir = join(dir, 'skills');
  if (existsSync(skillsDir)) {
    for (const skillName of readdirSync(skillsDir).sort()) {
      const skillRoot = join(skillsDir, skillName);
      if (!lstatSync(skillRoot).isDirectory()) continue;
      const skillMd = join('skills', skillName, 'SKILL.md');
      if (!existsSync(join(dir, skillMd))) throw layoutError(`${skillMd} is missing`, 'every skills/<name>/ directory needs a SKILL.md');
      for (const rel of walk(dir, join('skills', skillName))) {
        const name = `rom/${toPosix(rel)}`;
        const problem = portablePathProblem(name);
        if (problem) throw layoutError(`${rel} cannot be packed: ${problem}`, 'rename the file to plain ASCII segments');
        files.push({ name, bytes: read(rel), source: rel });
      }
      const md = files.find((f) => f.source === skillMd);
      skills.push(parseSkill(skillName, md?.bytes ?? Buffer.alloc(0), `rom/skills/${skillName}/SKILL.md`));
    }
  }

  const optionalJson = (rel: string, romName: string, fallback: () => Record<string, unknown>, check: (v: Record<string, unknown>) => void) => {
    if (existsSync(join(dir, rel))) {
      const bytes = read(rel);
      check(parseJson<Record<string, unknown>>(bytes, rel));
      files.push({ name: romName, bytes, source: rel });
    } else {
      files.push({ name: romName, bytes: Buffer.from(`${JSON.stringify(fallback(), null, 2)}\n`), source: '<generated>' });
    }
  };
  optionalJson('harness-requirements.json', 'rom/manifest/harness-requirements.json', () => derivedRequirements(agent), (v) => {
    if (v.schemaVersion !== 'acx.harness.v1') throw layoutError('harness-requirements.json: schemaVersion must be "acx.harness.v1"');
  });
  optionalJson('loop-context-policy.json', 'rom/policy/loop-context-policy.json', () => defaultLoopContextPolicy(stepBudget, DEFAULT_EMBEDDING_ENGINE.id), (v) => {
    if (v.schemaVersion !== 'acx.loop-context-policy/1' && v.schemaVersion !== 'acx.loop-context-policy/1.1') {
      throw layoutError('loop-context-policy.json: schemaVersion must be "acx.loop-context-policy/1" or "/1.1"');
    }
  });

  const mcpDir = join(dir, 'mcp');
  if (existsSync(mcpDir)) {
    for (const entry of readdirSync(mcpDir).sort()) {
      if (!entry.endsWith('.json')) continue;
      const rel = join('mcp', entry);
      const bytes = read(rel);
      parseJson(bytes, rel);
      const name = `rom/mcp/${entry}`;
      const problem = portablePathProblem(name);
      if (problem) throw layoutError(`${rel} cannot be packed: ${problem}`);
      files.push({ name, bytes, source: rel });
    }
  }

  const memory: AgentPlan['memory'] = [];
  const skipped: string[] = [];
  const memDir = join(dir, 'memory');
  if (existsSync(memDir)) {
    for (const entry of readdirSync(memDir).sort()) {
      if (!entry.endsWith('.json')) continue;
      const rel = join('memory', entry);
      const value = parseJson<unknown>(read(rel), rel);
      for (const item of Array.isArray(value) ? value : [value]) {
        const rec = item as { key?: unknown; value?: unknown; portable?: unknown; title?: unknown; tags?: unknown; timestamp?: unknown };
        if (!rec || typeof rec !== 'object' || typeof rec.key !== 'string' || !('value' in rec) || (rec.portable !== undefined && typeof rec.portable !== 'boolean')) {
          throw layoutError(`${rel}: each memory record needs {key: string, value, portable?: boolean}`);
        }
        // Seed memory in an agent directory is shared knowledge unless marked otherwise.
        if (rec.portable === false) {
          skipped.push(`memory ${rec.key} (${rel}) is portable:false: field-learned memory is never packed; it is written to SAVE at run time`);
          continue;
        }
        memory.push({
          id: rec.key,
          key: rec.key,
          value: rec.value,
          title: typeof rec.title === 'string' ? rec.title : rec.key,
          summary: typeof rec.value === 'string' ? rec.value : canonicalJson(rec.value),
          sourceType: 'knowledge',
          portable: true,
          codebaseFingerprint: null,
          repoId: null,
          tags: Array.isArray(rec.tags) ? rec.tags.map(String) : [],
          timestamp: typeof rec.timestamp === 'string' ? rec.timestamp : '1970-01-01T00:00:00.000Z',
          impact: 'neutral',
          xpAwarded: 0,
        });
      }
    }
  }

  const [provider, ...modelRest] = (agent.model ?? '').split(':');
  const meta: Record<string, string> = {};
  if (agent.model) {
    meta['acx.provider'] = provider ?? '';
    meta['acx.model'] = modelRest.join(':');
  }
  if (agent.homepage) meta['acx.homepage'] = agent.homepage;
  return {
    layout: 'acx',
    publisher: agent.publisher ?? null,
    id: agent.id,
    name: agent.name,
    version: agent.version,
    description: agent.description,
    license: agent.license ?? 'Apache-2.0',
    authors: normalizeAuthors(agent.authors),
    tags: agent.tags ?? [],
    createdAt: null,
    meta,
    files,
    skills,
    memory,
    skipped,
    scanItems,
  };
}

/**
 * The manifest for an acx agent directory without harness-requirements.json, derived from the
 * built-ins agent.json declares. A cartridge must require the four roles of SPEC §8.4, so an agent
 * whose tools cannot bind them is refused here, before anything is signed, with what to change.
 */
function derivedRequirements(agent: AgentJson): Record<string, unknown> {
  const tools = (agent.tools ?? DEFAULT_BUILTINS) as readonly BuiltinName[];
  const { manifest, unbound } = harnessRequirementsFor(tools);
  if (unbound.length === 0) return manifest;
  const missing = [...new Set(unbound.map((role) => ROLE_BUILTINS[role]!))];
  const quoted = (names: readonly string[]) => names.map((n) => JSON.stringify(n)).join(', ');
  throw layoutError(
    `agent.json "tools" [${quoted(tools)}] has no tool for the required role${unbound.length > 1 ? 's' : ''} ${unbound.join(', ')}: ` +
      `every cartridge requires ${Object.keys(ROLE_BUILTINS).join(', ')} (SPEC §8.4), which acx binds to its built-ins ${quoted([...new Set(Object.values(ROLE_BUILTINS))])}`,
    `add ${quoted(missing)} to "tools" in agent.json (or leave "tools" out for every default built-in), or write a harness-requirements.json whose roles the tools of your MCP servers (mcp/*.json) satisfy`,
  );
}

export function validateAgentJson(agent: AgentJson): void {
  const fail = (why: string) => {
    throw layoutError(`agent.json: ${why}`, 'see docs/agent-layout.md for the fields');
  };
  if (!agent || typeof agent !== 'object' || Array.isArray(agent)) fail('must be a JSON object');
  if (typeof agent.id !== 'string' || !ID.test(agent.id)) fail('id must be a lowercase slug ([a-z0-9][a-z0-9._-]{0,63})');
  if (typeof agent.name !== 'string' || !agent.name.trim() || agent.name.length > 120) fail('name must be 1-120 characters');
  if (typeof agent.version !== 'string' || !SEMVER.test(agent.version)) fail('version must be SemVer (e.g. 1.0.0)');
  if (typeof agent.description !== 'string' || !agent.description.trim() || agent.description.length > 500) fail('description must be 1-500 characters');
  if (agent.model !== undefined && (typeof agent.model !== 'string' || !MODEL.test(agent.model))) fail('model must look like "provider:model-id"');
  if (!isSpeechSetting(agent.speech)) fail('speech must be "direct", "final-text", "unspoken" or {"tool": "<name>"}');
  for (const f of ['stepBudget', 'maxSteps'] as const) {
    const v = agent[f];
    if (v !== undefined && (!Number.isInteger(v) || v < 1 || v > 1000)) fail(`${f} must be an integer from 1 to 1000`);
  }
  if (agent.publisher !== undefined && typeof agent.publisher !== 'string') fail('publisher must be a reverse-DNS string');
  if (agent.tags !== undefined && (!Array.isArray(agent.tags) || agent.tags.some((t) => typeof t !== 'string'))) fail('tags must be an array of strings');
  if (agent.tools !== undefined) {
    if (!Array.isArray(agent.tools) || agent.tools.some((t) => typeof t !== 'string')) fail('tools must be an array of built-in tool names');
    const unknown = agent.tools.filter((t) => !isBuiltinName(t));
    if (unknown.length) fail(`tools names unknown built-in(s) ${unknown.join(', ')} (known: ${KNOWN_BUILTINS.join(', ')}; MCP servers go in mcp/*.json)`);
  }
}

function parseSkill(dirName: string, bytes: Buffer, sqlarPath: string): PlannedSkill {
  const text = bytes.toString('utf8');
  const m = /^---\r?\n([\s\S]*?)\r?\n---(?:\r?\n|$)/.exec(text);
  const where = `skills/${dirName}/SKILL.md`;
  if (!m) throw layoutError(`${where} must start with YAML frontmatter (--- name/description ---)`, 'see https://agentskills.io for the format');
  let fm: Record<string, unknown>;
  try {
    fm = parseYaml(m[1] ?? '') as Record<string, unknown>;
  } catch (error) {
    throw layoutError(`${where}: frontmatter is not YAML: ${errorMessage(error)}`);
  }
  if (!fm || typeof fm !== 'object' || Array.isArray(fm)) throw layoutError(`${where}: frontmatter must be a mapping`);
  const unknown = Object.keys(fm).filter((k) => !SKILL_KEYS.has(k));
  if (unknown.length) throw layoutError(`${where}: unknown frontmatter key(s) ${unknown.join(', ')}`, 'only name, description, license, compatibility, metadata, allowed-tools are allowed');
  if (typeof fm.name !== 'string' || !SKILL_NAME.test(fm.name) || fm.name.length > 64) throw layoutError(`${where}: name must match ^[a-z0-9]+(-[a-z0-9]+)*$ (1-64 chars)`);
  if (fm.name !== dirName) throw layoutError(`${where}: frontmatter name "${fm.name}" must equal the directory name "${dirName}"`);
  if (typeof fm.description !== 'string' || !fm.description.trim() || fm.description.length > 1024) throw layoutError(`${where}: description must be 1-1024 characters`);
  if (fm.compatibility !== undefined && (typeof fm.compatibility !== 'string' || fm.compatibility.length > 500)) throw layoutError(`${where}: compatibility must be a string of at most 500 characters`);
  if (fm.metadata !== undefined && (typeof fm.metadata !== 'object' || fm.metadata === null || Object.values(fm.metadata).some((v) => typeof v !== 'string'))) {
    throw layoutError(`${where}: metadata must map strings to strings`);
  }
  const metadata = (fm.metadata ?? {}) as Record<string, string>;
  return {
    name: fm.name,
    description: fm.description,
    license: typeof fm.license === 'string' ? fm.license : null,
    compatibility: typeof fm.compatibility === 'string' ? fm.compatibility : null,
    version: metadata.version ?? null,
    sqlarPath,
  };
}

// ---------------------------------------------------------------------------------------------
// the reference agent-package layout (manifest.json + knowledge markdown + memory-records.json)

function readAgentPackage(dir: string): AgentPlan {
  const scanItems: ScanItem[] = [];
  const read = (rel: string) => {
    const bytes = readFileSync(join(dir, rel));
    scanItems.push({ file: rel, bytes });
    return bytes;
  };
  const manifest = parseJson<Record<string, unknown>>(read('manifest.json'), 'manifest.json');
  const str = (k: string) => (typeof manifest[k] === 'string' ? (manifest[k] as string) : undefined);
  const name = str('name');
  if (!name) throw layoutError('manifest.json: name is required');
  const id = str('artifactId') ?? slug(name);
  if (!ID.test(id)) throw layoutError('manifest.json: artifactId must be a lowercase slug');
  const version = str('artifactVersion') ?? '1.0.0';
  if (!SEMVER.test(version)) throw layoutError('manifest.json: artifactVersion must be SemVer');
  const role = str('role') ?? 'agent';
  const stack = Array.isArray(manifest.techStack) ? manifest.techStack.map(String) : [];
  const description = str('description') ?? `A portable ${role.replaceAll('_', ' ')} agent${stack.length ? ` specializing in ${stack.join(', ')}` : ''}.`;

  const files: PlannedFile[] = [];
  for (const f of REFERENCE_KNOWLEDGE) {
    if (existsSync(join(dir, f))) files.push({ name: `rom/knowledge/${f}`, bytes: read(f), source: f });
  }
  const skillName = `expertise-${slug(role) || 'agent'}`;
  const skillText = [
    '---',
    `name: ${skillName}`,
    `description: ${JSON.stringify(`${name}'s ${role.replaceAll('_', ' ')} expertise. Use when a task matches this agent's domain.`.slice(0, 1024))}`,
    'license: Apache-2.0',
    '---',
    '',
    `# ${name}`,
    '',
    `Imported from an agent package (role: ${role}).`,
    ...(stack.length ? ['', '## Stack', ...stack.map((s) => `- ${s}`)] : []),
    '',
  ].join('\n');
  const skillPath = `rom/skills/${skillName}/SKILL.md`;
  files.push({ name: skillPath, bytes: Buffer.from(skillText), source: '<generated>' });
  files.push({ name: 'rom/manifest/harness-requirements.json', bytes: Buffer.from(`${JSON.stringify(defaultHarnessRequirements(), null, 2)}\n`), source: '<generated>' });
  files.push({
    name: 'rom/policy/loop-context-policy.json',
    bytes: Buffer.from(`${JSON.stringify(defaultLoopContextPolicy(40, str('vectorEngine') ?? DEFAULT_EMBEDDING_ENGINE.id), null, 2)}\n`),
    source: '<generated>',
  });

  const memory: AgentPlan['memory'] = [];
  const skipped: string[] = [];
  if (existsSync(join(dir, 'memory-records.json'))) {
    const records = parseJson<unknown>(read('memory-records.json'), 'memory-records.json');
    if (!Array.isArray(records)) throw layoutError('memory-records.json must be an array');
    for (const r of records as Array<Record<string, unknown>>) {
      if (!r || typeof r.id !== 'string') throw layoutError('memory-records.json: every record needs a string id');
      if (r.repoId != null && r.repoId !== '') {
        skipped.push(`memory ${r.id} is bound to a repository: field-learned memory is quarantined and not packed`);
        continue;
      }
      memory.push({
        ...r,
        id: r.id,
        portable: true,
        codebaseFingerprint: null,
        repoId: null,
        markdownPath: `knowledge/${r.id}.md`,
      } as AgentPlan['memory'][number]);
    }
  }

  const meta: Record<string, string> = {
    'acx.provider': str('provider') ?? 'custom',
    'acx.model': str('model') ?? '',
    'acx.role': role,
    'acx.declared_level': String(typeof manifest.level === 'number' ? manifest.level : 0),
  };
  const homepage = str('homepage');
  if (homepage) meta['acx.homepage'] = homepage;
  return {
    layout: 'agent-package',
    publisher: null,
    id,
    name,
    version,
    description,
    license: str('license') ?? 'Apache-2.0',
    authors: normalizeAuthors(manifest.authors as AgentJson['authors']),
    tags: Array.isArray(manifest.tags) ? manifest.tags.map((t) => slug(String(t))).filter(Boolean) : [slug(role)],
    createdAt: str('exportedAt') ?? null,
    meta,
    files,
    skills: [{ name: skillName, description: `${name}'s ${role.replaceAll('_', ' ')} expertise. Use when a task matches this agent's domain.`.slice(0, 1024), license: 'Apache-2.0', compatibility: null, version: null, sqlarPath: skillPath }],
    memory,
    skipped,
    scanItems,
  };
}

// ---------------------------------------------------------------------------------------------

function normalizeAuthors(authors: AgentJson['authors']): Array<{ name: string; url?: string }> {
  if (!Array.isArray(authors)) return [];
  return authors.map((a) => (typeof a === 'string' ? { name: a } : { name: String(a.name), ...(a.url ? { url: String(a.url) } : {}) }));
}

function walk(root: string, rel: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(root, rel)).sort()) {
    const child = join(rel, entry);
    const st = lstatSync(join(root, child));
    if (st.isSymbolicLink()) throw layoutError(`${child} is a symbolic link`, 'replace the link with the file it points at');
    if (st.isDirectory()) out.push(...walk(root, child));
    else if (st.isFile()) out.push(child);
  }
  return out;
}

function toPosix(rel: string): string {
  return rel.split(sep).join('/');
}

function parseJson<T>(bytes: Buffer, where: string): T {
  try {
    return JSON.parse(bytes.toString('utf8')) as T;
  } catch (error) {
    throw layoutError(`${where} is not valid JSON: ${errorMessage(error)}`);
  }
}

function slug(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
}

function layoutError(message: string, hint?: string): AcxError {
  return new AcxError('agent-layout', message, hint ? { hint } : {});
}

/** agent.json's `speech`: absent, "direct", "final-text", "unspoken", or {"tool": "<name>"}. */
export function isSpeechSetting(speech: unknown): boolean {
  if (speech === undefined || speech === 'unspoken' || speech === 'direct' || speech === 'final-text') return true;
  const tool = typeof speech === 'object' && speech !== null ? (speech as { tool?: unknown }).tool : undefined;
  return typeof tool === 'string' && tool !== '';
}
