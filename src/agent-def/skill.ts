import { createRequire } from 'node:module';
import { errorMessage } from '../core/errors.ts';
import { definitionError } from './errors.ts';
import { readPlainFrontmatter } from './plain-frontmatter.ts';

/**
 * SKILL.md (agentskills.io): YAML frontmatter, then the body. The one parser for skills in an
 * agent directory and in a cartridge's ROM, and the one writer (for ACP agents that load skills
 * natively from files).
 */

export interface Skill {
  name: string;
  description: string;
  /** The instructions after the frontmatter, trimmed; what `load_skill` returns. */
  body: string;
  /** Where it was read: the ROM name `rom/skills/<name>/SKILL.md`. */
  path: string;
  license: string | null;
  compatibility: string | null;
  /** metadata.version, when given. */
  version: string | null;
  /** The arguments it takes when served as an MCP prompt (`acx mcp`), declared in its metadata; empty for most skills. */
  arguments: SkillArgument[];
}

/**
 * A skill's arguments, declared in the agentskills.io `metadata` map (strings to strings, the
 * format's own place for what it does not define): `arguments` names them, comma-separated, a
 * trailing `?` marking one optional; `arguments.<name>` describes one; `arguments.<name>.values`
 * lists the values it takes, comma-separated, which a client is offered as completions. In the
 * body, `{{name}}` stands for the argument's value.
 */
export interface SkillArgument {
  name: string;
  description: string | null;
  required: boolean;
  /** The values a client is offered as completions; empty when any text will do. */
  values: string[];
}

export const SKILL_NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const SKILL_KEYS = new Set(['name', 'description', 'license', 'compatibility', 'metadata', 'allowed-tools']);
// yaml (some 70 modules) is required only for frontmatter the plain reader leaves to it, not when
// this module loads; it is a CommonJS package, so requiring it is the same module an import gives.
const require = createRequire(import.meta.url);
const parseYaml = (text: string): unknown => readPlainFrontmatter(text) ?? (require('yaml') as typeof import('yaml')).parse(text);

const FRONTMATTER = /^---\r?\n([\s\S]*?)\r?\n---(?:\r?\n|$)([\s\S]*)$/;

/** Parses skills/<dirName>/SKILL.md; `where` names the file in messages. */
export function parseSkill(text: string, dirName: string, path: string, where = `skills/${dirName}/SKILL.md`): Skill {
  const match = FRONTMATTER.exec(text);
  if (!match) throw definitionError(`${where} must start with YAML frontmatter (--- name/description ---)`, 'start SKILL.md with ---, name: and description: lines, then --- (see https://agentskills.io)');
  let front: unknown;
  try {
    front = parseYaml(match[1] ?? '');
  } catch (error) {
    throw definitionError(`${where}: frontmatter is not YAML: ${errorMessage(error)}`);
  }
  if (!front || typeof front !== 'object' || Array.isArray(front)) throw definitionError(`${where}: frontmatter must be a mapping`);
  const fm = front as Record<string, unknown>;
  const unknown = Object.keys(fm).filter((k) => !SKILL_KEYS.has(k));
  if (unknown.length) throw definitionError(`${where}: unknown frontmatter key(s) ${unknown.join(', ')}`, 'only name, description, license, compatibility, metadata, allowed-tools are allowed');
  if (typeof fm.name !== 'string' || !SKILL_NAME.test(fm.name) || fm.name.length > 64) throw definitionError(`${where}: name must match ^[a-z0-9]+(-[a-z0-9]+)*$ (1-64 chars)`);
  if (fm.name !== dirName) throw definitionError(`${where}: frontmatter name "${fm.name}" must equal the directory name "${dirName}"`);
  if (typeof fm.description !== 'string' || !fm.description.trim() || fm.description.length > 1024) throw definitionError(`${where}: description must be 1-1024 characters`);
  if (fm.compatibility !== undefined && (typeof fm.compatibility !== 'string' || fm.compatibility.length > 500)) throw definitionError(`${where}: compatibility must be a string of at most 500 characters`);
  if (fm.metadata !== undefined && (typeof fm.metadata !== 'object' || fm.metadata === null || Object.values(fm.metadata).some((v) => typeof v !== 'string'))) {
    throw definitionError(`${where}: metadata must map strings to strings`);
  }
  const metadata = (fm.metadata ?? {}) as Record<string, string>;
  return {
    name: fm.name,
    description: fm.description,
    body: (match[2] ?? '').trim(),
    path,
    license: typeof fm.license === 'string' ? fm.license : null,
    compatibility: typeof fm.compatibility === 'string' ? fm.compatibility : null,
    version: metadata.version ?? null,
    arguments: skillArguments(metadata, where),
  };
}

const ARGUMENT_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

function skillArguments(metadata: Record<string, string>, where: string): SkillArgument[] {
  const declared = (metadata.arguments ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
  const args = declared.map((item): SkillArgument => {
    const name = item.endsWith('?') ? item.slice(0, -1).trim() : item;
    if (!ARGUMENT_NAME.test(name)) {
      throw definitionError(`${where}: metadata.arguments names "${name}", which is not an argument name`, 'name arguments with a letter, then letters, digits, _ or - (e.g. arguments: "version, audience?")');
    }
    const values = (metadata[`arguments.${name}.values`] ?? '').split(',').map((value) => value.trim()).filter(Boolean);
    return { name, description: metadata[`arguments.${name}`]?.trim() || null, required: !item.endsWith('?'), values };
  });
  const names = args.map((arg) => arg.name);
  const twice = names.find((name, index) => names.indexOf(name) !== index);
  if (twice) throw definitionError(`${where}: metadata.arguments names "${twice}" twice`);
  for (const key of Object.keys(metadata)) {
    const about = /^arguments\.(.+?)(?:\.values)?$/.exec(key)?.[1];
    if (about !== undefined && !names.includes(about)) {
      throw definitionError(`${where}: metadata.${key} is about an argument metadata.arguments does not name`, `add "${about}" to metadata.arguments, or remove metadata.${key}`);
    }
  }
  return args;
}

/** A skill as SKILL.md text. A JSON string is a valid YAML double-quoted scalar, so any description survives intact. */
export function skillMarkdown(skill: Pick<Skill, 'name' | 'description' | 'body'>): string {
  return `---\nname: ${skill.name}\ndescription: ${JSON.stringify(skill.description)}\n---\n\n${skill.body.trim()}\n`;
}
