import { createCredentialRequestTransformation } from '../credential-proxy.ts';
import type { ACPSettings } from '../settings.ts';

/**
 * Gemini CLI (`gemini --acp`). Reads GEMINI_API_KEY and GOOGLE_GEMINI_BASE_URL; trusts the
 * (empty, per-session) workspace with GEMINI_CLI_TRUST_WORKSPACE=true. Sends the key in the
 * x-goog-api-key header. Permission modes are applied by tool kind (no mapping).
 */
export const geminiCliProfile = {
  harnessId: 'acp-gemini-cli',
  source: { type: 'npm-simple', packageName: '@google/gemini-cli', packageVersion: '0.61.0' },
  executable: 'gemini',
  args: ['--acp'],
  modelMapping: { type: 'session-model', path: 'modelId' },
  skillsDirectory: '.gemini/skills',
  forwardEnv: ['GOOGLE_GEMINI_BASE_URL'],
  credentialEnv: ['GEMINI_API_KEY'],
  credentialBrokering: ({ env, sandboxEnv }) => {
    if (!env.GEMINI_API_KEY || !sandboxEnv.GEMINI_API_KEY) return [];
    return [
      createCredentialRequestTransformation({
        matchUrl: env.GOOGLE_GEMINI_BASE_URL ?? 'https://generativelanguage.googleapis.com',
        matchHeaders: { 'x-goog-api-key': sandboxEnv.GEMINI_API_KEY },
        transformHeaders: { 'x-goog-api-key': env.GEMINI_API_KEY },
        baseUrlEnv: 'GOOGLE_GEMINI_BASE_URL',
      }),
    ];
  },
  env: { GEMINI_CLI_TRUST_WORKSPACE: 'true' },
  instructionMapping: { type: 'filesystem', path: '.gemini/GEMINI.md' },
} satisfies ACPSettings;
