// `acx run examples/notes-keeper "…" --harness opencode` and the same for the example cartridge,
// with the real OpenCode ACP agent against the local model server (OpenAI Chat Completions, the
// OpenAI-compatible provider acx configures for it). See test/harness/acp/cli-harness-suite.ts.
import { createOpenCodeACP } from '../../src/harness/acp/profiles/factories.ts';
import { CLI_HARNESS_KEY, describeCliHarness } from '../harness/acp/cli-harness-suite.ts';

describeCliHarness({
  harness: 'opencode',
  harnessId: 'acp-opencode',
  skillsDirectory: '.agents/skills', // the profile's default, which OpenCode loads as external skills
  bootstrap: () => createOpenCodeACP({ progress: null }),
  upstream: async (server) => ({
    env: { OPENCODE_BASE_URL: server.openaiBaseURL, OPENCODE_API_KEY: CLI_HARNESS_KEY, OPENCODE_MODEL: 'oc-model' },
  }),
  keyHeader: (r) => r.headers.authorization as string | undefined,
  toolPrefix: 'acx_',
  // OpenCode selects acx/<id>; acx lists the id asked for beside OPENCODE_MODEL in its provider.
  model: { flag: 'openai:oc-chosen', expect: /^oc-chosen$/ },
});
