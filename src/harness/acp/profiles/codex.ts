import { createCredentialRequestTransformation } from '../credential-proxy.ts';
import type { ACPPermissionModeMapping, ACPSettings } from '../settings.ts';

function tomlString(value: string): string {
  return JSON.stringify(value); // a TOML basic string is a JSON string for these characters
}

/**
 * Codex through `@zed-industries/codex-acp` (a native binary). Codex speaks only the OpenAI
 * Responses API; acx writes `$CODEX_HOME/config.toml` with a model provider whose base_url is
 * OPENAI_BASE_URL (default https://api.openai.com/v1, must end in /v1), env_key the credential
 * variable and wire_api "responses". Codex's own sandbox must not run inside acx's sandbox, so
 * only permissionMode 'allow-all' (its full-access mode) is supported. With AI Gateway selected,
 * the provider is the Gateway's OpenAI-compatible endpoint (`<base>/v1`), the key the Gateway key
 * (brokered like any other), and requests carry the client attribution as `x-client-app`.
 *
 * Deviations from the seed's Codex profile, and why:
 * - Package: the seed's `@agentclientprotocol/codex-acp@1.1.4` (a Node server over the
 *   `@openai/codex` app server) was tried here with the seed's settings (CODEX_CONFIG
 *   `developer_instructions`, `agent-full-access`, methodId 'api-key'): it installs, brokers the
 *   key and carries the instructions, but the real-agent suite's host-tool turn (no MCP call
 *   reached acx) and its cancel test (the held step is never the agent's own) fail with it.
 *   Until those are worked through, the verified `@zed-industries/codex-acp` binary stays.
 * - So its settings stay too: instructions in `$CODEX_HOME/AGENTS.md` (Codex reads it; no
 *   CODEX_CONFIG reading of this binary was verified), its mode id `full-access` (its name for
 *   the seed's `agent-full-access`), and no `authenticate` call (it picks the key up from env_key).
 * - Endpoint and attribution: config.toml instead of a CODEX_CONFIG provider, so OPENAI_BASE_URL
 *   (what the broker routes) works without the user writing JSON; with AI Gateway the attribution
 *   goes out as `x-client-app` only (config.toml's http_headers), not also as User-Agent, which
 *   Codex sets itself.
 */
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
