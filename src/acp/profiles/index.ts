export { claudeCodeProfile, createClaudeCodeACP } from './claude-code.ts';
export { codexProfile, createCodexACP } from './codex.ts';
export { cursorProfile, createCursorACP } from './cursor.ts';
export { grokBuildProfile, createGrokBuildACP } from './grok-build.ts';
export { geminiCliProfile, createGeminiCliACP } from './gemini-cli.ts';
export { opencodeProfile, createOpenCodeACP } from './opencode.ts';
export { ACP_PROFILES, HARNESS_NAMES, checkProfileCredentials, createProfileHarness, resolveHarnessName, type ACPHarnessName, type HarnessName } from './by-name.ts';
