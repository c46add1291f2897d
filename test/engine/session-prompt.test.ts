// A session's next turn converts only what its last turn added to the provider prompt: the
// earlier turns' provider messages are the ones already built, and the prompt is still exactly
// the whole transcript.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEngineHarness } from '../../src/harness/engine-harness.ts';
import { HarnessAgent } from '../../src/harness/harness-agent.ts';
import { fromLanguageModel } from '../../src/model/providers.ts';
import { tool } from '../../src/tools/tool.ts';
import { POSTGRES_SKIP, postgresForSuite } from '../support/postgres.ts';
import { scriptedModel } from '../support/scripted-model.ts';

const postgres = postgresForSuite();

let home: string | undefined;
afterEach(() => {
  if (home) rmSync(home, { recursive: true, force: true });
  home = undefined;
});

const note = tool({
  name: 'note',
  description: 'Keep a note.',
  inputSchema: z.object({ text: z.string() }),
  capabilityScopes: [],
  kind: 'read',
  effect: 'read-only',
  execute: ({ text }) => `noted: ${text}`,
});

describe('the provider prompt between turns', () => {
  it("reuses the earlier turns' provider messages, and still sends the whole transcript", async () => {
    home = mkdtempSync(join(tmpdir(), 'acx-session-prompt-'));
    const model = scriptedModel([
      { toolCalls: [{ id: 'c1', name: 'note', input: { text: 'milk' } }] },
      { text: 'Noted milk.' },
      { text: 'You asked me to note milk.' },
    ]);
    const harness = createEngineHarness({ model: fromLanguageModel(model), home });
    const agent = new HarnessAgent({ harness, instructions: 'You keep notes.', tools: [note], permissionMode: 'allow-all' });
    const session = await agent.createSession();
    expect((await agent.generate({ prompt: 'Note milk.', session })).text).toBe('Noted milk.');
    expect((await agent.generate({ prompt: 'What did I ask?', session })).text).toBe('You asked me to note milk.');
    await harness.close?.();

    const [, lastOfFirst, nextTurn] = model.calls.map((call) => call.prompt);
    const roles = (prompt: typeof nextTurn) => prompt!.map((message) => message.role);
    // system, the first turn (question, call, result, answer), the new question, the brief.
    expect(roles(nextTurn)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant', 'user', 'user']);
    expect(nextTurn![3]).toEqual(lastOfFirst![3]);
    // The first turn's messages were converted once, in the first turn, and kept for the session:
    // the question, the call (whose SDK response message had keys set to undefined) and the result.
    expect(nextTurn![1]).toBe(lastOfFirst![1]);
    expect(nextTurn![2]).toBe(lastOfFirst![2]);
    expect(nextTurn![3]).toBe(lastOfFirst![3]);
  });

  // A worker opens the session anew for every event, in an engine of its own: the journal gives
  // the earlier turns' messages as the same objects (SQLite: MessageCache; PostgreSQL:
  // PostgresTranscripts, which keeps what it read, so from the third turn on), and the harness
  // keeps the provider messages they converted to.
  for (const store of ['sqlite', 'postgres'] as const) {
    const skip = store === 'postgres' ? POSTGRES_SKIP : '';
    it.skipIf(skip !== '')(`reuses them in a session opened again by its id for each turn, as a worker does (${store})${skip}`, async () => {
      home = mkdtempSync(join(tmpdir(), 'acx-session-prompt-'));
      const model = scriptedModel([
        { toolCalls: [{ id: 'c1', name: 'note', input: { text: 'milk' } }] },
        { text: 'Noted milk.' },
        { text: 'Milk.' },
        { text: 'Still milk.' },
      ]);
      const harness = createEngineHarness({ model: fromLanguageModel(model), home, ...(store === 'postgres' ? { store: postgres.database('prompt') } : {}) });
      const agent = new HarnessAgent({ harness, instructions: 'You keep notes.', tools: [note], permissionMode: 'allow-all' });
      const { id } = await agent.createSession();
      expect((await agent.generate({ prompt: 'Note milk.', session: await agent.createSession({ sessionId: id }) })).text).toBe('Noted milk.');
      expect((await agent.generate({ prompt: 'What did I ask?', session: await agent.createSession({ sessionId: id }) })).text).toBe('Milk.');
      expect((await agent.generate({ prompt: 'And now?', session: await agent.createSession({ sessionId: id }) })).text).toBe('Still milk.');
      await harness.close?.();

      const [, lastOfFirst, second, third] = model.calls.map((call) => call.prompt);
      expect(third!.map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant', 'user', 'assistant', 'user', 'user']);
      for (const i of [1, 2, 3, 4]) expect(third![i], `the first turn's message ${i} is the provider object the second turn sent`).toBe(second![i]);
      if (store === 'sqlite') for (const i of [1, 2, 3]) expect(second![i]).toBe(lastOfFirst![i]);
    });
  }
});
