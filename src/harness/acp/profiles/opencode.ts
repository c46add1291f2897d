import { createCredentialRequestTransformation } from '../credential-proxy.ts';
import type { ACPSettings } from '../settings.ts';

/**
 * OpenCode (`opencode acp`) against any OpenAI-compatible Chat Completions endpoint: acx writes
 * $XDG_CONFIG_HOME/opencode/opencode.json with an `@ai-sdk/openai-compatible` provider named
 * `acx` (baseURL from OPENCODE_BASE_URL, key from OPENCODE_API_KEY). Point OPENCODE_CONFIG at
 * your own file instead through forwardEnv if you need more. OpenCode only selects a model its
 * provider lists, as `acx/<id>`: the default (OPENCODE_MODEL) and the one asked for are listed.
 */
const PROVIDER = 'acx';
export const opencodeProfile = {
  harnessId: 'acp-opencode',
  source: { type: 'npm-simple', packageName: 'opencode-ai', packageVersion: '1.18.33' },
  executable: 'opencode',
  args: ['acp'],
  modelMapping: { type: 'session-model', path: 'modelId', prefix: `${PROVIDER}/` },
  forwardEnv: ['OPENCODE_BASE_URL', 'OPENCODE_MODEL'],
  credentialEnv: ['OPENCODE_API_KEY'],
  credentialBrokering: ({ env, sandboxEnv }) => {
    if (!env.OPENCODE_API_KEY || !sandboxEnv.OPENCODE_API_KEY || !env.OPENCODE_BASE_URL) return [];
    return [
      createCredentialRequestTransformation({
        matchUrl: env.OPENCODE_BASE_URL,
        matchHeaders: { Authorization: `Bearer ${sandboxEnv.OPENCODE_API_KEY}` },
        transformHeaders: { Authorization: `Bearer ${env.OPENCODE_API_KEY}` },
        baseUrlEnv: 'OPENCODE_BASE_URL',
      }),
    ];
  },
  homeFiles: ({ env, model: asked }) => {
    const model = env.OPENCODE_MODEL ?? 'default';
    const models = [model, ...(asked ? [asked.startsWith(`${PROVIDER}/`) ? asked.slice(PROVIDER.length + 1) : asked] : [])];
    const config = {
      $schema: 'https://opencode.ai/config.json',
      autoupdate: false,
      share: 'disabled',
      model: `${PROVIDER}/${model}`,
      provider: {
        [PROVIDER]: {
          npm: '@ai-sdk/openai-compatible',
          name: PROVIDER,
          options: { baseURL: env.OPENCODE_BASE_URL ?? 'http://127.0.0.1:1/v1', apiKey: '{env:OPENCODE_API_KEY}' },
          models: Object.fromEntries(models.map((id) => [id, { name: id }])),
        },
      },
    };
    return { '.config/opencode/opencode.json': JSON.stringify(config, null, 2) };
  },
  env: { OPENCODE_DISABLE_AUTOUPDATE: 'true' },
  instructionMapping: { type: 'filesystem', path: '.config/opencode/AGENTS.md' },
} satisfies ACPSettings;
