// Issue 11 item 3: a directory and the cartridge built from it are the same agent. Every example
// (examples/**) and fixture agent (test/fixtures/**) that is an agent directory is built into a
// cartridge with the real CLI, and `acx resolved-config` of the directory and of the cartridge
// must agree on every field an agent definition can set. Agents that cannot be built are listed
// below with the reason the build gives, never skipped in silence.
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT, runAcx, tempDir } from '../support/cli.ts';
import { scaled } from '../support/time-scale.ts';

/** Agent directories the build refuses, and the refusal each must get. */
const UNBUILDABLE: Record<string, RegExp> = {
  // tools ["memory"]: no built-in binds the required roles acx:execute and acx:dispatch (SPEC §8.4).
  'examples/notes-keeper': /agent\.json "tools" \["memory"\] has no tool for the required roles acx:execute, acx:dispatch/,
  'examples/nova': /agent\.json "tools" \["memory"\] has no tool for the required roles acx:execute, acx:dispatch/,
  // acx mcp's tests' agent (prompts with arguments, memory resources), a notes-keeper of its own.
  'test/fixtures/mcp/served-agent': /agent\.json "tools" \["memory"\] has no tool for the required roles acx:execute, acx:dispatch/,
  // The timeline wake tests' peer: a directory with no built-ins (its tools are the platform's).
  'test/fixtures/agents/timeline-peer': /has no tool for the required roles|system-prompt\.md is missing/,
  // The ACP server tests' editor project agent: a directory run needs no system prompt, a cartridge does.
  'test/fixtures/acp-server/project-agent': /prompts\/system-prompt\.md is missing/,
};

/** Every directory below examples/ and test/fixtures/ holding agent.json or an agent-package manifest.json. */
function agentDirectories(): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    const names = readdirSync(dir);
    if (names.includes('agent.json') || names.includes('manifest.json')) found.push(relative(ROOT, dir));
    for (const name of names) {
      if (name === 'node_modules' || name.startsWith('.')) continue;
      const child = join(dir, name);
      if (statSync(child).isDirectory()) walk(child);
    }
  };
  walk(join(ROOT, 'examples'));
  walk(join(ROOT, 'test/fixtures'));
  return found.sort();
}

type Config = Record<string, any>;

/**
 * The fields an agent definition sets, as resolved-config reports them. What differs by design
 * between a directory and a cartridge is taken out here, each with its reason:
 * - where the agent and its state live (agent.source, agent.path, state paths);
 * - the host tools a cartridge gets for its required roles (add_memory, search_memory), the
 *   self-authorship tools a signed ROM cannot have (system_prompt_read / _edit), and
 *   memory_delete, which a cartridge's append-only SAVE memory does not offer; with their skip reasons;
 * - memory seeds marked portable:false, which stay in the directory's own memory and are never
 *   packed (SPEC §7.1: field-learned memory belongs to SAVE);
 * - the definition's source kind (directory / cartridge).
 */
function definitionFields(config: Config) {
  const hostOnly = new Set(['add_memory', 'search_memory', 'system_prompt', 'system_prompt_read', 'system_prompt_edit', 'memory_delete']);
  return {
    agent: { id: config.agent.id, name: config.agent.name },
    provider: config.provider,
    model: config.model,
    model_source: config.model_source,
    sdk_surface: config.sdk_surface,
    base_url: config.base_url,
    cache_mode: config.cache_mode,
    permission_mode: config.permission_mode,
    speech: config.speech,
    tools: (config.tools as string[]).filter((name) => !hostOnly.has(name)),
    skipped: (config.skipped as Array<{ name: string }>).filter((entry) => !hostOnly.has(entry.name)),
    isolation: config.isolation,
    mcp_servers: config.mcp_servers,
    max_steps: config.max_steps,
    max_steps_source: config.max_steps_source,
    max_context_tokens: config.max_context_tokens,
    step_result_budget: config.step_result_budget,
    policy_not_applied: config.policy_not_applied,
    instructions_chars: config.instructions_chars,
    definition: {
      ...config.definition,
      source: undefined,
      memory_seeds: (config.definition.memory_seeds as Array<{ portable: boolean }>).filter((seed) => seed.portable),
    },
  };
}

const AGENTS = agentDirectories();
let home: string;
let key: string;

beforeAll(async () => {
  home = tempDir('acx-agreement-');
  mkdirSync(join(home, 'out'));
  // A throwaway key, trusted as this installation's own: the cartridges verify as `local`, so
  // their ROM MCP drop-ins are configured exactly as a directory's are.
  const keygen = await runAcx(['keygen', '-o', join(home, 'keys'), '--trust', '--publisher', 'dev.acx.test'], { home });
  expect(keygen.status, keygen.stderr).toBe(0);
  key = join(home, 'keys/acx-signing.key.pem');
}, scaled(60_000));

async function resolvedConfig(agent: string): Promise<Config> {
  const run = await runAcx(['resolved-config', agent], { home });
  expect(run.status, `acx resolved-config ${agent}: ${run.stderr}`).toBe(0);
  return JSON.parse(run.stdout) as Config;
}

describe('a directory and the cartridge built from it agree (e2e)', { timeout: scaled(120_000) }, () => {
  it('finds the example and fixture agents, and lists every one that cannot be built', () => {
    expect(AGENTS).toEqual(expect.arrayContaining(['examples/cartridges/notes-keeper', 'examples/notes-keeper', 'test/fixtures/agents/every-field', 'test/fixtures/reference/sample-agent-package']));
    for (const listed of Object.keys(UNBUILDABLE)) expect(AGENTS).toContain(listed);
  });

  it.each(AGENTS)('%s', async (agent) => {
    const dir = join(ROOT, agent);
    const out = join(home, 'out', `${agent.replaceAll('/', '_')}.acx`);
    const build = await runAcx(['build', dir, '-o', out, '--key', key, '--publisher', 'dev.acx.test', '--json'], { home });
    const refusal = UNBUILDABLE[agent];
    if (refusal) {
      expect(build.status).not.toBe(0);
      expect((JSON.parse(build.stdout) as { error: { message: string } }).error.message).toMatch(refusal);
      // It still runs as a directory: the one reader reads it the way a build would.
      expect((await resolvedConfig(dir)).definition.id).toBeTruthy();
      return;
    }
    expect(build.status, build.stdout + build.stderr).toBe(0);
    expect(existsSync(out)).toBe(true);
    const [fromDir, fromCartridge] = await Promise.all([resolvedConfig(dir), resolvedConfig(out)]);
    expect(fromDir.agent.source).toBe('directory');
    expect(fromCartridge.agent.source).toBe('cartridge');
    expect(definitionFields(fromCartridge)).toEqual(definitionFields(fromDir));
  });

  it('applies agent.json stepBudget the same way in both (no loop-context-policy.json: the default one packs it)', async () => {
    const dir = join(ROOT, 'test/fixtures/agents/every-field');
    const out = join(home, 'out', 'test_fixtures_agents_every-field.acx');
    if (!existsSync(out)) {
      const build = await runAcx(['build', dir, '-o', out, '--key', key, '--publisher', 'dev.acx.test'], { home });
      expect(build.status, build.stderr).toBe(0);
    }
    for (const config of await Promise.all([resolvedConfig(dir), resolvedConfig(out)])) {
      expect(config).toMatchObject({ max_steps: 7, max_steps_source: 'policy', max_context_tokens: null, speech: { mode: 'tool', tool: 'say' }, permission_mode: 'allow-reads' });
      expect(config.definition).toMatchObject({ step_budget: 7, loop_policy: { maxTurns: 7, targetTokenBudget: null } });
    }
  });
});
