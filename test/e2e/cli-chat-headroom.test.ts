// Issue 9 item 9: with a 32k context ceiling, `acx chat` warns about the compaction headroom once
// for the agent — not on every turn — and the remedy names the numbers (98304 as in the seed). A real chat: the CLI as
// a child process, three lines on stdin, the real OpenAI provider against the local model server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ModelServer, respondByTurn, startModelServer } from '../support/model-server.ts';
import { cleanEnv, runAcx } from '../support/cli.ts';
import { scaled } from '../support/time-scale.ts';

// Every turn hands work to a sub-agent (dispatch), which opens a session of its own: each of
// those used to warn again.
let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer({
    fallback: respondByTurn(({ request }) => {
      if (!request.view.tools.includes('dispatch')) return 'sub-agent report: done'; // a sub-agent cannot dispatch
      // The turn's own messages: after the newest user line (the step brief is a user message too).
      const messages = request.view.messages;
      const asked = messages.findLastIndex((m) => m.role === 'user' && !m.text.includes('<acx-brief>'));
      const dispatched = messages.slice(asked).some((m) => m.role === 'tool');
      return dispatched ? 'noted' : { toolCalls: [{ name: 'dispatch', input: { task: 'Look it up.' } }] };
    }),
  });
});
afterAll(async () => {
  await server.close();
});

describe('the headroom warning in acx chat (e2e)', { timeout: scaled(120_000) }, () => {
  it('is printed once for three turns, with the remedy', async () => {
    const chat = await runAcx(['chat', 'default', '--model', 'openai:m', '--context-tokens', '32768', '--permission-mode', 'allow-all'], {
      env: cleanEnv({ OPENAI_API_KEY: 'sk-test-headroom', OPENAI_BASE_URL: server.openaiBaseURL }),
      input: 'one\ntwo\nthree\n',
    });
    expect(chat.status, chat.stderr).toBe(0);
    expect(chat.stdout.match(/↳ dispatch/g), 'three turns dispatched').toHaveLength(3);
    expect(chat.stdout.match(/agent> noted/g), 'three turns ran').toHaveLength(3);
    expect(chat.stderr.trimEnd().split('\n')).toEqual([
      'WARNING context budget headroom too small limit=32768 source=config headroom=16384 turn_growth=49152 max_steps=24 ' +
        'remedy="raise the context budget (ACX_MAX_CONTEXT_TOKENS, --context-tokens) to at least 98304 or lower the step budget (ACX_MAX_STEPS, --max-steps) to 8" ' +
        'note="a turn may overshoot the ceiling before compaction, which runs only between turns; the over-length rescue still applies"',
    ]);
  });
});
