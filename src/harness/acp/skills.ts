import { skillMarkdown, type Skill } from '../../agent-def/skill.ts';
import { AcxError } from '../../core/errors.ts';
import type { SandboxSession } from './sandbox.ts';

/**
 * Writes an agent's skills where the ACP agent loads skills natively: one
 * `<skillsDirectory>/<name>/SKILL.md` per skill below the sandbox $HOME, in the Agent Skills
 * format (YAML frontmatter with name and description, then the body). Skill names come from
 * agent directories and cartridge ROMs, so each must be a single safe path segment.
 */

export type SkillFile = Pick<Skill, 'name' | 'description' | 'body'>;

const SKILL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** Returns the paths written (absolute, below the sandbox home). */
export function writeSkills(sandbox: Pick<SandboxSession, 'writeHomeFile'>, directory: string, skills: readonly SkillFile[]): string[] {
  const seen = new Set<string>();
  for (const skill of skills) {
    if (typeof skill.name !== 'string' || !SKILL_NAME.test(skill.name) || skill.name.includes('..')) {
      throw new AcxError('acp-skill', `The skill name ${JSON.stringify(skill.name)} cannot be used as a directory name.`, {
        hint: 'Skill names are one path segment: letters, digits, ".", "_" and "-", at most 64 characters.',
      });
    }
    if (seen.has(skill.name)) {
      throw new AcxError('acp-skill', `Two skills are named "${skill.name}".`, { hint: 'Give each skill a unique name.' });
    }
    seen.add(skill.name);
  }
  return skills.map((skill) => sandbox.writeHomeFile(`${directory}/${skill.name}/SKILL.md`, skillMarkdown(skill)));
}
