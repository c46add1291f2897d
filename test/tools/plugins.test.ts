// Drop-in tool plugins (src/tools/plugins.ts): real module files in real temp folders, imported by
// Node as a run imports them, registered through the real ToolRegistry and Policy.
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Policy } from '../../src/tools/policy.ts';
import { loadToolPlugins, readProviderAffinity, registerPluginTools, type PluginOrigin } from '../../src/tools/plugins.ts';
import { ToolRegistry } from '../../src/tools/registry.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { removeTempDirs, tempDir, toolContext } from './helpers.ts';

afterAll(removeTempDirs);

// The installed AI SDK, by absolute URL: a plugin in a temp folder has no node_modules to resolve `ai` from.
const AI = import.meta.resolve('ai');

const GREET = `export default {
  name: 'greet', description: 'Greets someone by name.', kind: 'read', effect: 'read-only', capabilityScopes: [],
  inputSchema: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] },
  execute: ({ who }) => 'Hello, ' + who + '!',
};\n`;

function folder(files: Record<string, string>): string {
  const dir = tempDir('acx-plugins-');
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

async function loadInto(registry: ToolRegistry, dirs: Array<{ dir: string; origin?: PluginOrigin; shipped?: Set<string> }>, provider: string | null = 'openai') {
  const logger = createMemoryLogger();
  const load = await loadToolPlugins(dirs.map(({ dir, origin, shipped }) => ({ dir, origin: origin ?? 'config-home', ...(shipped ? { shipped } : {}) })), { provider, logger });
  const registered = registerPluginTools(registry, load, logger);
  return { ...registered, lines: logger.lines };
}

describe('tool plugins', () => {
  it('loads the default export — an acx tool, an array of acx tools, a .ts module, an object of AI SDK tools — and the tools run', async () => {
    const dir = folder({
      'greet.mjs': GREET,
      'pair.mjs': `export default [
        { name: 'upper', description: 'Upper-cases text.', kind: 'read', effect: 'read-only', capabilityScopes: [], inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, execute: ({ text }) => text.toUpperCase() },
        { name: 'lower', description: 'Lower-cases text.', kind: 'read', effect: 'read-only', capabilityScopes: [], inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, execute: ({ text }) => text.toLowerCase() },
      ];\n`,
      'typed.ts': `const add = { name: 'add', description: 'Adds two numbers.', kind: 'read' as const, effect: 'read-only' as const, capabilityScopes: [] as string[],
        inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
        execute: ({ a, b }: { a: number; b: number }): string => String(a + b) };
      export default add;\n`,
      'sdk.mjs': `import { tool, jsonSchema } from ${JSON.stringify(AI)};
      export default { weather: tool({ description: 'The weather in a city.', inputSchema: jsonSchema({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }), execute: async ({ city }) => 'Sunny in ' + city }) };\n`,
      'grant.enabled': '',
      'notes.txt': 'not a plugin',
    });
    const registry = new ToolRegistry({ policy: Policy.locked() });
    const { skipped, defects, lines } = await loadInto(registry, [{ dir }]);
    expect(skipped).toEqual([]);
    expect(defects).toEqual([]);
    expect(lines.filter((line) => /WARNING|ERROR/.test(line))).toEqual([]);
    // Files in name order, each file's tools in its own order.
    expect(registry.names()).toEqual(['greet', 'upper', 'lower', 'weather', 'add']);
    expect((await registry.run('greet', { who: 'Ada' }, toolContext())).output).toBe('Hello, Ada!');
    expect((await registry.run('upper', { text: 'abc' }, toolContext())).output).toBe('ABC');
    expect((await registry.run('add', { a: 2, b: 3 }, toolContext())).output).toBe('5');
    expect((await registry.run('weather', { city: 'Oslo' }, toolContext())).output).toBe('Sunny in Oslo');
    // The AI SDK tool gets the safe default: kind other, effect unsafe, no scopes.
    expect(registry.describe().tools.find((tool) => tool.name === 'weather')).toEqual({ name: 'weather', kind: 'other', effect: 'unsafe', capabilityScopes: [] });
    // Arguments are validated against the plugin's schema before it runs.
    expect((await registry.run('greet', {}, toolContext())).ok).toBe(false);
  });

  it('an edited plugin is imported afresh by the next load in the same process', async () => {
    const dir = folder({ 'greet.mjs': GREET });
    const first = new ToolRegistry();
    await loadInto(first, [{ dir }]);
    writeFileSync(join(dir, 'greet.mjs'), GREET.replace("'Hello, '", "'Good evening, '"));
    const second = new ToolRegistry();
    await loadInto(second, [{ dir }]);
    expect((await first.run('greet', { who: 'Ada' }, toolContext())).output).toBe('Hello, Ada!');
    expect((await second.run('greet', { who: 'Ada' }, toolContext())).output).toBe('Good evening, Ada!');
  });

  it('refuses a plugin tool asking for a capability the locked policy denies, with the reason, and loads it when unlocked', async () => {
    const dir = folder({
      'host.mjs': `export default { name: 'host_run', description: 'Runs a command on the host.', kind: 'execute', effect: 'unsafe', capabilityScopes: ['exec'], requires: ['host-shell'], inputSchema: { type: 'object' }, execute: () => 'ran' };\n`,
      'greet.mjs': GREET,
    });
    const locked = new ToolRegistry({ policy: Policy.locked({ isRoot: () => false }) });
    const refused = await loadInto(locked, [{ dir }]);
    expect(locked.names()).toEqual(['greet']);
    expect(refused.skipped).toEqual([
      {
        name: 'host_run',
        reason: `${join(dir, 'host.mjs')}: it needs an unsandboxed shell on the host (host-shell), which the locked profile refuses (select the unlocked profile: ACX_PROFILE=unlocked or Policy.unlocked())`,
      },
    ]);
    const unlocked = new ToolRegistry({ policy: Policy.unlocked({ isRoot: () => false }) });
    expect((await loadInto(unlocked, [{ dir }])).skipped).toEqual([]);
    expect(unlocked.names()).toEqual(['greet', 'host_run']);
  });

  it('soft-skips each broken drop-in with a WARNING naming the file and the reason; the others still load', async () => {
    const dir = folder({
      'a-syntax.mjs': 'export default {\n',
      'b-throws.mjs': "throw new Error('the vendor SDK is not installed');\n",
      'c-empty.mjs': 'export const helper = 1;\n',
      'd-bad-scope.mjs': `export default { name: 'odd', description: 'Odd.', kind: 'read', effect: 'read-only', capabilityScopes: ['root'], inputSchema: { type: 'object' } };\n`,
      'e-not-a-tool.mjs': 'export default 42;\n',
      'greet.mjs': GREET,
    });
    const registry = new ToolRegistry({ policy: Policy.locked() });
    const { skipped, defects, lines } = await loadInto(registry, [{ dir }]);
    expect(registry.names()).toEqual(['greet']);
    expect(defects).toEqual([]);
    const file = (name: string) => join(dir, name);
    expect(skipped.map((entry) => entry.name)).toEqual(['plugin:a-syntax.mjs', 'plugin:b-throws.mjs', 'plugin:c-empty.mjs', 'plugin:e-not-a-tool.mjs', 'odd']);
    // Node says SyntaxError; under vitest its module runner parses first (the e2e sees Node's own words).
    expect(skipped[0]!.reason).toMatch(new RegExp(`^${escape(file('a-syntax.mjs'))}: importing it failed \\(.*[Ss]yntax`));
    expect(skipped[1]!.reason).toBe(`${file('b-throws.mjs')}: importing it failed (Error: the vendor SDK is not installed)`);
    expect(skipped[2]!.reason).toBe(
      `${file('c-empty.mjs')}: it exports nothing usable (no default export); give a default export: a tool, an array of acx tools, or an object of named tools ({ name: tool })`,
    );
    expect(skipped[3]!.reason).toMatch(/: its default export is a number, not a tool;/);
    expect(skipped[4]!.reason).toBe(`${file('d-bad-scope.mjs')}: its tool "odd" is malformed: Tool "odd" declares unknown capability scope(s): root.`);
    const warnings = lines.filter((line) => line.startsWith('WARNING tool plugin skipped'));
    expect(warnings).toHaveLength(5);
    expect(warnings[1]).toBe(`WARNING tool plugin skipped file=${file('b-throws.mjs')} reason="importing it failed (Error: the vendor SDK is not installed)"`);
    expect(lines.some((line) => line.startsWith('ERROR'))).toBe(false);
  });

  it('reads provider affinity without importing: a module that throws on import is skipped quietly for another provider', async () => {
    const dir = folder({
      'grok-only.mjs': "// acx-provider: xai\n// Imports a vendor SDK this machine lacks.\nthrow new Error('imported grok-only.mjs');\n",
      'greet.mjs': GREET,
    });
    const openai = new ToolRegistry();
    const forOpenai = await loadInto(openai, [{ dir }], 'openai');
    expect(openai.names()).toEqual(['greet']);
    expect(forOpenai.skipped).toEqual([
      { name: 'plugin:grok-only.mjs', reason: `${join(dir, 'grok-only.mjs')}: it is for xai only (acx-provider header), and this agent's provider is openai; not imported` },
    ]);
    expect(forOpenai.lines.filter((line) => /WARNING|ERROR/.test(line))).toEqual([]);
    // No model selected: an affinity-tagged plugin is not imported either.
    expect((await loadInto(new ToolRegistry(), [{ dir }], null)).skipped[0]!.reason).toMatch(/provider is not selected; not imported$/);
    // For its own provider it is imported (and this one throws, which proves the skip above never imported it).
    const forXai = await loadInto(new ToolRegistry(), [{ dir }], 'xai');
    expect(forXai.skipped).toEqual([{ name: 'plugin:grok-only.mjs', reason: `${join(dir, 'grok-only.mjs')}: importing it failed (Error: imported grok-only.mjs)` }]);
  });

  it('parses the affinity header only from the leading comments', () => {
    expect(readProviderAffinity('// acx-provider: openai\nexport default {}')).toEqual(['openai']);
    expect(readProviderAffinity('#!/usr/bin/env node\n/* A plugin.\n * acx-provider: OpenAI, xai\n */\nexport default {}')).toEqual(['openai', 'xai']);
    expect(readProviderAffinity('/* acx-provider: xai */\n')).toEqual(['xai']);
    expect(readProviderAffinity("export default {}\n// acx-provider: xai\n")).toBeNull();
    expect(readProviderAffinity("const s = '// acx-provider: xai';\n")).toBeNull();
    expect(readProviderAffinity('// a plugin for everyone\nexport default {}')).toBeNull();
  });

  it('refuses a symbolic link out of the tools/ folder, and follows one that stays inside', async () => {
    const outside = folder({ 'evil.mjs': GREET.replace("'greet'", "'evil'") });
    const dir = folder({});
    mkdirSync(join(dir, 'lib'));
    writeFileSync(join(dir, 'lib', 'greet.mjs'), GREET);
    symlinkSync(join(outside, 'evil.mjs'), join(dir, 'evil.mjs'));
    symlinkSync(join(dir, 'lib', 'greet.mjs'), join(dir, 'greet.mjs'));
    const registry = new ToolRegistry();
    const { skipped, lines } = await loadInto(registry, [{ dir }]);
    expect(registry.names()).toEqual(['greet']);
    expect(skipped).toEqual([
      {
        name: 'plugin:evil.mjs',
        reason: `${join(dir, 'evil.mjs')}: it is a symbolic link to ${join(outside, 'evil.mjs')}, outside ${dir}; plugins load only from the tools/ folders themselves`,
      },
    ]);
    expect(lines.some((line) => line.startsWith('WARNING tool plugin skipped') && line.includes('evil.mjs'))).toBe(true);
  });

  it('a broken shipped plugin is an ERROR and a "Tool defect" line for the brief; a later plugin cannot take a loaded name', async () => {
    // The config home holds a default the installer laid down (stale.mjs) beside the operator's own.
    const home = folder({ 'stale.mjs': "import './gone.mjs';\nexport default [];\n", 'greet.mjs': GREET, 'user-broken.mjs': "import './gone.mjs';\n" });
    const again = folder({ 'greet.mjs': GREET });
    const registry = new ToolRegistry();
    const { skipped, defects, lines } = await loadInto(registry, [
      { dir: home, origin: 'config-home', shipped: new Set(['stale.mjs']) },
      { dir: again, origin: 'agent' },
    ]);
    expect(registry.names()).toEqual(['greet']);
    expect(defects).toHaveLength(1);
    expect(defects[0]).toMatch(/^Tool defect: the tool plugin stale\.mjs that acx ships did not load \(importing it failed \(Error: Cannot find module .*gone\.mjs/);
    expect(lines.filter((line) => line.startsWith('ERROR tool defect'))).toHaveLength(1);
    // The operator's own broken file and the duplicate are warnings, not defects.
    expect(lines.filter((line) => line.startsWith('WARNING tool plugin skipped')).map((line) => /file=(\S+)/.exec(line)![1])).toEqual([join(home, 'user-broken.mjs'), join(again, 'greet.mjs')]);
    expect(skipped.map((entry) => entry.name)).toEqual(['plugin:stale.mjs', 'plugin:user-broken.mjs', 'greet']);
    expect(skipped[2]!.reason).toBe(`${join(again, 'greet.mjs')}: its tool "greet" is malformed: A tool named "greet" is already registered.`);
  });
});

describe('a plugin someone other than acx\'s user (or root) could have written is never imported', () => {
  /** A plugin whose top-level code leaves a marker file: proof that it was imported at all. */
  function marking(marker: string): string {
    return `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(marker)}, 'imported');\n${GREET}`;
  }

  it('a group-writable file is refused with a WARNING naming it and the fix, before its top-level code runs', async () => {
    const marker = join(tempDir('acx-plugins-marker-'), 'imported');
    const dir = folder({ 'greet.mjs': marking(marker) });
    const file = join(dir, 'greet.mjs');
    chmodSync(file, 0o664);
    const registry = new ToolRegistry();
    const { skipped, lines } = await loadInto(registry, [{ dir, origin: 'agent' }]);
    const reason = `not loaded: it is writable by group (mode 0664), so someone else could change the code acx runs (fix: chmod go-w ${file})`;
    expect(skipped).toEqual([{ name: 'plugin:greet.mjs', reason: `${file}: ${reason}` }]);
    expect(lines).toContain(`WARNING tool plugin skipped file=${file} reason="${reason}"`);
    expect(registry.names()).toEqual([]);
    expect(existsSync(marker)).toBe(false);

    // The fix the warning names is all it takes.
    chmodSync(file, 0o644);
    const fixed = new ToolRegistry();
    expect((await loadInto(fixed, [{ dir, origin: 'agent' }])).skipped).toEqual([]);
    expect(fixed.names()).toEqual(['greet']);
    expect(readFileSync(marker, 'utf8')).toBe('imported');
  });

  it('a file in a folder others may write is refused, and so is a link to a file in such a folder', async () => {
    const marker = join(tempDir('acx-plugins-marker-'), 'imported');
    const open = folder({ 'greet.mjs': marking(marker) });
    chmodSync(open, 0o757);
    const registry = new ToolRegistry();
    const { skipped } = await loadInto(registry, [{ dir: open }]);
    expect(skipped).toEqual([
      {
        name: 'plugin:greet.mjs',
        reason: `${join(open, 'greet.mjs')}: not loaded: its directory ${open} is writable by others (mode 0757), so someone else could change the code acx runs (fix: chmod go-w ${open})`,
      },
    ]);
    // tools/greet.mjs -> tools/lib/greet.mjs, where lib/ is writable by everyone: the file Node would import is judged.
    const dir = folder({});
    mkdirSync(join(dir, 'lib'));
    writeFileSync(join(dir, 'lib', 'greet.mjs'), marking(marker));
    chmodSync(join(dir, 'lib'), 0o777);
    symlinkSync(join(dir, 'lib', 'greet.mjs'), join(dir, 'greet.mjs'));
    const viaLink = await loadInto(registry, [{ dir }]);
    expect(viaLink.skipped.map((entry) => entry.reason)).toEqual([
      `${join(dir, 'greet.mjs')}: not loaded: its directory ${join(dir, 'lib')} is writable by group and others (mode 0777), so someone else could change the code acx runs (fix: chmod go-w ${join(dir, 'lib')})`,
    ]);
    expect(registry.names()).toEqual([]);
    expect(existsSync(marker)).toBe(false);
  });

  it.skipIf(process.geteuid?.() !== 0)('a file owned by another user is refused (root only: only root can give a file away)', async () => {
    const marker = join(tempDir('acx-plugins-marker-'), 'imported');
    const dir = folder({ 'greet.mjs': marking(marker) });
    const file = join(dir, 'greet.mjs');
    chownSync(file, 65534, 65534);
    const { skipped } = await loadInto(new ToolRegistry(), [{ dir }]);
    expect(skipped).toEqual([
      {
        name: 'plugin:greet.mjs',
        reason: `${file}: not loaded: it is owned by uid 65534, not by the user acx runs as (uid 0) or root; only they may hold code acx runs (fix: chown 0 ${file})`,
      },
    ]);
    expect(existsSync(marker)).toBe(false);
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
