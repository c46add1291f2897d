import { ConfigError } from '../../../core/errors.ts';
import { selectAuth } from '../auth.ts';
import { DEFAULT_CLIENT_APP } from '../client-app.ts';
import type { ACPHarness } from '../create.ts';
import type { ACPSettings } from '../settings.ts';
import { claudeCodeProfile } from './claude-code.ts';
import { codexProfile } from './codex.ts';
import { cursorProfile } from './cursor.ts';
import { geminiCliProfile } from './gemini-cli.ts';
import { grokBuildProfile } from './grok-build.ts';
import { opencodeProfile } from './opencode.ts';

export { HARNESS_NAMES, resolveHarnessName, type ACPHarnessName, type HarnessName } from './names.ts';
import type { ACPHarnessName } from './names.ts';

export const ACP_PROFILES: Readonly<Record<ACPHarnessName, ACPSettings>> = {
  'claude-code': claudeCodeProfile,
  codex: codexProfile,
  'gemini-cli': geminiCliProfile,
  opencode: opencodeProfile,
  cursor: cursorProfile,
  'grok-build': grokBuildProfile,
};

/**
 * Profiles whose key the agent gets as is: Cursor's CLI exchanges CURSOR_API_KEY with
 * api2.cursor.sh over HTTPS, which the loopback credential proxy cannot route (it is not a base
 * URL the agent lets us point elsewhere), so the brokering rule never applies locally.
 */
const KEY_FORWARDED_AS_IS: ReadonlySet<ACPHarnessName> = new Set(['cursor']);

/** How the agent gets the profile's key, in the words a user reads. */
export function credentialHandling(name: ACPHarnessName): string {
  return KEY_FORWARDED_AS_IS.has(name)
    ? "The key is passed to the agent as is: its HTTPS key exchange cannot be routed through acx's loopback credential proxy."
    : "The key is brokered by acx's loopback proxy; the agent only sees a placeholder.";
}

/**
 * Fails before anything is installed or started when the environment holds no credential the
 * profile can use (none of its credentialEnv names, and no AI Gateway credential it accepts).
 */
export function checkProfileCredentials(name: ACPHarnessName, env: Record<string, string | undefined>): void {
  const profile = ACP_PROFILES[name];
  const names = profile.credentialEnv ?? [];
  if (names.length === 0 || names.some((n) => env[n])) return;
  if (selectAuth(profile, env, DEFAULT_CLIENT_APP).mode === 'ai-gateway') return;
  const gateway = profile.providerAuthentication ? ' (or AI_GATEWAY_API_KEY for AI Gateway)' : '';
  const base = profile.forwardEnv?.find((n) => /BASE_URL$/.test(n));
  throw new ConfigError(`--harness ${name} needs a credential: set ${names.join(' or ')}${gateway}.`, {
    hint: `${credentialHandling(name)}${base ? ` Point ${base} at another endpoint if needed.` : ''}`,
  });
}

/**
 * A ready profile as a harness, with per-run overrides (model, hostEnv, sandbox, logger, …). The ACP
 * client (its SDK, the host-tool MCP server) is imported here, on first use, so a run on the
 * native engine never pays for loading it.
 */
export async function createProfileHarness(name: ACPHarnessName, overrides: Partial<ACPSettings> = {}): Promise<ACPHarness> {
  const { createACP } = await import('../create.ts');
  return createACP({ ...ACP_PROFILES[name], ...overrides } as ACPSettings);
}
