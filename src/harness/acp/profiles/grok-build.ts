import { createCredentialRequestTransformation } from '../credential-proxy.ts';
import type { ACPSettings } from '../settings.ts';

/**
 * Grok Build (`grok agent stdio`). It advertises no session modes for permissions, so the
 * adapter applies permissionMode by tool kind. Instructions go to $HOME/.grok/AGENTS.md.
 */
export const grokBuildProfile = {
  harnessId: 'acp-grok-build',
  source: { type: 'npm-simple', packageName: '@xai-official/grok', packageVersion: '1.0.41' },
  executable: 'grok',
  args: ['agent', 'stdio'],
  modelMapping: { type: 'session-model', path: 'modelId' },
  forwardEnv: ['GROK_XAI_API_BASE_URL'],
  credentialEnv: ['XAI_API_KEY'],
  credentialBrokering: ({ env, sandboxEnv }) => {
    if (!env.XAI_API_KEY || !sandboxEnv.XAI_API_KEY) return [];
    return [
      createCredentialRequestTransformation({
        matchUrl: env.GROK_XAI_API_BASE_URL ?? 'https://api.x.ai/v1',
        matchHeaders: { Authorization: `Bearer ${sandboxEnv.XAI_API_KEY}` },
        transformHeaders: { Authorization: `Bearer ${env.XAI_API_KEY}` },
        baseUrlEnv: 'GROK_XAI_API_BASE_URL',
      }),
    ];
  },
  instructionMapping: { type: 'filesystem', path: '.grok/AGENTS.md' },
  outputSchemaMapping: { type: 'session-prompt-meta', path: ['outputSchema'] },
  providerAuthentication: {
    gateway: {
      env: {
        GROK_CLIENT_NAME: { $source: 'client-app-name' },
        GROK_CLIENT_VERSION: { $source: 'client-app-version' },
        XAI_API_KEY: { $source: 'gateway-api-key' },
        GROK_XAI_API_BASE_URL: { $source: 'gateway-base-url', ensureSuffix: '/v1' },
        GROK_MODELS_BASE_URL: { $source: 'gateway-base-url', ensureSuffix: '/v1' },
      },
    },
  },
} satisfies ACPSettings;
