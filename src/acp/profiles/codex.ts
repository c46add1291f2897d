import { createCredentialRequestTransformation } from '../credential-proxy.ts';
import type { ACPPermissionModeMapping, ACPSettings } from '../settings.ts';

/**
 * Codex through `@zed-industries/codex-acp` (a native binary). Codex speaks only the OpenAI
 * Responses API; acx writes `$CODEX_HOME/config.toml` with a model provider whose base_url is
 * OPENAI_BASE_URL (default https://api.openai.com/v1, must end in /v1), env_key the credential
 * variable and wire_api "responses". Codex's own sandbox must not run inside acx's sandbox, so
 * only permissionMode 'allow-all' (its full-access mode) is supported. With AI Gateway selected,
 * the provider is the Gateway's OpenAI-compatible endpoint (`<base>/v1`), the key the Gateway key
 * (brokered like any other), and requests carry the client attribution as `x-client-app`.
 */
function tomlString(value: string): string {
  return JSON.stringify(value); // a TOML basic string is a JSON string for these characters
}

export const codexProfile = {
  harnessId: 'acp-codex',
  source: { type: 'npm-simple', packageName: '@zed-industries/codex-acp', packageVersion: '0.16.0' },
  executable: 'codex-acp',
  modelMapping: { type: 'session-config-option', path: 'model' },
  forwardEnv: ['OPENAI_BASE_URL', 'CODEX_MODEL'],
  credentialEnv: ['CODEX_API_KEY', 'OPENAI_API_KEY'],
  credentialBrokering: ({ env, sandboxEnv }) => {
    const name = env.CODEX_API_KEY ? 'CODEX_API_KEY' : 'OPENAI_API_KEY';
    const real = env[name];
    const placeholder = sandboxEnv[name];
    if (!real || !placeholder) return [];
    return [
      createCredentialRequestTransformation({
        matchUrl: env.OPENAI_BASE_URL ?? 'https://api.openai.com/v1',
        matchHeaders: { Authorization: `Bearer ${placeholder}` },
        transformHeaders: { Authorization: `Bearer ${real}` },
        baseUrlEnv: 'OPENAI_BASE_URL',
      }),
    ];
  },
  homeFiles: ({ env }) => {
    const keyName = env.CODEX_API_KEY ? 'CODEX_API_KEY' : 'OPENAI_API_KEY';
    const base = env.OPENAI_BASE_URL ?? 'https://api.openai.com/v1';
    const lines = [
      ...(env.CODEX_MODEL ? [`model = ${tomlString(env.CODEX_MODEL)}`] : []),
      'model_provider = "acx"',
      'check_for_update_on_startup = false',
      '',
      '[model_providers.acx]',
      'name = "acx"',
      `base_url = ${tomlString(base)}`,
      `env_key = ${tomlString(keyName)}`,
      'wire_api = "responses"',
      'request_max_retries = 0',
      'stream_max_retries = 0',
      ...(env.CODEX_CLIENT_APP ? [`http_headers = { "x-client-app" = ${tomlString(env.CODEX_CLIENT_APP)} }`] : []),
      '',
    ];
    return { '.codex/config.toml': lines.join('\n') };
  },
  instructionMapping: { type: 'filesystem', path: '.codex/AGENTS.md' },
  permissionModeMapping: {
    'allow-reads': null,
    'allow-edits': null,
    'allow-all': { type: 'session-mode', modeId: 'full-access' },
  } satisfies ACPPermissionModeMapping,
  providerAuthentication: {
    gateway: {
      env: {
        CODEX_API_KEY: { $source: 'gateway-api-key' },
        OPENAI_BASE_URL: { $source: 'gateway-base-url', ensureSuffix: '/v1' },
        CODEX_CLIENT_APP: { $source: 'client-app' },
      },
    },
  },
} satisfies ACPSettings;
