import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSelfAuthorshipTools } from '../../src/app/charter.ts';
import { installConfigHome } from '../../src/app/install.ts';
import { listOptIns, parseOptInNames, readOptIns } from '../../src/app/opt-in.ts';
import { formatInstallSummary } from '../../src/frontends/cli/commands/install.ts';
import { createShellTool } from '../../src/tools/builtin/shell.ts';
import { Policy } from '../../src/tools/policy.ts';
import { ConfigError } from '../../src/core/errors.ts';
import { createMemoryLogger, silentLogger } from '../../src/util/logger.ts';
import { exists, tempHome, V1_DEFAULTS, write } from '../support/config-home.ts';

const notRoot = () => false;

describe('opt-in grants', () => {
  it('a fresh home grants nothing, so every powerful tool is refused', () => {
    const home = tempHome();
    installConfigHome({ configHome: home, version: '1', logger: silentLogger, defaults: V1_DEFAULTS });
    expect(readOptIns(home)).toEqual([]);
    const policy = Policy.unlocked({ grants: readOptIns(home), isRoot: notRoot });
    expect(policy.check(createShellTool()).allowed).toBe(false);
    for (const tool of createSelfAuthorshipTools(home)) expect(policy.check(tool).allowed).toBe(false);
  });

  it('acx install --opt-in records grant files that Policy reads back', () => {
    const home = tempHome();
    const summary = installConfigHome({
      configHome: home,
      version: '1',
      logger: silentLogger,
      defaults: V1_DEFAULTS,
      optIn: ['shell, system_prompt', 'shell'],
    });
    expect(summary.optedIn).toEqual(['shell', 'system_prompt']);
    expect(summary.grandfathered).toEqual([]);
    expect(exists(home, 'tools/shell.enabled')).toBe(true);
    expect(exists(home, 'tools/system_prompt.enabled')).toBe(true);
    expect(readOptIns(home)).toEqual(['shell', 'system_prompt', 'system_prompt_edit', 'system_prompt_read']);

    const grants = readOptIns(home);
    expect(Policy.unlocked({ grants, isRoot: notRoot }).check(createShellTool()).allowed).toBe(true);
    // The shell still needs its second gate: the locked profile refuses it even when granted.
    expect(Policy.locked({ grants, isRoot: notRoot }).check(createShellTool()).allowed).toBe(false);
    for (const tool of createSelfAuthorshipTools(home)) expect(Policy.locked({ grants }).check(tool).allowed).toBe(true);

    const text = formatInstallSummary(summary);
    expect(text).toMatch(/!! OPT-IN GRANTED: shell/);
    expect(text).toMatch(/!! OPT-IN GRANTED: system_prompt: self-authorship/);
  });

  it('a grant file dropped in by hand works the same, and deleting it revokes the grant', () => {
    const home = tempHome();
    installConfigHome({ configHome: home, version: '1', logger: silentLogger, defaults: V1_DEFAULTS });
    write(home, 'tools/system_prompt.enabled', '');
    expect(readOptIns(home)).toContain('system_prompt_edit');
    fs.rmSync(path.join(home, 'tools/system_prompt.enabled'));
    expect(readOptIns(home)).toEqual([]);
  });

  it('an unknown grant file grants nothing and is reported', () => {
    const home = tempHome();
    write(home, 'tools/generate_video.enabled', '');
    fs.mkdirSync(path.join(home, 'tools/shell.enabled'));
    const logger = createMemoryLogger();
    expect(readOptIns(home, { logger })).toEqual([]);
    expect(listOptIns(home)).toEqual({ granted: [], unknown: ['generate_video.enabled'] });
    expect(logger.lines.join('\n')).toMatch(/WARNING opt_in_unknown file=tools\/generate_video.enabled/);
  });

  it('refuses an unknown name with the list of known ones, writing nothing', () => {
    const home = tempHome();
    let error: unknown;
    try {
      installConfigHome({ configHome: home, version: '1', logger: silentLogger, optIn: ['shell,generate_video'] });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toBe('Unknown opt-in tool: generate_video.');
    // One line: the names; `acx install --help` says what each does.
    expect((error as ConfigError).hint).toMatch(/^Leave generate_video out of --opt-in; the tools that need a grant are shell, execute-unisolated, system_prompt, .*\(`acx install --help` says what each does\)\.$/);
    expect(fs.existsSync(home)).toBe(false);
  });

  it('explains that web_fetch is on by default instead of granting it', () => {
    expect(() => parseOptInNames(['web_fetch'])).toThrow(/web_fetch is on by default/);
    expect(parseOptInNames([' , '])).toEqual([]);
  });

  it('grandfathers grants an earlier install left behind, and says so loudly', () => {
    const home = tempHome();
    installConfigHome({ configHome: home, version: '1.0.0', logger: silentLogger, defaults: V1_DEFAULTS, optIn: ['shell'] });
    const summary = installConfigHome({ configHome: home, version: '2.0.0', logger: silentLogger, defaults: V1_DEFAULTS });
    expect(summary.grandfathered).toEqual(['shell']);
    expect(summary.optedIn).toEqual([]);
    expect(exists(home, 'tools/shell.enabled')).toBe(true);
    expect(formatInstallSummary(summary)).toMatch(/!! OPT-IN KEPT \(granted earlier, not stripped\): shell: .*Revoke: delete tools\/shell.enabled/);
  });

  it('says that nothing powerful is on when nothing is granted', () => {
    const home = tempHome();
    const summary = installConfigHome({ configHome: home, version: '1', logger: silentLogger, defaults: V1_DEFAULTS });
    expect(formatInstallSummary(summary)).toMatch(/powerful tools: +none granted/);
  });
});
