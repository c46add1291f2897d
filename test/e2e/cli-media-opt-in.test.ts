import { describe, expect, it } from 'vitest';
import { cleanEnv, runAcx, tempDir } from '../support/cli.ts';
import { scaled } from '../support/time-scale.ts';

/**
 * The capability rule for the media tools, read off `acx resolved-config` (the same assembly a
 * run uses): off by default on every provider; granted, a tool is active only on the provider
 * that runs it, and a granted tool the provider cannot run is listed under skipped with why.
 */
const MEDIA = ['generate_image', 'edit_image', 'listen', 'grok_generate_image', 'grok_edit_image', 'grok_generate_video'];
const PROVIDERS = ['openai:gpt-5.4-mini', 'xai:grok-4', 'anthropic:claude-sonnet-4-5', 'openrouter:z-ai/glm-5.2', 'google:gemini-2.5-flash', 'ollama:llava'];

interface Resolved {
  tools: string[];
  skipped: Array<{ name: string; reason: string }>;
  opt_in_tools: string[];
}

async function resolved(home: string, model: string): Promise<Resolved> {
  const run = await runAcx(['resolved-config', '--model', model], { home, env: cleanEnv() });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as Resolved;
}

describe('media tools are opt-in on every provider; the provider decides only availability', { timeout: scaled(120_000) }, () => {
  it.concurrent('a default config has no media tool, whatever the provider', async () => {
    const home = tempDir('acx-media-optin-');
    for (const model of PROVIDERS) {
      const config = await resolved(home, model);
      expect(config.tools.filter((name) => MEDIA.includes(name)), model).toEqual([]);
      expect(config.opt_in_tools, model).toEqual([]);
    }
  });

  it.concurrent('granted, each tool is active only on its provider; elsewhere it is skipped with the provider it needs', async () => {
    const home = tempDir('acx-media-optin-');
    const install = await runAcx(['install', '--opt-in', 'generate_image,edit_image,hear_audio', '--opt-in', 'grok_generate_image,grok_edit_image,grok_generate_video'], { home, env: cleanEnv() });
    expect(install.status, install.stderr).toBe(0);
    expect(install.stdout).toContain('OPT-IN GRANTED: grok_generate_video');

    const openai = await resolved(home, 'openai:gpt-5.4-mini');
    expect(openai.tools.filter((name) => MEDIA.includes(name)).sort()).toEqual(['edit_image', 'generate_image', 'listen']);
    expect(openai.opt_in_tools).toEqual(['edit_image', 'generate_image', 'hear_audio']);
    expect(openai.skipped).toContainEqual({ name: 'grok_generate_video', reason: "it needs the xai provider and this agent's model runs on openai" });

    const xai = await resolved(home, 'xai:grok-4');
    expect(xai.tools.filter((name) => MEDIA.includes(name)).sort()).toEqual(['grok_edit_image', 'grok_generate_image', 'grok_generate_video']);
    expect(xai.opt_in_tools).toEqual(['grok_edit_image', 'grok_generate_image', 'grok_generate_video']);
    expect(xai.skipped).toContainEqual({ name: 'listen', reason: "it needs the openai provider and this agent's model runs on xai" });

    const anthropic = await resolved(home, 'anthropic:claude-sonnet-4-5');
    expect(anthropic.tools.filter((name) => MEDIA.includes(name))).toEqual([]);
    expect(anthropic.skipped.filter((entry) => MEDIA.includes(entry.name)).map((entry) => entry.name).sort()).toEqual([...MEDIA].sort());
  });
});
