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
  };
}

/** A skill as SKILL.md text. A JSON string is a valid YAML double-quoted scalar, so any description survives intact. */
export function skillMarkdown(skill: Pick<Skill, 'name' | 'description' | 'body'>): string {
  return `---\nname: ${skill.name}\ndescription: ${JSON.stringify(skill.description)}\n---\n\n${skill.body.trim()}\n`;
}
