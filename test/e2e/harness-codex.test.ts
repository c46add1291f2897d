// `acx run examples/notes-keeper "…" --harness codex` and the same for the example cartridge,
// with the real Codex ACP agent against the local model server (OpenAI Responses, behind the
// namespace proxy Codex's MCP tools need). Codex supports only --permission-mode allow-all.
// See test/harness/acp/cli-harness-suite.ts for what is asserted.
import { createCodexACP } from '../../src/harness/acp/profiles/factories.ts';
import { startResponsesNamespaceProxy } from '../support/model-server/responses-namespace.ts';
import { CLI_HARNESS_KEY, describeCliHarness } from '../harness/acp/cli-harness-suite.ts';

describeCliHarness({
  harness: 'codex',
  harnessId: 'acp-codex',
  skillsDirectory: '.agents/skills',
  bootstrap: () => createCodexACP({ progress: null }),
  upstream: async (server) => {
    const proxy = await startResponsesNamespaceProxy(server.url);
    return { env: { OPENAI_BASE_URL: proxy.openaiBaseURL, OPENAI_API_KEY: CLI_HARNESS_KEY, CODEX_API_KEY: '' }, close: () => proxy.close() };
  },
  keyHeader: (r) => r.headers.authorization,
  args: ['--permission-mode', 'allow-all'],
  // Codex offers gpt-5.5 (its default), gpt-5.4, gpt-5.4-mini, gpt-5.3-codex and gpt-5.2.
  model: { flag: 'openai:gpt-5.4-mini', expect: /^gpt-5\.4-mini$/ },
});
