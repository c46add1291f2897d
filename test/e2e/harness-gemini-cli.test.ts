// `acx run examples/notes-keeper "…" --harness gemini-cli` and the same for the example cartridge,
// with the real Gemini CLI ACP agent against the local model server (Gemini generateContent).
// See test/harness/acp/cli-harness-suite.ts for what is asserted.
import { createGeminiCliACP } from '../../src/harness/acp/profiles/factories.ts';
import { CLI_HARNESS_KEY, describeCliHarness } from '../harness/acp/cli-harness-suite.ts';

describeCliHarness({
  harness: 'gemini-cli',
  harnessId: 'acp-gemini-cli',
  skillsDirectory: '.gemini/skills',
  bootstrap: () => createGeminiCliACP({ progress: null }),
  upstream: async (server) => ({ env: { GOOGLE_GEMINI_BASE_URL: server.url, GEMINI_API_KEY: CLI_HARNESS_KEY } }),
  keyHeader: (r) => r.headers['x-goog-api-key'] as string | undefined,
  toolPrefix: 'mcp_acx_',
  // Gemini CLI takes any model id through session/set_model.
  model: { flag: 'google:gemini-2.5-flash-lite', expect: /^gemini-2\.5-flash-lite$/ },
  // Gemini CLI 0.61.0 advertises session/load, but it records an ACP conversation lazily: when
  // the first process ended before the recording reached disk (usual on an idle machine), its
  // load finds nothing and answers "No previous sessions found"; on a loaded machine it often
  // has, and the session reopens. Both outcomes are checked.
  mayNotResume: /WARNING acp session not resumed .*error="Internal error" detail=".*No previous sessions found for this project/,
  // Gemini CLI asks a small model to rate or route each prompt (and may ask who speaks next);
  // each expects a JSON answer in a fixed shape.
  sideRequest: (r) => {
    const body = JSON.stringify(r.body);
    if (body.includes('complexity_score')) return { text: JSON.stringify({ complexity_reasoning: 'A bounded task.', complexity_score: 10 }) };
    if (body.includes('model_choice')) return { text: JSON.stringify({ reasoning: 'A bounded task.', model_choice: 'flash' }) };
    if (body.includes('next_speaker')) return { text: JSON.stringify({ reasoning: 'The reply is complete.', next_speaker: 'user' }) };
    return undefined;
  },
});
