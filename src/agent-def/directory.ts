import { existsSync, lstatSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, errorMessage } from '../core/errors.ts';
import { DEFAULT_EMBEDDING_ENGINE, defaultHarnessRequirements, defaultLoopContextPolicy } from './defaults.ts';
import { isPluginFileName } from '../tools/plugin-names.ts';
import { definitionError } from './errors.ts';
import { AGENT_ID, SEMVER } from './manifest.ts';
import { parseMemoryFile, seedOfRecord, type MemorySeed } from './memory.ts';
import { type AgentLayout, type AgentSource, type DefinitionFile, LOOP_POLICY_PATH, REQUIREMENTS_PATH } from './source.ts';

/**
 * An agent directory as a definition source: every file the definition consists of, under the
 * ROM name a build gives it. Two layouts: acx's (agent.json, prompts/, skills/, memory/, mcp/,
 * harness-requirements.json, loop-context-policy.json; docs/agent-layout.md) and the reference
 * implementation's agent-package (manifest.json plus knowledge markdown and memory-records.json),
 * whose generated skill, requirements and policy are made here, as its build packs them.
 */

// Paths inside acx itself (a checkout, or the installed package, which ships docs/ and examples/):
// this module is src/agent-def/ or dist/agent-def/, two levels below either root.
const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const EXAMPLE_AGENT = join(PACKAGE_ROOT, 'examples', 'notes-keeper');
const LAYOUT_DOC = join(PACKAGE_ROOT, 'docs', 'agent-layout.md');

const REFERENCE_KNOWLEDGE = ['IDENTITY.md', 'SKILLS.md', 'MEMORY.md', 'CAREER.md', 'EQUIPMENT.md', 'LEARNING_PATH.md', 'EXCHANGE.md', 'STYLE.md'];

/**
 * Every entry of an agent directory that acx reads, in either layout: what readDirectorySource
 * below reads, and tools/ (code plugins). A new file the reader learns to read belongs here too:
 * acx keeps these out of its tools' reach when the directory lies in a workspace.
 */
export const AGENT_DIRECTORY_ENTRIES = {
  directories: ['prompts', 'skills', 'mcp', 'tools', 'memory'],
  files: ['agent.json', 'manifest.json', 'harness-requirements.json', 'loop-context-policy.json', 'memory-records.json', ...REFERENCE_KNOWLEDGE],
} as const;

/** Which layout a directory uses, or null when it is neither. */
export function detectLayout(dir: string): AgentLayout | null {
  if (existsSync(join(dir, 'agent.json'))) return 'acx';
  if (existsSync(join(dir, 'manifest.json'))) return 'agent-package';
  return null;
}

export function readDirectorySource(path: string): AgentSource {
  const dir = resolve(path);
  const isDirectory = existsSync(dir) && statSync(dir).isDirectory();
  if (!isDirectory && /^(agent|manifest)\.json$/.test(basename(dir))) {
    // A common slip: naming the agent's definition file instead of the agent.
    throw new ConfigError(`${path} is the agent's ${basename(dir)}; acx takes the agent's directory.`, {
      hint: `Pass the directory that holds it: ${relativeOrAbsolute(dirname(dir))}.`,
    });
  }
  if (!existsSync(dir)) {
    throw new ConfigError(`${path} does not exist.`, {
      hint: `Give an agent directory or a .acx cartridge; \`acx init ${path}\` creates an agent there (the layout: ${LAYOUT_DOC}).`,
    });
  }
  const layout = isDirectory ? detectLayout(dir) : null;
  if (!layout) {
    throw new ConfigError(`${dir} is not an acx agent directory (no agent.json).`, {
      hint: `Create one with \`acx init ${path}\`, or run the example agent at ${EXAMPLE_AGENT} (the layout: ${LAYOUT_DOC}).`,
    });
  }
  const source: AgentSource = { kind: 'directory', path: dir, layout, files: new Map(), meta: {}, memory: [], notes: [], inputs: [], links: [] };
  const read = (rel: string): Buffer => {
    const abs = join(dir, rel);
    if (lstatSync(abs).isSymbolicLink()) source.links.push(rel);
    const bytes = readFileSync(abs);
    source.inputs.push({ file: rel, bytes });
    return bytes;
  };
  const add = (name: string, rel: string) => source.files.set(name, { name, bytes: read(rel), source: rel });
  const generate = (name: string, value: unknown) => source.files.set(name, { name, bytes: Buffer.from(`${JSON.stringify(value, null, 2)}\n`), source: '<generated>' });
  if (layout === 'acx') readAcxLayout(dir, source, add, read);
  else readAgentPackage(dir, source, add, read, generate);
  return source;
}

type Add = (name: string, rel: string) => void;
type Read = (rel: string) => Buffer;

function readAcxLayout(dir: string, source: AgentSource, add: Add, read: Read): void {
  add('rom/agent.json', 'agent.json');
  for (const prompt of ['system-prompt.md', 'initialize.md']) {
    if (existsSync(join(dir, 'prompts', prompt))) add(`rom/prompts/${prompt}`, join('prompts', prompt));
  }
  const skillsDir = join(dir, 'skills');
  if (existsSync(skillsDir)) {
    for (const skillName of readdirSync(skillsDir).sort()) {
      if (!statSync(join(skillsDir, skillName)).isDirectory()) continue;
      const skillMd = join('skills', skillName, 'SKILL.md');
      if (!existsSync(join(dir, skillMd))) throw definitionError(`${skillMd} is missing`, 'every skills/<name>/ directory needs a SKILL.md');
      for (const rel of walk(dir, join('skills', skillName), source.links)) add(`rom/${toPosix(rel)}`, rel);
    }
  }
  if (existsSync(join(dir, 'harness-requirements.json'))) add(REQUIREMENTS_PATH, 'harness-requirements.json');
  if (existsSync(join(dir, 'loop-context-policy.json'))) add(LOOP_POLICY_PATH, 'loop-context-policy.json');
  for (const entry of jsonFiles(join(dir, 'mcp'))) add(`rom/mcp/${entry}`, join('mcp', entry));
  // Code plugins are packed like any file; a cartridge's load only when the host grants it.
  for (const entry of pluginFiles(join(dir, 'tools'))) add(`rom/tools/${entry}`, join('tools', entry));
  for (const entry of jsonFiles(join(dir, 'memory'))) {
    const rel = join('memory', entry);
    for (const seed of parseMemoryFile(parseJson(read(rel), rel), rel)) {
      source.memory.push(seed);
      if (!seed.portable) source.notes.push(`memory ${seed.id} (${rel}) is portable:false: field-learned memory is never packed; it is written to SAVE at run time`);
    }
  }
}

function readAgentPackage(dir: string, source: AgentSource, add: Add, read: Read, generate: (name: string, value: unknown) => void): void {
  const manifest = parseJson(read('manifest.json'), 'manifest.json') as Record<string, unknown>;
  const str = (k: string) => (typeof manifest[k] === 'string' ? (manifest[k] as string) : undefined);
  const name = str('name');
  if (!name) throw definitionError('manifest.json: name is required');
  const id = str('artifactId') ?? slug(name);
  if (!AGENT_ID.test(id)) throw definitionError('manifest.json: artifactId must be a lowercase slug');
  const version = str('artifactVersion') ?? '1.0.0';
  if (!SEMVER.test(version)) throw definitionError('manifest.json: artifactVersion must be SemVer');
  const role = str('role') ?? 'agent';
  const roleText = role.replaceAll('_', ' ');
  const stack = Array.isArray(manifest.techStack) ? manifest.techStack.map(String) : [];

  for (const f of REFERENCE_KNOWLEDGE) if (existsSync(join(dir, f))) add(`rom/knowledge/${f}`, f);
  const skillName = `expertise-${slug(role) || 'agent'}`;
  const skillDescription = `${name}'s ${roleText} expertise. Use when a task matches this agent's domain.`.slice(0, 1024);
  const skillText = [
    '---',
    `name: ${skillName}`,
    `description: ${JSON.stringify(skillDescription)}`,
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
  source.files.set(skillPath, { name: skillPath, bytes: Buffer.from(skillText), source: '<generated>' } satisfies DefinitionFile);
  generate(REQUIREMENTS_PATH, defaultHarnessRequirements());
  generate(LOOP_POLICY_PATH, defaultLoopContextPolicy(40, str('vectorEngine') ?? DEFAULT_EMBEDDING_ENGINE.id));

  if (existsSync(join(dir, 'memory-records.json'))) {
    const records = parseJson(read('memory-records.json'), 'memory-records.json');
    if (!Array.isArray(records)) throw definitionError('memory-records.json must be an array');
    for (const r of records as Array<Record<string, unknown>>) {
      if (!r || typeof r.id !== 'string') throw definitionError('memory-records.json: every record needs a string id');
      if (r.repoId != null && r.repoId !== '') {
        source.notes.push(`memory ${r.id} is bound to a repository: field-learned memory is quarantined and not packed`);
        continue;
      }
      const seed: MemorySeed = seedOfRecord({ ...r, id: r.id, codebaseFingerprint: null, repoId: null, markdownPath: `knowledge/${r.id}.md` }, true);
      source.memory.push(seed);
    }
  }

  const homepage = str('homepage');
  source.meta = {
    'acx.artifact_id': id,
    'acx.artifact_version': version,
    'acx.agent_name': name,
    'acx.provider': str('provider') ?? 'custom',
    'acx.model': str('model') ?? '',
    'acx.role': role,
    'acx.declared_level': String(typeof manifest.level === 'number' ? manifest.level : 0),
    ...(homepage ? { 'acx.homepage': homepage } : {}),
  };
  source.catalog = {
    description: str('description') ?? `A portable ${roleText} agent${stack.length ? ` specializing in ${stack.join(', ')}` : ''}.`,
    license: str('license') ?? 'Apache-2.0',
    authors: normalizeAuthors(manifest.authors),
    tags: Array.isArray(manifest.tags) ? manifest.tags.map((t) => slug(String(t))).filter(Boolean) : [slug(role)],
    createdAt: str('exportedAt') ?? null,
  };
}

/** agent.json / manifest.json `authors`: names or {name, url}. */
export function normalizeAuthors(authors: unknown): Array<{ name: string; url?: string }> {
  if (!Array.isArray(authors)) return [];
  return authors.map((a: string | { name?: unknown; url?: unknown }) =>
    typeof a === 'string' ? { name: a } : { name: String(a.name), ...(a.url ? { url: String(a.url) } : {}) },
  );
}

/** The `*.json` files of a directory, sorted; hidden files are not part of the definition. */
function jsonFiles(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).filter((entry) => entry.endsWith('.json') && !entry.startsWith('.')).sort() : [];
}

/** The tool plugin files of a directory's tools/, sorted (what src/tools/plugins.ts loads). */
function pluginFiles(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).filter((entry) => isPluginFileName(entry) && statSync(join(dir, entry), { throwIfNoEntry: false })?.isFile()).sort() : [];
}

function walk(root: string, rel: string, links: string[]): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(root, rel)).sort()) {
    const child = join(rel, entry);
    const st = lstatSync(join(root, child));
    // A linked file is read through (read() records it; a build refuses it); a linked directory is not followed.
    if (st.isSymbolicLink()) {
      if (statSync(join(root, child), { throwIfNoEntry: false })?.isFile()) out.push(child);
      else links.push(child);
    } else if (st.isDirectory()) out.push(...walk(root, child, links));
    else if (st.isFile()) out.push(child);
  }
  return out;
}

function toPosix(rel: string): string {
  return rel.split(sep).join('/');
}

export function parseJson(bytes: Buffer, where: string): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw definitionError(`${where} is not valid JSON: ${errorMessage(error)}`, 'fix the file and run again');
  }
}

function slug(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
}

/** A path as the user would type it from here: relative when below the working directory. */
function relativeOrAbsolute(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel === '' ? '.' : rel.startsWith('..') || isAbsolute(rel) ? path : rel;
}
