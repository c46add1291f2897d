import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  installConfigHome,
  isInstalled,
  packagedDefaults,
  reconcileIfUpgraded,
  sha256Hex,
} from '../../src/app/install.ts';
import { ConfigError } from '../../src/core/errors.ts';
import { createMemoryLogger, silentLogger } from '../../src/util/logger.ts';
import { exists, read, snapshot, tempHome, V1_DEFAULTS, V2_DEFAULTS, write } from '../support/config-home.ts';

const THREE_V1 = { 'prompts/a.md': 'A one\n', 'prompts/b.md': 'B one\n', 'prompts/c.md': 'C one\n' };
const THREE_V2 = { 'prompts/a.md': 'A two\n', 'prompts/b.md': 'B two\n', 'prompts/c.md': 'C two\n' };

describe('fresh install', () => {
  it('lays down the packaged prompts, empty overlays, a manifest and a version stamp', () => {
    const home = tempHome();
    const summary = installConfigHome({ configHome: home, version: '1.0.0', logger: silentLogger });

    expect(summary.created).toEqual(['prompts/system-prompt.md', 'prompts/initialize.md', 'mcp/', 'tools/']);
    expect(summary.previousVersion).toBeNull();
    const defaults = packagedDefaults();
    expect(read(home, 'prompts/system-prompt.md')).toBe(defaults['prompts/system-prompt.md']);
    expect(read(home, 'prompts/initialize.md')).toBe(defaults['prompts/initialize.md']);
    expect(read(home, 'prompts/initialize.md')).toMatch(/data, not instructions/);
    expect(fs.readdirSync(path.join(home, 'mcp'))).toEqual([]);
    expect(fs.readdirSync(path.join(home, 'tools'))).toEqual([]);
    expect(read(home, '.version').trim()).toBe('1.0.0');
    const manifest = JSON.parse(read(home, '.manifest.json'));
    expect(manifest.files).toEqual({
      'prompts/initialize.md': sha256Hex(defaults['prompts/initialize.md']!),
      'prompts/system-prompt.md': sha256Hex(defaults['prompts/system-prompt.md']!),
    });
    expect(exists(home, 'model_params.json')).toBe(false);
    expect(isInstalled(home)).toBe(true);
    // No temp files left behind by the atomic writes.
    expect(Object.keys(snapshot(home)).filter((f) => f.includes('.tmp-'))).toEqual([]);
  });

  it('changes nothing when run again with the same version', () => {
    const home = tempHome();
    installConfigHome({ configHome: home, version: '1.0.0', logger: silentLogger, defaults: V1_DEFAULTS });
    const before = snapshot(home);
    const logger = createMemoryLogger();
    const again = installConfigHome({ configHome: home, version: '1.0.0', logger, defaults: V1_DEFAULTS });

    expect(snapshot(home)).toEqual(before);
    expect(again.created).toEqual([]);
    expect(again.refreshed).toEqual([]);
    expect(again.keptEdited).toEqual([]);
    expect(again.unchanged).toEqual(['prompts/system-prompt.md', 'prompts/initialize.md']);
    expect(logger.lines.filter((l) => l.startsWith('WARNING'))).toEqual([]);
  });

  it('adopts a pre-existing file equal to the default, and keeps a different one with a .new beside it', () => {
    const home = tempHome();
    write(home, 'prompts/system-prompt.md', V1_DEFAULTS['prompts/system-prompt.md']);
    write(home, 'prompts/initialize.md', 'my own rules\n');
    const summary = installConfigHome({ configHome: home, version: '1.0.0', logger: silentLogger, defaults: V1_DEFAULTS });
    expect(summary.unchanged).toEqual(['prompts/system-prompt.md']);
    expect(summary.keptEdited).toEqual(['prompts/initialize.md']);
    expect(read(home, 'prompts/initialize.md')).toBe('my own rules\n');
    expect(read(home, 'prompts/initialize.md.new')).toBe(V1_DEFAULTS['prompts/initialize.md']);
  });
});

describe('upgrade reconcile (dpkg conffile style)', () => {
  function installedV1(): string {
    const home = tempHome();
    installConfigHome({ configHome: home, version: '1.0.0', logger: silentLogger, defaults: THREE_V1 });
    write(home, 'prompts/b.md', 'B one, edited by me\n');
    fs.rmSync(path.join(home, 'prompts/c.md'));
    write(home, 'prompts/persona-notes.md', 'mine\n');
    write(home, 'tools/my-tool.json', '{}\n');
    write(home, 'model_params.json', '{"temperature":0.2}\n');
    write(home, 'agent.env', 'OPENAI_API_KEY=sk-not-a-real-key\n');
    return home;
  }

  it('refreshes untouched, keeps edited (+ .new), respects deleted, never touches user files', () => {
    const home = installedV1();
    const userBefore = snapshot(home);
    const logger = createMemoryLogger();
    const summary = installConfigHome({ configHome: home, version: '2.0.0', logger, defaults: THREE_V2 });

    expect(summary.previousVersion).toBe('1.0.0');
    expect(summary.refreshed).toEqual(['prompts/a.md']);
    expect(read(home, 'prompts/a.md')).toBe('A two\n');

    expect(summary.keptEdited).toEqual(['prompts/b.md']);
    expect(read(home, 'prompts/b.md')).toBe('B one, edited by me\n');
    expect(read(home, 'prompts/b.md.new')).toBe('B two\n');
    const warnings = logger.lines.filter((l) => l.startsWith('WARNING'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('file=prompts/b.md');

    expect(summary.respectedDeleted).toEqual(['prompts/c.md']);
    expect(exists(home, 'prompts/c.md')).toBe(false);
    expect(exists(home, 'prompts/c.md.new')).toBe(false);

    expect(summary.untouchedUser).toEqual(['agent.env', 'model_params.json', 'prompts/persona-notes.md', 'tools/my-tool.json']);
    for (const file of summary.untouchedUser) expect(snapshot(home)[file]).toEqual(userBefore[file]);
    expect(read(home, '.version').trim()).toBe('2.0.0');
    expect(JSON.parse(read(home, '.manifest.json')).files['prompts/a.md']).toBe(sha256Hex('A two\n'));
  });

  it('re-running the upgrade is quiet and idempotent; a deleted default stays deleted on later upgrades', () => {
    const home = installedV1();
    installConfigHome({ configHome: home, version: '2.0.0', logger: silentLogger, defaults: THREE_V2 });
    const before = snapshot(home);
    const logger = createMemoryLogger();
    const again = installConfigHome({ configHome: home, version: '2.0.0', logger, defaults: THREE_V2 });
    expect(snapshot(home)).toEqual(before);
    expect(again.keptEdited).toEqual(['prompts/b.md']);
    expect(logger.lines.filter((l) => l.startsWith('WARNING'))).toEqual([]);

    const v3 = { 'prompts/a.md': 'A three\n', 'prompts/b.md': 'B three\n', 'prompts/c.md': 'C three\n' };
    const third = installConfigHome({ configHome: home, version: '3.0.0', logger: silentLogger, defaults: v3 });
    expect(third.respectedDeleted).toEqual(['prompts/c.md']);
    expect(exists(home, 'prompts/c.md')).toBe(false);
    expect(read(home, 'prompts/b.md.new')).toBe('B three\n');
  });

  it('after the operator merges the .new by hand, the file counts as untouched again', () => {
    const home = installedV1();
    installConfigHome({ configHome: home, version: '2.0.0', logger: silentLogger, defaults: THREE_V2 });
    fs.renameSync(path.join(home, 'prompts/b.md.new'), path.join(home, 'prompts/b.md'));
    const v3 = { ...THREE_V2, 'prompts/b.md': 'B three\n' };
    const summary = installConfigHome({ configHome: home, version: '3.0.0', logger: silentLogger, defaults: v3 });
    expect(summary.refreshed).toEqual(['prompts/b.md']);
    expect(read(home, 'prompts/b.md')).toBe('B three\n');
  });

  it('forgets a default the new version no longer ships, leaving the file in place', () => {
    const home = tempHome();
    installConfigHome({ configHome: home, version: '1.0.0', logger: silentLogger, defaults: THREE_V1 });
    const { 'prompts/c.md': _dropped, ...withoutC } = THREE_V2;
    const summary = installConfigHome({ configHome: home, version: '2.0.0', logger: silentLogger, defaults: withoutC });
    expect(summary.retired).toEqual(['prompts/c.md']);
    expect(read(home, 'prompts/c.md')).toBe('C one\n');
    expect(Object.keys(JSON.parse(read(home, '.manifest.json')).files)).toEqual(['prompts/a.md', 'prompts/b.md']);
  });
});

describe('user-owned files', () => {
  it('never creates, refreshes or prunes model_params.json, even if a defaults map lists it', () => {
    const home = tempHome();
    expect(() =>
      installConfigHome({
        configHome: home,
        version: '1.0.0',
        logger: silentLogger,
        defaults: { ...V1_DEFAULTS, 'model_params.json': '{}' },
      }),
    ).toThrow(ConfigError);
    expect(fs.existsSync(home)).toBe(false);
    for (const bad of ['agent.env', '.env', '../escape.md', '/abs.md']) {
      expect(() => installConfigHome({ configHome: home, version: '1', logger: silentLogger, defaults: { [bad]: 'x' } })).toThrow(ConfigError);
    }
  });
});

describe('bad input is refused before anything is written', () => {
  it('a corrupt manifest', () => {
    const home = tempHome();
    installConfigHome({ configHome: home, version: '1.0.0', logger: silentLogger, defaults: V1_DEFAULTS });
    write(home, '.manifest.json', '{not json');
    const before = snapshot(home);
    let error: unknown;
    try {
      installConfigHome({ configHome: home, version: '2.0.0', logger: silentLogger, defaults: V2_DEFAULTS });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain('.manifest.json');
    expect((error as ConfigError).hint).toMatch(/Delete .*\.manifest\.json/);
    expect(snapshot(home)).toEqual(before);
  });

  it('a config home that is a file, or an overlay path that is a file', () => {
    const home = tempHome();
    write(path.dirname(home), 'home', 'not a dir');
    expect(() => installConfigHome({ configHome: home, version: '1', logger: silentLogger })).toThrow(/not a directory/);

    const other = tempHome();
    write(other, 'mcp', 'oops');
    expect(() => installConfigHome({ configHome: other, version: '1', logger: silentLogger })).toThrow(/mcp.*not a directory/);
    expect(exists(other, 'prompts')).toBe(false);
  });
});

describe('automatic reconcile on the first run after an upgrade', () => {
  it('re-runs the reconcile when the stamped version differs', () => {
    const home = tempHome();
    installConfigHome({ configHome: home, version: '1.0.0', logger: silentLogger, defaults: V1_DEFAULTS });
    write(home, 'prompts/initialize.md', 'edited\n');
    const logger = createMemoryLogger();
    const summary = reconcileIfUpgraded({ configHome: home, version: '1.1.0', logger, defaults: V2_DEFAULTS });

    expect(summary?.refreshed).toEqual(['prompts/system-prompt.md']);
    expect(summary?.keptEdited).toEqual(['prompts/initialize.md']);
    expect(read(home, 'prompts/system-prompt.md')).toBe(V2_DEFAULTS['prompts/system-prompt.md']);
    expect(read(home, 'prompts/initialize.md.new')).toBe(V2_DEFAULTS['prompts/initialize.md']);
    expect(read(home, '.version').trim()).toBe('1.1.0');
    expect(logger.lines.some((l) => l.includes('config_home_upgrade') && l.includes('from=1.0.0') && l.includes('to=1.1.0'))).toBe(true);
  });

  it('does nothing when the version is unchanged', () => {
    const home = tempHome();
    installConfigHome({ configHome: home, version: '1.0.0', logger: silentLogger, defaults: V1_DEFAULTS });
    const before = snapshot(home);
    expect(reconcileIfUpgraded({ configHome: home, version: '1.0.0', logger: silentLogger, defaults: V2_DEFAULTS })).toBeNull();
    expect(snapshot(home)).toEqual(before);
  });

  it('leaves a config home that was never installed alone', () => {
    const home = tempHome();
    expect(reconcileIfUpgraded({ configHome: home, version: '2.0.0', logger: silentLogger })).toBeNull();
    expect(fs.existsSync(home)).toBe(false);

    write(home, 'model_params.json', '{}\n');
    write(home, 'prompts/system-prompt.md', 'hand-written\n');
    const before = snapshot(home);
    expect(reconcileIfUpgraded({ configHome: home, version: '2.0.0', logger: silentLogger })).toBeNull();
    expect(snapshot(home)).toEqual(before);
    expect(isInstalled(home)).toBe(false);
  });
});
