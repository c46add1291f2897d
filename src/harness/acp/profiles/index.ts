export { createClaudeCodeACP, createCodexACP, createCursorACP, createGeminiCliACP, createGrokBuildACP, createOpenCodeACP } from './factories.ts';
export { claudeCodeProfile } from './claude-code.ts';
export { codexProfile } from './codex.ts';
export { cursorProfile } from './cursor.ts';
export { grokBuildProfile } from './grok-build.ts';
export { geminiCliProfile } from './gemini-cli.ts';
export { opencodeProfile } from './opencode.ts';
export { ACP_PROFILES, HARNESS_NAMES, checkProfileCredentials, createProfileHarness, resolveHarnessName, type ACPHarnessName, type HarnessName } from './by-name.ts';
