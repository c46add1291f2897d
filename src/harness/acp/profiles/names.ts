import { ConfigError } from '../../../core/errors.ts';

// Kept apart from the profiles so the CLI can name and validate harnesses without loading them.
/**
 * The harnesses `acx run --harness NAME` (env ACX_HARNESS) can put an agent on: acx's own
 * engine, or one of the ready ACP profiles by its short name.
 */
export const HARNESS_NAMES = ['engine', 'claude-code', 'codex', 'gemini-cli', 'opencode', 'cursor', 'grok-build'] as const;
export type HarnessName = (typeof HARNESS_NAMES)[number];
export type ACPHarnessName = Exclude<HarnessName, 'engine'>;

/** The flag wins over ACX_HARNESS; neither means the native engine. */
export function resolveHarnessName(flag: string | undefined, env: Record<string, string | undefined> = process.env): HarnessName {
  const fromFlag = flag !== undefined && flag !== '';
  const value = (fromFlag ? flag : env.ACX_HARNESS)?.trim() || 'engine';
  if ((HARNESS_NAMES as readonly string[]).includes(value)) return value as HarnessName;
  throw new ConfigError(`Unknown harness "${value}" (${fromFlag ? '--harness' : 'ACX_HARNESS'}).`, {
    hint: `Use one of: ${HARNESS_NAMES.join(', ')}.`,
  });
}
