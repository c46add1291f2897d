// Item 12, record / replay: a run recorded against the model server replays with no server and
// no key to the same answer; a different request fails clearly, naming the model call.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ReplayMismatchError } from '../../src/core/errors.ts';
import { createRecordingModel, createReplayModel } from '../../src/model/cassette.ts';
import { fromLanguageModel } from '../../src/model/providers.ts';
import { echoTool, openaiModel, rig, startModelServer, tmpHome } from './helpers.ts';

const PROMPT = 'Echo the word kiwi, then tell me what came back.';

const FOLLOW_UP = 'And in capitals?';

/** Records a two-turn run (a tool call and an answer, then a second answer) through the real OpenAI Responses wire. */
async function record(): Promise<{ cassette: string; texts: string[] }> {
  const server = await startModelServer();
  try {
    server.enqueue(
      { reasoning: 'I should echo it.', toolCalls: [{ name: 'echo', input: { text: 'kiwi' } }], usage: { inputTokens: 300, outputTokens: 12 } },
      { text: 'The echo said: kiwi.', usage: { inputTokens: 340, outputTokens: 8 } },
      { text: 'KIWI.', usage: { inputTokens: 360, outputTokens: 2 } },
    );
    const cassette = join(tmpHome(), 'run.json');
    const live = await openaiModel(server);
    const { agent } = rig({ ...live, model: createRecordingModel(live.model, cassette) }, { agent: { instructions: 'Be brief.', tools: [echoTool()] } });
    const session = await agent.createSession();
    const texts = [(await agent.generate({ session, prompt: PROMPT })).text, (await agent.generate({ session, prompt: FOLLOW_UP })).text];
    return { cassette, texts };
  } finally {
    await server.close();
  }
}

function replayRig(cassette: string, tool = echoTool()) {
  const model = fromLanguageModel(createReplayModel(cassette), { provider: 'openai' });
  return rig(model, { agent: { instructions: 'Be brief.', tools: [tool] } });
}

describe('record / replay', () => {
  it('a recorded run replays offline (no server, no key) to the same answers, tools included', async () => {
    const { cassette, texts } = await record();
    expect(texts).toEqual(['The echo said: kiwi.', 'KIWI.']);
    expect(existsSync(cassette)).toBe(true);
    const saved = JSON.parse(readFileSync(cassette, 'utf8'));
    expect(saved.format).toBe('acx.cassette/1');
    expect(saved.interactions).toHaveLength(3);

    const echo = echoTool();
    const { agent, logger } = replayRig(cassette, echo);
    const session = await agent.createSession();
    const first = await agent.generate({ session, prompt: PROMPT });
    const second = await agent.generate({ session, prompt: FOLLOW_UP });
    expect([first.text, second.text]).toEqual(texts);
    expect(echo.seen, 'tools really run on replay').toEqual(['kiwi']);
    expect(first.usage).toMatchObject({ inputTokens: 640, outputTokens: 20 });
    expect(logger.lines.filter((l) => l.startsWith('INFO llm '))).toHaveLength(3);
  });

  it('the cassette holds no API key and no request headers', async () => {
    const { cassette } = await record();
    const text = readFileSync(cassette, 'utf8');
    expect(text).not.toMatch(/sk-test-OPENAIKEY/);
    expect(text).not.toMatch(/authorization/i);
  });

  it('a different prompt fails with a clear mismatch naming the model call', async () => {
    const { cassette } = await record();
    const { agent } = replayRig(cassette);
    const error = await agent.generate({ prompt: 'Something else entirely.' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ReplayMismatchError);
    expect((error as Error).message).toMatch(/Replay mismatch at model call 1/);
    expect((error as Error).message).toContain('Something else entirely.');
    expect((error as { hint?: string }).hint).toMatch(/--record/);
  });

  it('a divergence later in the run names that later call', async () => {
    const { cassette } = await record();
    const { agent } = replayRig(cassette);
    const session = await agent.createSession();
    expect((await agent.generate({ session, prompt: PROMPT })).text).toBe('The echo said: kiwi.');
    await expect(agent.generate({ session, prompt: 'And in French?' })).rejects.toThrow(/Replay mismatch at model call 3/);
  });

  it('asking for more calls than were recorded says the replay ran out', async () => {
    const { cassette } = await record();
    const { agent } = replayRig(cassette);
    const session = await agent.createSession();
    await agent.generate({ session, prompt: PROMPT });
    await agent.generate({ session, prompt: FOLLOW_UP });
    await expect(agent.generate({ session, prompt: 'and again' })).rejects.toThrow(/Replay ran out at model call 4/);
  });
});
