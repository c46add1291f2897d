/**
 * Re-records examples/notes-keeper/cassettes/quickstart.json.
 *
 * No model API is reachable where acx is developed, so the recording is made through the real
 * OpenAI Responses wire against acx's scripted local model server (test/support), which plays
 * a model that stores a fact and then answers. To record a real model instead, run:
 *   ACX_MODEL=openai:gpt-5.4-mini OPENAI_API_KEY=... npx acx run examples/notes-keeper \
 *     "<the same prompt>" --record examples/notes-keeper/cassettes/quickstart.json
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { respondByTurn, startModelServer } from '../test/support/model-server.ts';
import { QUICKSTART_PROMPT } from './quickstart.ts';


const root = join(import.meta.dirname, '..');
const server = await startModelServer({
  fallback: respondByTurn(({ request }) => {
    // The last message is acx's volatile brief; look for tool results anywhere in the turn.
    if (!request.view.messages.some((message) => message.role === 'tool')) {
      return {
        toolCalls: [
          { id: 'call_store', name: 'memory_write', input: { key: 'release/freeze', value: 'The release freeze starts on 12 December.' } },
          { id: 'call_search', name: 'memory_search', input: { query: 'deploy' } },
        ],
        usage: { inputTokens: 1450, outputTokens: 64 },
      };
    }
    return {
      text: 'Noted: the release freeze starts on 12 December. Deploys run on Tuesdays and Thursdays before 15:00 UTC, so the last deploy window before the freeze is Thursday 10 December, before 15:00 UTC.',
      usage: { inputTokens: 1720, outputTokens: 48 },
    };
  }),
});
const home = mkdtempSync(join(tmpdir(), 'acx-record-'));
try {
  // Async spawn: the model server answers from this process's event loop.
  const child = spawn(
    process.execPath,
    [
      join(root, 'bin/acx.js'),
      'run',
      join(root, 'examples/notes-keeper'),
      QUICKSTART_PROMPT,
      '--model',
      'openai:demo-model',
      '--home',
      home,
      '--config-home',
      home,
      '--record',
      join(root, 'examples/notes-keeper/cassettes/quickstart.json'),
    ],
    { stdio: 'inherit', env: { ...process.env, OPENAI_API_KEY: 'sk-local-recording', OPENAI_BASE_URL: server.openaiBaseURL } },
  );
  process.exitCode = await new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
} finally {
  await server.close();
  rmSync(home, { recursive: true, force: true });
}
