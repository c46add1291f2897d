import { z } from 'zod';
import type { Skill } from '../agent-def/skill.ts';
import type { Tool } from '../tools/tool.ts';
import { lazySchema } from '../core/lazy-schema.ts';
import type { ServedPrompt } from '../mcp/prompts.ts';

/**
 * Skills use progressive disclosure: the instructions carry only an index (name and one-line
 * description); the body enters the context when the model asks for it with `load_skill`.
 */
export function skillIndex(skills: readonly Skill[]): string {
  if (skills.length === 0) return '';
  return [
    '## Skills',
    'You have these skills. Before doing work one of them covers, load it with the `load_skill` tool to read its full instructions.',
    ...skills.map((skill) => `- ${skill.name}: ${skill.description}`),
  ].join('\n');
}

const skillInput = lazySchema(() => z.object({ name: z.string().describe('The skill name from the skills index.') }));

export function createSkillTool(skills: readonly Skill[]): Tool<{ name: string }> {
  const byName = new Map(skills.map((skill) => [skill.name, skill]));
  return {
    name: 'load_skill',
    description: 'Load the full instructions of one of your skills by name.',
    inputSchema: skillInput(),
    capabilityScopes: ['memory.read'],
    kind: 'read',
    effect: 'read-only',
    execute: ({ name }) => {
      const skill = byName.get(name);
      if (!skill) return `There is no skill named "${name}". Skills: ${[...byName.keys()].join(', ')}.`;
      return `# Skill: ${skill.name}\n\n${skill.body}`;
    },
  };
}

/** The standing instructions: identity first, operating guidance, then the skills index. */
export function composeInstructions(parts: { systemPrompt?: string; initialize?: string; skills?: readonly Skill[]; extra?: readonly string[] }): string {
  return [parts.systemPrompt, parts.initialize, skillIndex(parts.skills ?? []), ...(parts.extra ?? [])]
    .map((part) => part?.trim())
    .filter(Boolean)
    .join('\n\n');
}

/** Skills as MCP prompts (`acx mcp`): the body is the prompt's text, its declared arguments the prompt's. */
export function skillPrompts(skills: readonly Skill[]): ServedPrompt[] {
  return skills.map((skill) => ({
    name: skill.name,
    description: skill.description,
    text: skill.body,
    arguments: skill.arguments.map((arg) => ({ name: arg.name, required: arg.required, values: arg.values, ...(arg.description ? { description: arg.description } : {}) })),
  }));
}
