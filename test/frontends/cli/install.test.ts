import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatInstallSummary, runInstall } from '../../../src/frontends/cli/commands/install.ts';
import { ACX_VERSION } from '../../../src/util/version.ts';
import { ConfigError } from '../../../src/core/errors.ts';
import { silentLogger } from '../../../src/util/logger.ts';
import { exists, read, tempHome, write } from '../../support/config-home.ts';

const repo = path.resolve(import.meta.dirname, '../../..');
const wired = fs.readFileSync(path.join(repo, 'src/frontends/cli/main.ts'), 'utf8').includes('commands/install.ts');

describe('acx install (core)', () => {
  it('installs into ACX_CONFIG_HOME, stamped with the running acx version', () => {
    const home = tempHome();
    const summary = runInstall({ env: { ACX_CONFIG_HOME: home }, logger: silentLogger });
    expect(summary.configHome).toBe(home);
    expect(read(home, '.version').trim()).toBe(ACX_VERSION);
    expect(exists(home, 'prompts/system-prompt.md')).toBe(true);
  });

  it('--config-home wins over ACX_CONFIG_HOME', () => {
    const flagHome = tempHome();
    const envHome = tempHome();
    runInstall({ configHome: flagHome, env: { ACX_CONFIG_HOME: envHome }, logger: silentLogger });
    expect(exists(flagHome, '.version')).toBe(true);
    expect(fs.existsSync(envHome)).toBe(false);
  });

  it('prints what it did and names edited files with their .new', () => {
    const home = tempHome();
    runInstall({ configHome: home, logger: silentLogger, version: '1.0.0', defaults: { 'prompts/system-prompt.md': 'one\n' } });
    write(home, 'prompts/system-prompt.md', 'mine\n');
    write(home, 'model_params.json', '{}');
    const summary = runInstall({ configHome: home, logger: silentLogger, version: '2.0.0', defaults: { 'prompts/system-prompt.md': 'two\n' } });
    const text = formatInstallSummary(summary);
    expect(text).toContain(`acx config home: ${home} (acx 2.0.0; upgraded from 1.0.0)`);
    expect(text).toMatch(/kept your edits: +prompts\/system-prompt.md \(the new default is beside it as prompts\/system-prompt.md.new/);
    expect(text).toMatch(/your files, untouched: +model_params.json/);
  });

  it('an unknown --opt-in is a ConfigError', () => {
    expect(() => runInstall({ configHome: tempHome(), optIn: ['root_shell'], logger: silentLogger })).toThrow(ConfigError);
  });
});

describe.skipIf(!wired)('acx install (process; needs the command wired into src/frontends/cli/main.ts)', () => {
  const acx = (args: string[], env: NodeJS.ProcessEnv = {}) =>
    spawnSync('npx', ['node', 'bin/acx.js', ...args], { cwd: repo, encoding: 'utf8', env: { ...process.env, ...env } });

  it('installs, grants, and exits 0; an unknown opt-in exits non-zero with the known names', () => {
    const home = tempHome();
    const ok = acx(['install', '--config-home', home, '--opt-in', 'system_prompt']);
    expect(ok.status).toBe(0);
    expect(ok.stdout).toContain('!! OPT-IN GRANTED: system_prompt');
    expect(exists(home, 'tools/system_prompt.enabled')).toBe(true);

    const bad = acx(['install', '--opt-in', 'nope'], { ACX_CONFIG_HOME: tempHome() });
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('Unknown opt-in tool: nope.');
    expect(bad.stderr).toContain('execute-unisolated');
  });

  it('--json prints the summary as one JSON object, and an error as one JSON error object', () => {
    const home = tempHome();
    const ok = acx(['install', '--config-home', home, '--opt-in', 'system_prompt', '--json']);
    expect(ok.status, ok.stderr).toBe(0);
    const summary = JSON.parse(ok.stdout) as Record<string, unknown>;
    expect(summary).toMatchObject({ configHome: home, version: ACX_VERSION, previousVersion: null, keptEdited: [], optedIn: ['system_prompt'], grandfathered: [] });
    expect(summary.created).toEqual(expect.arrayContaining(['prompts/system-prompt.md']));
    const again = JSON.parse(acx(['install', '--config-home', home, '--json']).stdout) as Record<string, unknown>;
    expect(again).toMatchObject({ previousVersion: ACX_VERSION, created: [], optedIn: [], grandfathered: ['system_prompt'] });

    const bad = acx(['install', '--opt-in', 'nope', '--json'], { ACX_CONFIG_HOME: tempHome() });
    expect(bad.status).toBe(1);
    const { error } = JSON.parse(bad.stdout) as { error: { code: string; message: string; hint: string } };
    expect(error.code).toBe('config');
    expect(error.message).toBe('Unknown opt-in tool: nope.');
    expect(error.hint).toContain('execute-unisolated');
    expect(bad.stderr).not.toContain('Unknown opt-in tool');
  });
});
