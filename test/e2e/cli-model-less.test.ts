// Commands that never call a model work with none configured and no key in the environment:
// resolved-config reports `model: null`, cleanup removes a session, handshake negotiates with the
// engine's context-window resolution and says where the figure came from.
import { cpSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { QUICKSTART_PROMPT } from '../../scripts/quickstart.ts';
import { defaultHarnessRequirements } from '../../src/contract/requirements.ts';
import { detectIsolation } from '../../src/tools/sandbox/isolation.ts';
import { buildTestCartridge, runAcx, tempDir } from '../support/cartridge-fixtures.ts';
import { matchingTools } from '../contract/helpers.ts';
import { scaled } from '../support/time-scale.ts';

const ROOT = join(import.meta.dirname, '../..');
const FLOOR_SOURCE = "the engine's 128000 floor for a model that states no window; no model given: pass --model or --context-window";

/** A fresh machine (no model keys, no acx settings) with HOME and both acx homes in `home`. */
function acx(args: string[], home: string) {
  return runAcx(args, { HOME: home, ACX_HOME: join(home, 'state'), ACX_CONFIG_HOME: join(home, 'config') }, { fresh: true });
}

/** examples/notes-keeper without its `model`: nothing anywhere names one. */
function agentWithoutModel(root: string): string {
  const dir = join(root, 'notes-keeper');
  cpSync(join(ROOT, 'examples/notes-keeper'), dir, { recursive: true });
  const manifest = JSON.parse(readFileSync(join(dir, 'agent.json'), 'utf8')) as Record<string, unknown>;
  delete manifest.model;
  writeFileSync(join(dir, 'agent.json'), JSON.stringify(manifest, null, 2));
  return dir;
}

// execute binds acx:execute only where the sandbox has OS isolation (or an explicit opt-in).
const isolated = (await detectIsolation()).kind !== 'none';

describe.concurrent('commands that never call a model (e2e, no model, no key)', { timeout: scaled(120_000) }, () => {
  it('resolved-config reports model: null and everything else, writing nothing', async () => {
    const home = tempDir('acx-nomodel-');
    const agent = agentWithoutModel(home);
    for (const target of [[], [agent]]) {
      const run = await acx(['resolved-config', ...target], home);
      expect(run.code, run.stderr).toBe(0);
      const config = JSON.parse(run.stdout) as Record<string, unknown>;
      expect(config).toMatchObject({ provider: null, model: null, model_source: null, sdk_surface: null, base_url: null, cache_mode: null, sdk: 'ai', max_steps: target.length ? 12 : 24 });
      expect(config.tools).toEqual(expect.arrayContaining(['memory_write', 'memory_search']));
      expect(config.agent).toMatchObject(target.length ? { id: 'notes-keeper', source: 'directory' } : { id: 'default', source: 'config-home' });
    }
    expect(existsSync(join(home, 'state'))).toBe(false);
  });

  it('cleanup removes a session of an agent with no model, and --json prints one object', async () => {
    const home = tempDir('acx-nomodel-');
    const agent = agentWithoutModel(home);
    // The session is made by a replayed run (the cassette is the only model anywhere).
    const made = await acx(['run', agent, QUICKSTART_PROMPT, '--replay', join(ROOT, 'examples/notes-keeper/cassettes/quickstart.json'), '--session', 's1'], home);
    expect(made.code, made.stderr).toBe(0);
    const dry = await acx(['cleanup', agent, '--session', 's1', '--dry-run'], home);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/^would remove s1 \(\d+ messages, 0 wake events\)\n$/);
    const removed = await acx(['cleanup', agent, '--session', 's1', '--json'], home);
    expect(removed.code, removed.stderr).toBe(0);
    const report = JSON.parse(removed.stdout) as { agent: string; dryRun: boolean; removed: Array<{ id: string; messages: number }>; kept: unknown[] };
    expect(report).toMatchObject({ agent: 'notes-keeper', dryRun: false, kept: [], removed: [{ id: 's1', wakeEvents: 0, acpSessions: 0 }] });
    expect(report.removed[0]!.messages).toBeGreaterThan(0);
    const again = await acx(['cleanup', agent, '--session', 's1'], home);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('has no session "s1"');
    const sweep = await acx(['cleanup', 'default', '--idle-days', '1', '--json'], home);
    expect(sweep.code, sweep.stderr).toBe(0);
    expect(JSON.parse(sweep.stdout)).toEqual({ agent: 'default', stateDir: join(home, 'state', 'agents', 'default'), dryRun: false, removed: [], kept: [] });
    // Cleaning runs nothing from a cartridge: one signed by an unknown key (portable) may be cleaned.
    const portable = buildTestCartridge(home, { name: 'portable' });
    const cart = await acx(['cleanup', portable.path, '--idle-days', '1', '--json'], home);
    expect(cart.code, cart.stderr).toBe(0);
    expect(JSON.parse(cart.stdout)).toMatchObject({ agent: 'notes-keeper', removed: [], kept: [] });
  });

  it('handshake without a model negotiates on the engine\'s floor and names its source, or refuses naming --model / --context-window', async () => {
    const home = tempDir('acx-nomodel-');
    const manifest = join(home, 'harness-requirements.json');
    writeFileSync(manifest, JSON.stringify(defaultHarnessRequirements(), null, 2));
    const tools = join(home, 'tools.json');
    writeFileSync(tools, JSON.stringify(matchingTools()));
    const accepted = await acx(['handshake', manifest, '--tools', tools], home);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(accepted.stdout).toContain(`ok   model.minContextWindowTokens: requested >= 100000, offered 128000 (${FLOOR_SOURCE})`);
    expect(accepted.stdout).toContain('verdict: accept');

    const big = defaultHarnessRequirements();
    big.model.minContextWindowTokens = 200_000;
    writeFileSync(manifest, JSON.stringify(big, null, 2));
    const refused = await acx(['handshake', manifest, '--tools', tools], home);
    expect(refused.code).toBe(3);
    expect(refused.stdout).toContain(`FAIL model.minContextWindowTokens: requested >= 200000, offered 128000 (${FLOOR_SOURCE})`);
    expect(JSON.parse(refused.stderr.trim().split('\n').at(-1)!)).toMatchObject({ code: -32602, data: { unmet: ['model.minContextWindowTokens'] } });
    const given = await acx(['handshake', manifest, '--tools', tools, '--context-window', '262144', '--json'], home);
    expect(given.code, given.stderr).toBe(0);
    const descriptor = JSON.parse(given.stdout) as { model: { contextWindowTokens: number }; checks: Array<{ id: string; offered: string }> };
    expect(descriptor.model.contextWindowTokens).toBe(262144);
    expect(descriptor.checks.find((c) => c.id === 'model.minContextWindowTokens')!.offered).toBe('262144 (--context-window)');
  });

  it.skipIf(!isolated)(`handshake of a cartridge whose agent names no model binds acx's own tools${isolated ? '' : ' (skipped: no bwrap or unshare isolation, so execute is not offered)'}`, async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-nomodel-'));
    const manifest = JSON.parse(readFileSync(join(ROOT, 'examples/cartridges/notes-keeper/agent.json'), 'utf8')) as Record<string, unknown>;
    delete manifest.model;
    const built = buildTestCartridge(home, { name: 'nomodel', edit: { 'agent.json': JSON.stringify(manifest, null, 2) } });
    const run = await acx(['handshake', built.path, '--registry', built.registry], home);
    expect(run.code, `${run.stdout}${run.stderr}`).toBe(0);
    expect(run.stdout).toContain(`ok   model.minContextWindowTokens: requested >= 100000, offered 128000 (${FLOOR_SOURCE})`);
    expect(run.stdout).toContain('ok   acx:execute -> execute (name, builtin)');
    expect(run.stdout).toContain('verdict: accept');
  });
});
