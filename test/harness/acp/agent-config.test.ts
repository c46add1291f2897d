// What an agent brings to an ACP harness besides its instructions: its model (AgentConfig.model
// over the profile's own setting), its skills (written to the profile's skills directory below
// the sandbox home), and the choice of harness by name (--harness / ACX_HARNESS).
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createACP } from '../../../src/harness/acp/create.ts';
import { checkProfileCredentials, HARNESS_NAMES, resolveHarnessName } from '../../../src/harness/acp/profiles/by-name.ts';
import { createLocalSandbox } from '../../../src/harness/acp/sandbox.ts';
import type { ACPSettings } from '../../../src/harness/acp/settings.ts';
import { writeSkills } from '../../../src/harness/acp/skills.ts';
import { parseSkill, skillMarkdown } from '../../../src/agent-def/skill.ts';
import { finishReasonOf } from '../../../src/harness/acp/translate.ts';
import { HarnessAgent } from '../../../src/harness/harness-agent.ts';
import { AcxError, ConfigError } from '../../../src/core/errors.ts';
import { fakeProfile, tempCache } from './fake-profile.ts';

const cache = tempCache();
const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of closers) await c().catch(() => {});
});

function agentFor(overrides: Partial<ACPSettings>, agentSettings: Partial<ConstructorParameters<typeof HarnessAgent>[0]>) {
  const harness = createACP(fakeProfile(cache, overrides));
  closers.push(() => harness.close!());
  return new HarnessAgent({ harness, ...agentSettings });
}

const SKILLS = [
  { name: 'release-notes', description: 'Write release notes: "Added", "Fixed".\nOne line each.', body: '1. Search memory.\n2. Group the changes.' },
  { name: 'triage', description: 'Sort incoming bugs.', body: 'Label by severity.' },
];

describe('an agent on an ACP harness', () => {
  it("asks for the agent's model, not the profile's, and writes its skills below the sandbox home", async () => {
    const agent = agentFor({ model: 'fake-small', skillsDirectory: '.fake/skills' }, { model: 'fake-large', skills: SKILLS });
    const session = await agent.createSession();
    try {
      const state = JSON.parse((await agent.generate({ session, prompt: '[[state]]' })).text);
      expect(state.model).toBe('fake-large');
      const home = JSON.parse((await agent.generate({ session, prompt: '[[env]]' })).text).env.HOME as string;
      expect(readdirSync(join(home, '.fake/skills')).sort()).toEqual(['release-notes', 'triage']);
      const file = join(home, '.fake/skills/release-notes/SKILL.md');
      // What acx writes is a SKILL.md acx itself (and any Agent Skills reader) parses back intact.
      expect(parseSkill(readFileSync(file, 'utf8'), 'release-notes', file)).toMatchObject(SKILLS[0]!);
    } finally {
      await session.destroy();
    }
  });

  it("keeps the profile's model when the agent names none, and uses .agents/skills by default", async () => {
    const agent = agentFor({ model: 'fake-large' }, { skills: [SKILLS[1]!] });
    const session = await agent.createSession();
    try {
      expect(JSON.parse((await agent.generate({ session, prompt: '[[state]]' })).text).model).toBe('fake-large');
      const home = JSON.parse((await agent.generate({ session, prompt: '[[env]]' })).text).env.HOME as string;
      expect(readFileSync(join(home, '.agents/skills/triage/SKILL.md'), 'utf8')).toBe(skillMarkdown(SKILLS[1]!));
    } finally {
      await session.destroy();
    }
  });

  it('refuses a skill name that is not one safe path segment, before the agent starts', async () => {
    for (const name of ['../escape', 'a/b', '', '.hidden']) {
      const agent = agentFor({}, { skills: [{ name, description: 'x', body: 'y' }] });
      await expect(agent.createSession()).rejects.toMatchObject({ code: 'acp-skill' });
    }
    const twice = agentFor({}, { skills: [SKILLS[1]!, SKILLS[1]!] });
    await expect(twice.createSession()).rejects.toThrow(/Two skills are named "triage"/);
  });

  it('writes nothing at all when one skill name is unsafe', () => {
    const written: string[] = [];
    const skills = [SKILLS[0]!, { name: '..', description: '', body: '' }];
    expect(() => writeSkills({ writeHomeFile: (p) => (written.push(p), p) }, '.claude/skills', skills)).toThrow(AcxError);
    expect(written).toEqual([]);
  });

  it('runs the agent in a given working directory when the sandbox is told to (acx run --workspace)', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'acx-ws-'));
    const agent = agentFor({ sandbox: createLocalSandbox({ workdir: workspace }) }, {});
    const session = await agent.createSession();
    const state = JSON.parse((await agent.generate({ session, prompt: '[[state]]' })).text);
    expect(state.cwd).toBe(workspace);
    await session.destroy();
    expect(existsSync(workspace)).toBe(true); // the user's directory is never deleted
  });
});

describe('choosing a harness', () => {
  it('takes --harness over ACX_HARNESS, defaults to the engine, and names the choices on a typo', () => {
    expect(resolveHarnessName(undefined, {})).toBe('engine');
    expect(resolveHarnessName(undefined, { ACX_HARNESS: 'codex' })).toBe('codex');
    expect(resolveHarnessName('claude-code', { ACX_HARNESS: 'codex' })).toBe('claude-code');
    expect(HARNESS_NAMES).toEqual(['engine', 'claude-code', 'codex', 'gemini-cli', 'opencode', 'cursor', 'grok-build']);
    expect(() => resolveHarnessName(undefined, { ACX_HARNESS: 'claude' })).toThrow(ConfigError);
    expect(() => resolveHarnessName(undefined, { ACX_HARNESS: 'claude' })).toThrow(/Unknown harness "claude" \(ACX_HARNESS\)/);
  });

  it("says which credential a profile needs before anything starts; AI Gateway counts where the profile supports it", () => {
    expect(() => checkProfileCredentials('claude-code', {})).toThrow(/set ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN/);
    expect(() => checkProfileCredentials('claude-code', { ANTHROPIC_AUTH_TOKEN: 't' })).not.toThrow();
    expect(() => checkProfileCredentials('claude-code', { AI_GATEWAY_API_KEY: 'g' })).not.toThrow();
    expect(() => checkProfileCredentials('codex', {})).toThrow(/OPENAI_API_KEY/);
    expect(() => checkProfileCredentials('codex', { AI_GATEWAY_API_KEY: 'g' })).not.toThrow();
    expect(() => checkProfileCredentials('codex', { OPENAI_API_KEY: 'k' })).not.toThrow();
    expect(() => checkProfileCredentials('gemini-cli', {})).toThrow(/GEMINI_API_KEY/);
    // Cursor's key cannot be brokered locally: the hint says so instead of promising a placeholder.
    const cursor = (() => {
      try {
        checkProfileCredentials('cursor', {});
      } catch (error) {
        return error as ConfigError;
      }
    })();
    expect(cursor?.message).toMatch(/set CURSOR_API_KEY/);
    expect(cursor?.hint).toMatch(/passed to the agent as is/);
    expect(cursor?.hint).not.toMatch(/placeholder/);
  });

  it("maps ACP's max_turn_requests (a spent step budget) to finish reason length", () => {
    expect(finishReasonOf('max_turn_requests')).toBe('length');
    expect(finishReasonOf('max_tokens')).toBe('length');
    expect(finishReasonOf('end_turn')).toBe('stop');
    expect(finishReasonOf('something-new')).toBe('other');
  });
});
