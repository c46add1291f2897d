import type * as acp from '@agentclientprotocol/sdk';

/**
 * `acx acp`'s slash commands, offered with `available_commands_update`: the agent's skills (the
 * prompt that follows runs with the skill's instructions in it) and three of acx's own, answered
 * without a model turn except /compact: /model (show or switch the model), /clear (forget the
 * conversation, keep the session) and /compact (summarize the conversation so far).
 */
export interface CommandSkill {
  name: string;
  description: string;
  body: string;
}

export const BUILTIN_COMMANDS = ['model', 'clear', 'compact'] as const;
export type BuiltinCommand = (typeof BUILTIN_COMMANDS)[number];

export function availableCommands(skills: readonly CommandSkill[]): acp.AvailableCommand[] {
  const own: acp.AvailableCommand[] = [
    { name: 'model', description: 'Show the model in use, or switch to another from the next turn on.', input: { hint: 'provider:model-id' } },
    { name: 'clear', description: 'Forget this conversation and start afresh in the same session.' },
    { name: 'compact', description: 'Replace the conversation so far with a summary, to free context.' },
  ];
  const taken = new Set<string>(BUILTIN_COMMANDS);
  return [
    ...own,
    ...skills
      .filter((skill) => !taken.has(skill.name))
      .map((skill) => ({ name: skill.name, description: skill.description, input: { hint: 'what to do with this skill' } })),
  ];
}

export type SlashCommand = { kind: 'builtin'; name: BuiltinCommand; args: string } | { kind: 'skill'; skill: CommandSkill; args: string };

/** The command a prompt starts with (`/name args` as its first text), if it names one; anything else is an ordinary prompt. */
export function parseSlashCommand(blocks: readonly acp.ContentBlock[], skills: readonly CommandSkill[]): SlashCommand | undefined {
  const first = blocks[0];
  if (first?.type !== 'text') return undefined;
  const match = /^\/([A-Za-z0-9][\w.-]*)(?:\s+([\s\S]*))?$/.exec(first.text.trim());
  if (!match) return undefined;
  const name = match[1]!;
  const args = (match[2] ?? '').trim();
  if ((BUILTIN_COMMANDS as readonly string[]).includes(name)) return { kind: 'builtin', name: name as BuiltinCommand, args };
  const skill = skills.find((s) => s.name === name);
  return skill ? { kind: 'skill', skill, args } : undefined;
}

/** A skill command as the prompt the model gets: the request, then the skill's instructions (no load_skill round trip). */
export function skillPrompt(command: Extract<SlashCommand, { kind: 'skill' }>, blocks: readonly acp.ContentBlock[]): acp.ContentBlock[] {
  const request = command.args ? `Use your "${command.skill.name}" skill for this: ${command.args}` : `Use your "${command.skill.name}" skill.`;
  return [{ type: 'text', text: `${request}\n\n# Skill: ${command.skill.name}\n\n${command.skill.body}` }, ...blocks.slice(1)];
}
