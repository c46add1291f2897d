import { createACP, type ACPHarness } from '../create.ts';
import type { ACPSettings } from '../settings.ts';
import { claudeCodeProfile } from './claude-code.ts';
import { codexProfile } from './codex.ts';
import { cursorProfile } from './cursor.ts';
import { geminiCliProfile } from './gemini-cli.ts';
import { grokBuildProfile } from './grok-build.ts';
import { opencodeProfile } from './opencode.ts';

// The ready profiles as harnesses. Kept apart from the profile data, which only names settings,
// so reading a profile (its credentials, its name) does not load the ACP client.
export const createClaudeCodeACP = (overrides: Partial<ACPSettings> = {}): ACPHarness => createACP({ ...claudeCodeProfile, ...overrides } as ACPSettings);
export const createCodexACP = (overrides: Partial<ACPSettings> = {}): ACPHarness => createACP({ ...codexProfile, ...overrides } as ACPSettings);
export const createCursorACP = (overrides: Partial<ACPSettings> = {}): ACPHarness => createACP({ ...cursorProfile, ...overrides } as ACPSettings);
export const createGeminiCliACP = (overrides: Partial<ACPSettings> = {}): ACPHarness => createACP({ ...geminiCliProfile, ...overrides } as ACPSettings);
export const createGrokBuildACP = (overrides: Partial<ACPSettings> = {}): ACPHarness => createACP({ ...grokBuildProfile, ...overrides } as ACPSettings);
export const createOpenCodeACP = (overrides: Partial<ACPSettings> = {}): ACPHarness => createACP({ ...opencodeProfile, ...overrides } as ACPSettings);
