// The provider-aware install: tools/ plugin defaults are laid down only for the agent's provider
// (their `// acx-provider:` header, read as text), and an untouched one for another provider is
// pruned. acx ships no plugin today, so these defaults are injected, as the other install tests do.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatInstallSummary, runInstall } from '../../src/frontends/cli/commands/install.ts';
import { installConfigHome, reconcileIfUpgraded } from '../../src/app/install.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { exists, read, tempHome, write } from '../support/config-home.ts';

const DEFAULTS = {
  'prompts/system-prompt.md': 'You are an agent.\n',
  'tools/everyone.mjs': 'export default [];\n',
  'tools/grok_video.mjs': "// acx-provider: xai\nimport 'xai-only-sdk';\nexport default [];\n",
  'tools/image.mjs': '/* acx-provider: openai */\nexport default [];\n',
};

const manifestFiles = (home: string) => Object.keys(JSON.parse(read(home, '.manifest.json')).files as Record<string, string>).sort();
const tools = (home: string) => fs.readdirSync(path.join(home, 'tools')).sort();

describe('provider-aware install of tool plugin defaults', () => {
  it("lays down only the agent's provider's plugin defaults, and all of them with allProviders or no provider known", () => {
    const openai = tempHome();
    const summary = installConfigHome({ configHome: openai, version: '1.0.0', logger: silentLogger, defaults: DEFAULTS, provider: 'openai' });
    expect(tools(openai)).toEqual(['everyone.mjs', 'image.mjs']);
    expect(summary.otherProvider).toEqual(['tools/grok_video.mjs']);
    expect(summary.pruned).toEqual([]);
    expect(manifestFiles(openai)).toEqual(['prompts/system-prompt.md', 'tools/everyone.mjs', 'tools/image.mjs']);
    expect(formatInstallSummary(summary)).toMatch(/^other-provider skipped: tools\/grok_video\.mjs$/m);

    const all = tempHome();
    expect(installConfigHome({ configHome: all, version: '1.0.0', logger: silentLogger, defaults: DEFAULTS, provider: 'openai', allProviders: true }).otherProvider).toEqual([]);
    expect(tools(all)).toEqual(['everyone.mjs', 'grok_video.mjs', 'image.mjs']);
    const unknown = tempHome();
    installConfigHome({ configHome: unknown, version: '1.0.0', logger: silentLogger, defaults: DEFAULTS });
    expect(tools(unknown)).toEqual(['everyone.mjs', 'grok_video.mjs', 'image.mjs']);
  });

  it('prunes an untouched default for another provider that an earlier install left, and keeps an edited one', () => {
    const home = tempHome();
    installConfigHome({ configHome: home, version: '1.0.0', logger: silentLogger, defaults: DEFAULTS, allProviders: true });
    write(home, 'tools/image.mjs', '/* acx-provider: openai */\n// my tweak\nexport default [];\n');
    const summary = installConfigHome({ configHome: home, version: '1.0.0', logger: silentLogger, defaults: DEFAULTS, provider: 'xai' });
    expect(summary.pruned).toEqual([]);
    expect(summary.otherProvider).toEqual(['tools/image.mjs']);
    expect(read(home, 'tools/image.mjs')).toContain('my tweak');
    expect(exists(home, 'tools/image.mjs.new')).toBe(false);

    const toOpenai = installConfigHome({ configHome: home, version: '1.0.0', logger: silentLogger, defaults: DEFAULTS, provider: 'openai' });
    expect(toOpenai.pruned).toEqual(['tools/grok_video.mjs']);
    expect(exists(home, 'tools/grok_video.mjs')).toBe(false);
    // Pruned by acx, not deleted by the operator: a later xai install lays it down again.
    expect(manifestFiles(home)).not.toContain('tools/grok_video.mjs');
    expect(formatInstallSummary(toOpenai)).toMatch(/^other-provider pruned: {2}tools\/grok_video\.mjs$/m);
    installConfigHome({ configHome: home, version: '1.0.0', logger: silentLogger, defaults: DEFAULTS, provider: 'xai' });
    expect(read(home, 'tools/grok_video.mjs')).toBe(DEFAULTS['tools/grok_video.mjs']);
  });

  it('acx install takes the provider from --provider, else from ACX_MODEL; the upgrade reconcile from the run', () => {
    const byEnv = tempHome();
    runInstall({ configHome: byEnv, env: { ACX_MODEL: 'xai:grok-4' }, logger: silentLogger, version: '1.0.0', defaults: DEFAULTS });
    expect(tools(byEnv)).toEqual(['everyone.mjs', 'grok_video.mjs']);
    const byFlag = tempHome();
    runInstall({ configHome: byFlag, env: { ACX_MODEL: 'xai:grok-4' }, provider: 'openai', logger: silentLogger, version: '1.0.0', defaults: DEFAULTS });
    expect(tools(byFlag)).toEqual(['everyone.mjs', 'image.mjs']);

    installConfigHome({ configHome: byEnv, version: '0.9.0', logger: silentLogger, defaults: DEFAULTS, allProviders: true });
    const reconciled = reconcileIfUpgraded({ configHome: byEnv, version: '1.0.0', logger: silentLogger, defaults: DEFAULTS, provider: 'xai' });
    expect(reconciled?.pruned).toEqual(['tools/image.mjs']);
  });
});
