import { createCredentialRequestTransformation, type CredentialRequestTransformation } from '../credential-proxy.ts';
import type { ACPPermissionModeMapping, ACPSettings } from '../settings.ts';

/**
 * Claude Code through `@agentclientprotocol/claude-agent-acp`. Reads ANTHROPIC_BASE_URL (root
 * URL, no /v1) and ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN. As root it refuses to run unless
 * IS_SANDBOX=1. Its default mode in newer versions makes extra model calls, so a mode is always
 * selected explicitly through permissionModeMapping.
 */
export const claudeCodeProfile = {
  harnessId: 'acp-claude-code',
  source: { type: 'npm-simple', packageName: '@agentclientprotocol/claude-agent-acp', packageVersion: '0.101.0' },
  executable: 'claude-agent-acp',
  modelMapping: { type: 'session-config-option', path: 'model' },
  skillsDirectory: '.claude/skills',
  forwardEnv: ['ANTHROPIC_BASE_URL'],
  credentialEnv: ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN'],
  credentialBrokering: ({ env, sandboxEnv }) => {
    const base = env.ANTHROPIC_BASE_URL ?? 'https://api.anthropic.com';
    const out: CredentialRequestTransformation[] = [];
    if (env.ANTHROPIC_API_KEY && sandboxEnv.ANTHROPIC_API_KEY) {
      out.push(createCredentialRequestTransformation({ matchUrl: base, matchHeaders: { 'x-api-key': sandboxEnv.ANTHROPIC_API_KEY }, transformHeaders: { 'x-api-key': env.ANTHROPIC_API_KEY }, baseUrlEnv: 'ANTHROPIC_BASE_URL' }));
    }
    if (env.ANTHROPIC_AUTH_TOKEN && sandboxEnv.ANTHROPIC_AUTH_TOKEN) {
      out.push(
        createCredentialRequestTransformation({
          matchUrl: base,
          matchHeaders: { Authorization: `Bearer ${sandboxEnv.ANTHROPIC_AUTH_TOKEN}` },
          transformHeaders: { Authorization: `Bearer ${env.ANTHROPIC_AUTH_TOKEN}` },
          baseUrlEnv: 'ANTHROPIC_BASE_URL',
        }),
      );
    }
    return out;
  },
  env: {
    IS_SANDBOX: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    // Host tools are the point of the bridge: load MCP tools up front instead of behind ToolSearch.
    ENABLE_TOOL_SEARCH: 'false',
  },
  instructionMapping: { type: 'session-meta', path: ['systemPrompt', 'append'] },
  permissionModeMapping: {
    'allow-reads': { type: 'session-mode', modeId: 'default' },
    'allow-edits': { type: 'session-mode', modeId: 'acceptEdits' },
    'allow-all': { type: 'session-mode', modeId: 'bypassPermissions' },
  } satisfies ACPPermissionModeMapping,
  providerAuthentication: {
    gateway: {
      env: {
        ANTHROPIC_API_KEY: { $source: 'gateway-api-key' },
        ANTHROPIC_AUTH_TOKEN: { $source: 'gateway-api-key' },
        ANTHROPIC_BASE_URL: { $source: 'gateway-base-url' },
        CLAUDE_AGENT_SDK_CLIENT_APP: { $source: 'client-app' },
      },
    },
  },
} satisfies ACPSettings;
