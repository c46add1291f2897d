// `acx run examples/notes-keeper "…" --harness claude-code` and the same for the example
// cartridge, with the real Claude Code ACP agent against the local model server (Anthropic
// Messages). See test/harness/acp/cli-harness-suite.ts for what is asserted.
import { createClaudeCodeACP } from '../../src/harness/acp/profiles/factories.ts';
import { CLI_HARNESS_KEY, describeCliHarness } from '../harness/acp/cli-harness-suite.ts';

describeCliHarness({
  harness: 'claude-code',
  harnessId: 'acp-claude-code',
  skillsDirectory: '.claude/skills',
  bootstrap: () => createClaudeCodeACP({ progress: null }),
  upstream: async (server) => ({ env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: CLI_HARNESS_KEY, ANTHROPIC_AUTH_TOKEN: '' } }),
  keyHeader: (r) => r.headers['x-api-key'],
  model: { flag: 'anthropic:haiku', expect: /haiku/ },
});
