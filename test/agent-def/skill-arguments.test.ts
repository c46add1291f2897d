// A skill's arguments (what `acx mcp` serves as its prompt's arguments), declared in its
// agentskills.io metadata: what the one SKILL.md parser makes of them, and what it refuses.
import { describe, expect, it } from 'vitest';
import { parseSkill } from '../../src/agent-def/skill.ts';

const skill = (metadata: string) => parseSkill(`---\nname: notes\ndescription: Writes notes.\n${metadata}---\nWrite notes for {{version}}.\n`, 'notes', 'rom/skills/notes/SKILL.md');

describe('skill arguments', () => {
  it('reads names (a trailing ? for optional), descriptions and known values from metadata', () => {
    const parsed = skill('metadata:\n  version: "2.0.0"\n  arguments: "version, audience ?"\n  arguments.version: "The release"\n  arguments.audience.values: "team, customers"\n');
    expect(parsed.version).toBe('2.0.0');
    expect(parsed.arguments).toEqual([
      { name: 'version', description: 'The release', required: true, values: [] },
      { name: 'audience', description: null, required: false, values: ['team', 'customers'] },
    ]);
    expect(skill('').arguments).toEqual([]);
  });

  it('refuses a bad name, a name given twice, and metadata about an argument it does not declare', () => {
    expect(() => skill('metadata:\n  arguments: "1st"\n')).toThrow(/skills\/notes\/SKILL\.md: metadata\.arguments names "1st", which is not an argument name/);
    expect(() => skill('metadata:\n  arguments: "a, a?"\n')).toThrow(/metadata\.arguments names "a" twice/);
    expect(() => skill('metadata:\n  arguments: "version"\n  arguments.audience.values: "team"\n')).toThrow(
      /metadata\.arguments\.audience\.values is about an argument metadata\.arguments does not name/,
    );
  });
});
