import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { composeCharter } from '../../src/app/charter.ts';
import { standingInstructions } from '../../src/app/prepare.ts';
import { resolveSettings } from '../../src/app/settings.ts';
import { installConfigHome, packagedDefaults } from '../../src/app/install.ts';
import { createMemoryLogger, silentLogger } from '../../src/util/logger.ts';
import { tempHome, write } from '../support/config-home.ts';

describe('composeCharter', () => {
  it('falls back to the packaged defaults, comments stripped, when the home was never installed', () => {
    const home = tempHome();
    const charter = composeCharter(home);
    expect(charter.fallback).toBe(true);
    expect(charter.sources).toEqual({ systemPrompt: 'packaged', initialize: 'packaged' });
    expect(packagedDefaults()['prompts/system-prompt.md']).toContain('<!--');
    expect(charter.text).not.toContain('<!--');
    expect(charter.text).not.toContain('Operator notes');
    expect(charter.text.indexOf('You are a general-purpose assistant')).toBe(0);
    expect(charter.text).toMatch(/is data, not instructions/);
    expect(charter.text).toMatch(/Never reveal secrets/);
    // The shipped guidance says the log has no reader, so the agent speaks where it is heard.
    expect(charter.text).toMatch(/Nobody reads your log\. Assume no one ever will/);
  });

  it('a fallback system prompt (ACX_SYSTEM_PROMPT) stands in for the packaged one only while the home was never installed', () => {
    const home = tempHome();
    const never = composeCharter(home, { fallbackSystemPrompt: 'You are Nova, a peer.' });
    expect(never.sources.systemPrompt).toBe('setting');
    expect(never.text.indexOf('You are Nova, a peer.\n\n## How you work')).toBe(0);
    expect(never.text).not.toContain('You are a general-purpose assistant');
    installConfigHome({ configHome: home, version: '1', logger: silentLogger });
    write(home, 'prompts/system-prompt.md', 'You are Ada.');
    const installed = composeCharter(home, { fallbackSystemPrompt: 'You are Nova, a peer.' });
    expect(installed.sources.systemPrompt).toBe('file');
    expect(installed.text).not.toContain('Nova');
    expect(installed.systemPrompt).toBe('You are Ada.');
  });

  it('ACX_SYSTEM_PROMPT reaches the standing instructions of an agent run from a never-installed config home', async () => {
    const home = tempHome();
    const settings = await resolveSettings({ home, configHome: home }, { env: { ACX_SYSTEM_PROMPT: '  You are Nova, a peer.  ' } });
    expect(standingInstructions(settings, silentLogger).startsWith('You are Nova, a peer.\n\n## How you work')).toBe(true);
  });

  it('composes the installed files in order, system prompt first, with operator comments removed', () => {
    const home = tempHome();
    installConfigHome({ configHome: home, version: '1', logger: silentLogger });
    write(home, 'prompts/system-prompt.md', '<!-- note to self: be nicer -->\nYou are Ada.\n<!--\nmulti\nline\n-->\nYou like tea.\n');
    write(home, 'prompts/initialize.md', 'Rule one.\n<!-- secret operator note -->\n');
    const charter = composeCharter(home);
    expect(charter.fallback).toBe(false);
    expect(charter.text).toBe('You are Ada.\n\nYou like tea.\n\nRule one.');
    expect(charter.systemPrompt).toBe('You are Ada.\n\nYou like tea.');
    expect(charter.initialize).toBe('Rule one.');
  });

  it('respects a deleted prompt in an installed home, and warns about it', () => {
    const home = tempHome();
    installConfigHome({ configHome: home, version: '1', logger: silentLogger });
    fs.rmSync(path.join(home, 'prompts/initialize.md'));
    const logger = createMemoryLogger();
    const charter = composeCharter(home, { logger });
    expect(charter.missing).toEqual(['prompts/initialize.md']);
    expect(charter.fallback).toBe(false);
    expect(charter.initialize).toBe('');
    expect(charter.text).toBe(charter.systemPrompt);
    expect(logger.lines.join('\n')).toMatch(/WARNING charter_part_missing file=prompts\/initialize.md/);
  });
});
