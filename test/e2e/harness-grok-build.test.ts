// `acx run examples/notes-keeper "…" --harness grok-build` with the real Grok Build agent against
// the local model server (OpenAI Responses wire). Grok Build keeps MCP tools behind its own
// search_tool / use_tool pair, so the scripted model finds acx's memory_write first, as a model
// would; the shared --harness suite assumes tools offered by name and does not fit it.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGrokBuildACP } from '../../src/harness/acp/profiles/factories.ts';
import { createSqliteMemoryProvider } from '../../src/memory/provider.ts';
import { ROOT, runAcx, tempDir } from '../support/cartridge-fixtures.ts';
import { type ModelServer, type RecordedRequest, type ResponderResult, startModelServer } from '../support/model-server.ts';
import { scaled } from '../support/time-scale.ts';

const KEY = 'sk-e2e-grok-real-0123456789';
const FREEZE = 'The release freeze starts on 12 December.';
const REPLY = 'Noted: the release freeze starts on 12 December.';
const CODE_WORD = 'PLUM-7731';
const RECALL = 'What is the code word?';

const outputText = (output: unknown) => (typeof output === 'string' ? output : JSON.stringify(output));

/** Grok Build's main requests offer use_tool; its side requests (the session title) do not. */
function respond(r: RecordedRequest): ResponderResult | Promise<ResponderResult> {
  const tools = ((r.body?.tools ?? []) as Array<{ name?: string }>).map((t) => t.name);
  if (!tools.includes('use_tool')) return { text: 'Release freeze' };
  const users = r.view.messages.filter((m) => m.role === 'user').map((m) => m.text ?? '');
  // After a turn Grok asks for a one-line dashboard summary; the user's words come as <user_query>.
  if (users.at(-1)?.includes('dashboard line')) return { text: 'Noted a fact.' };
  const asked = users.filter((text) => text.includes('<user_query>')).at(-1) ?? '';
  if (asked.includes(RECALL)) return { text: JSON.stringify(r.body).includes(CODE_WORD) ? `The code word is ${CODE_WORD}.` : 'I do not know the code word.' };
  const last = r.view.messages.at(-1);
  const result = last?.role === 'tool' ? outputText(last.toolResults?.[0]?.output) : undefined;
  const search = { toolCalls: [{ name: 'search_tool', input: { query: 'acx memory_write' } }] };
  if (result === undefined) return search;
  if (result.includes('Saved')) return { text: REPLY };
  const target = /"tool_name":\s*"([^"]*memory_write)"/.exec(result)?.[1];
  if (target) return { toolCalls: [{ name: 'use_tool', input: { tool_name: target, tool_input: { key: 'release-freeze', value: FREEZE } } }] };
  // Its MCP servers connect in the background: search again a moment later, as a model would.
  return new Promise((resolve) => setTimeout(() => resolve(search), 500));
}

describe('acx run --harness grok-build (real agent, local model server)', { timeout: scaled(180_000) }, () => {
  let server: ModelServer;
  let root: string;
  const env = (name: string): NodeJS.ProcessEnv => {
    const tmp = join(root, name, 'tmp');
    mkdirSync(tmp, { recursive: true });
    return {
      ACX_HOME: join(root, name, 'state'),
      ACX_CONFIG_HOME: join(root, name, 'config'),
      ACX_HARNESS: '',
      ACX_LOG_LEVEL: 'info',
      GROK_XAI_API_BASE_URL: server.openaiBaseURL,
      XAI_API_KEY: KEY,
      TMPDIR: tmp,
    };
  };

  beforeAll(async () => {
    root = tempDir('acx-e2e-grok-build-');
    server = await startModelServer({ fallback: respond });
    await createGrokBuildACP({ progress: null }).bootstrap();
  }, scaled(600_000));
  afterAll(async () => {
    await server?.close();
  });

  it('runs an agent directory: its instructions reach Grok, and memory_write runs in acx through use_tool', async () => {
    const run = await runAcx(['run', join(ROOT, 'examples/notes-keeper'), 'Remember that the release freeze starts on 12 December.', '--harness', 'grok-build'], env('dir'));
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe(REPLY);
    const main = server.requests.find((r) => JSON.stringify(r.body).includes('use_tool'))!;
    expect(JSON.stringify(main.body)).toContain('You are Notes Keeper, the memory of a small software team.');
    expect(server.requests.at(-1)!.headers.authorization).toBe(`Bearer ${KEY}`); // brokered: the agent had a placeholder
    const memory = createSqliteMemoryProvider({ path: join(root, 'dir/state/agents/notes-keeper/memory.db') });
    try {
      expect((await memory.store.get('release-freeze'))?.value).toBe(FREEZE);
    } finally {
      await memory.close();
    }
  });

  it('reopens a session named with --session in a later run (session/resume): Grok remembers the conversation', async () => {
    const agent = join(ROOT, 'examples/notes-keeper');
    const first = await runAcx(['run', agent, `Remember that the code word is ${CODE_WORD}.`, '--harness', 'grok-build', '--session', 'chat-1'], env('resume'));
    expect(first.code, first.stderr).toBe(0);
    const second = await runAcx(['run', agent, RECALL, '--harness', 'grok-build', '--session', 'chat-1'], env('resume'));
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toMatch(/INFO acp session resumed .*session=chat-1 acpSession=\S+ via=session\/resume/);
    expect(second.stdout.trim()).toBe(`The code word is ${CODE_WORD}.`);
  });
});
