// Item 6, the context budget and compaction, through the real OpenAI Responses wire: the trigger
// is the provider-reported input tokens; older turns become one summary (also saved to memory),
// cut only before a user turn; an over-length error self-heals once, never after a tool ran; a
// WARNING when the ceiling and the step budget break the single-turn headroom inequality.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSqliteMemoryProvider } from '../../src/memory/provider.ts';
import type { ModelServer, RecordedRequest, Responder } from '../support/model-server.ts';
import { anthropicModel, echoTool, linesOf, openaiModel, rig, startModelServer, tmpHome } from './helpers.ts';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

const SUMMARY = 'SUMMARY: the user asked about the Alpha project; I looked up ticket ALPHA-17 (open).';
const isSummaryRequest = (r: RecordedRequest) => r.view.system.some((s) => /compacting your own conversation/.test(s));

/** Answers summary requests with SUMMARY, everything else from the queue-like list. */
function script(...answers: Responder[]): Responder {
  const queue = [...answers];
  return async (request) => {
    if (isSummaryRequest(request)) return SUMMARY;
    const next = queue.shift();
    if (next === undefined) throw new Error('script exhausted');
    return typeof next === 'function' ? next(request) : next;
  };
}

async function compactingRig(extra: { contextTokens?: number; maxSteps?: number } = {}) {
  const home = tmpHome();
  const memory = createSqliteMemoryProvider({ path: join(home, 'memory.db') });
  const echo = echoTool();
  const r = rig(await openaiModel(server), {
    home,
    harness: { contextTokens: extra.contextTokens ?? 40_000, maxSteps: extra.maxSteps ?? 4, memory },
    agent: { tools: [echo] },
  });
  const session = await r.agent.createSession({ sessionId: 'compact-me' });
  return { ...r, memory, echo, session };
}

describe('compaction after a turn', () => {
  it('fires when provider-reported input tokens cross half the ceiling: one summary replaces older turns, cut before a user turn, saved to memory', async () => {
    server.setFallback(
      script(
        { text: 'Alpha is on track.', usage: { inputTokens: 1_000 } },
        { text: 'ALPHA-17 is open.', usage: { inputTokens: 25_000 } }, // crosses 20,000
        { text: 'Third answer.', usage: { inputTokens: 2_000 } },
      ),
    );
    const r = await compactingRig();
    await r.agent.generate({ session: r.session, prompt: 'How is the Alpha project?' });
    expect(server.requests.filter(isSummaryRequest), 'under half the ceiling: no compaction').toHaveLength(0);
    await r.agent.generate({ session: r.session, prompt: 'What about ticket ALPHA-17?' });

    const summaries = server.requests.filter(isSummaryRequest);
    expect(summaries, 'exactly one summary request after the turn that crossed half').toHaveLength(1);
    expect(summaries[0]!.view.messages.map((m) => m.text).join('\n')).toContain('How is the Alpha project?');

    const stored = r.readJournal((j) => j.messages('compact-me'));
    expect(stored.map((m) => m.kind)).toEqual(['summary', 'user', 'assistant']);
    expect(JSON.stringify(stored[0]!.message.content)).toContain(SUMMARY);
    expect(stored[1]!.message.content, 'the cut lands immediately before a user turn').toBe('What about ticket ALPHA-17?');
    expect(JSON.stringify(stored)).not.toContain('How is the Alpha project?');

    const saved = await r.memory.store.list({ prefix: 'compaction/' });
    expect(saved).toHaveLength(1);
    expect(saved[0]!.value).toBe(SUMMARY);
    const line = linesOf(r.logger.lines, 'INFO', 'context compact');
    expect(line).toHaveLength(1);
    expect(line[0]).toMatch(/tokens_in=25000 limit=40000 source=config threshold=20000/);

    // The next turn comes in on the summary, not the old turns.
    await r.agent.generate({ session: r.session, prompt: 'Anything else?' });
    const next = server.requests.at(-1)!;
    expect(next.view.messages[0]!.text).toContain(SUMMARY);
    expect(next.view.messages.map((m) => m.text).join('\n')).not.toContain('How is the Alpha project?');
  });

  it('keeps a recent window (~20% of the budget) verbatim and summarises only what is older', async () => {
    const big = (n: number) => `turn ${n}: ${'lorem ipsum '.repeat(850)}`; // ~10,000 characters each
    server.setFallback(
      script(
        { text: 'a1', usage: { inputTokens: 5_000 } },
        { text: 'a2', usage: { inputTokens: 9_000 } },
        { text: 'a3', usage: { inputTokens: 13_000 } },
        { text: 'a4', usage: { inputTokens: 21_000 } },
      ),
    );
    const r = await compactingRig();
    for (const n of [1, 2, 3, 4]) await r.agent.generate({ session: r.session, prompt: big(n) });
    expect(server.requests.filter(isSummaryRequest)).toHaveLength(1);
    const stored = r.readJournal((j) => j.messages('compact-me'));
    expect(stored.map((m) => m.kind)).toEqual(['summary', 'user', 'assistant', 'user', 'assistant']);
    expect(stored[1]!.message.content, 'the kept window is verbatim').toBe(big(3));
    expect(stored[3]!.message.content).toBe(big(4));
  });

  it('declines, with a WARNING, when there is no safe cut (a single turn is all there is)', async () => {
    server.setFallback(script({ text: 'big answer', usage: { inputTokens: 30_000 } }));
    const r = await compactingRig();
    const result = await r.agent.generate({ session: r.session, prompt: 'one huge first turn' });
    expect(result.text).toBe('big answer');
    expect(server.requests.filter(isSummaryRequest)).toHaveLength(0);
    expect(linesOf(r.logger.lines, 'WARNING', 'context compact declined')).toHaveLength(1);
    expect(r.readJournal((j) => j.messages('compact-me')).map((m) => m.kind)).toEqual(['user', 'assistant']);
  });

  it('a failed summary call leaves the transcript untouched and logs a WARNING', async () => {
    server.setFallback(async (request) => (isSummaryRequest(request) ? { fail: { status: 400, message: 'nope' } } : 'fine'));
    server.enqueue({ text: 'first', usage: { inputTokens: 100 } }, { text: 'second', usage: { inputTokens: 30_000 } });
    const r = await compactingRig();
    await r.agent.generate({ session: r.session, prompt: 'one' });
    const result = await r.agent.generate({ session: r.session, prompt: 'two' });
    expect(result.text).toBe('second');
    expect(linesOf(r.logger.lines, 'WARNING', 'context compact failed')).toHaveLength(1);
    expect(r.readJournal((j) => j.messages('compact-me')).map((m) => m.kind)).toEqual(['user', 'assistant', 'user', 'assistant']);
  });
});

describe('compaction and turn ids', () => {
  it('a failed turn summarised away is not continued blind when its message is delivered again', async () => {
    server.setFallback(
      script(
        { toolCalls: [{ name: 'echo', input: { text: 'side effect' } }], usage: { inputTokens: 1_000 } },
        { fail: { status: 400 } },
        { text: 'Here is the status.', usage: { inputTokens: 25_000 } }, // crosses half: compaction
      ),
    );
    const r = await compactingRig();
    await expect(r.agent.generate({ session: r.session, prompt: 'Do the thing.', turnId: 'delivery-1' })).rejects.toThrow();
    await r.agent.generate({ session: r.session, prompt: 'What is the status?' });
    expect(r.readJournal((j) => j.messages('compact-me').map((m) => m.kind))[0]).toBe('summary');

    const before = server.requests.length;
    await expect(r.agent.generate({ session: r.session, prompt: 'Do the thing.', turnId: 'delivery-1' })).rejects.toMatchObject({
      code: 'turn-compacted',
      message: expect.stringMatching(/Turn delivery-1 failed and its messages have since been compacted into a summary/),
    });
    expect(r.echo.seen, 'its side effect is not repeated').toEqual(['side effect']);
    expect(server.requests.length, 'no model call').toBe(before);
    expect(linesOf(r.logger.lines, 'ERROR', 'turn abandoned')[0]).toMatch(/turn=delivery-1 status=failed reason="its messages were compacted away"/);
  });
});

describe('compaction, continued', () => {
  it('is cumulative: the next compaction folds the previous summary in', async () => {
    server.setFallback(
      script(
        { text: 'a1', usage: { inputTokens: 100 } },
        { text: 'a2', usage: { inputTokens: 25_000 } },
        { text: 'a3', usage: { inputTokens: 25_000 } },
      ),
    );
    const r = await compactingRig();
    for (const prompt of ['q1', 'q2', 'q3']) await r.agent.generate({ session: r.session, prompt });
    const summaries = server.requests.filter(isSummaryRequest);
    expect(summaries).toHaveLength(2);
    expect(summaries[1]!.view.messages.map((m) => m.text).join('\n'), 'the earlier summary is folded in').toContain(SUMMARY);
    const kinds = r.readJournal((j) => j.messages('compact-me')).map((m) => m.kind);
    expect(kinds.filter((k) => k === 'summary'), 'one summary, never a growing pile').toHaveLength(1);
    expect(kinds[0]).toBe('summary');
  });

  it('saves the summary to memory whatever characters the session id holds', async () => {
    server.setFallback(script({ text: 'a1', usage: { inputTokens: 100 } }, { text: 'a2', usage: { inputTokens: 25_000 } }));
    const r = await compactingRig();
    const session = await r.agent.createSession({ sessionId: 'chat with alice@example.com' });
    await r.agent.generate({ session, prompt: 'q1' });
    await r.agent.generate({ session, prompt: 'q2' });
    expect(server.requests.filter(isSummaryRequest)).toHaveLength(1);
    expect(linesOf(r.logger.lines, 'WARNING', 'memory remember failed'), 'the summary must reach memory').toEqual([]);
    expect((await r.memory.store.list({ prefix: 'compaction/' })).map((m) => m.value)).toEqual([SUMMARY]);
  });
});

describe('the over-length rescue', () => {
  it('an over-length error is recognised, the transcript compacted hard, and the turn re-run once', async () => {
    server.setFallback(script('first answer', { fail: 'context-overflow' }, 'answer after rescue'));
    const r = await compactingRig();
    await r.agent.generate({ session: r.session, prompt: 'first question' });
    const result = await r.agent.generate({ session: r.session, prompt: 'second question' });
    expect(result.text).toBe('answer after rescue');
    const kinds = server.requests.map((req) => (isSummaryRequest(req) ? 'summary' : 'turn'));
    expect(kinds).toEqual(['turn', 'turn', 'summary', 'turn']);
    const rerun = server.requests[3]!;
    expect(rerun.view.messages[0]!.text).toContain(SUMMARY);
    expect(rerun.view.messages.map((m) => m.text).join('\n')).not.toContain('first question');
    expect(linesOf(r.logger.lines, 'WARNING', 'context overflow')).toHaveLength(1);
  });

  for (const surface of ['chat', 'anthropic'] as const) {
    it(`recognises the ${surface} wire's own over-length error`, async () => {
      const model = surface === 'anthropic' ? await anthropicModel(server) : await openaiModel(server, 'chat');
      server.setFallback(script('first answer', { fail: 'context-overflow' }, 'answer after rescue'));
      const r = rig(model, { harness: { contextTokens: 40_000, maxSteps: 4 } });
      const session = await r.agent.createSession({ sessionId: 's' });
      await r.agent.generate({ session, prompt: 'first question' });
      const result = await r.agent.generate({ session, prompt: 'second question' });
      expect(result.text).toBe('answer after rescue');
      expect(server.requests.filter(isSummaryRequest)).toHaveLength(1);
    });
  }

  it('is not re-run after a tool already ran (the compaction still lands for the next turn)', async () => {
    server.setFallback(
      script('first answer', { toolCalls: [{ name: 'echo', input: { text: 'side effect' } }] }, { fail: 'context-overflow' }, 'next turn ok'),
    );
    const r = await compactingRig();
    await r.agent.generate({ session: r.session, prompt: 'first question' });
    await expect(r.agent.generate({ session: r.session, prompt: 'second question' })).rejects.toThrow();
    expect(r.echo.seen, 'the tool ran exactly once').toEqual(['side effect']);
    const kinds = server.requests.map((req) => (isSummaryRequest(req) ? 'summary' : 'turn'));
    expect(kinds, 'compacted, but no re-run of the model call').toEqual(['turn', 'turn', 'turn', 'summary']);
    const turns = r.readJournal((j) => j.turns('compact-me'));
    expect(turns.map((t) => t.status)).toEqual(['done', 'failed']);
    const stored = r.readJournal((j) => j.messages('compact-me'));
    expect(stored[0]!.kind).toBe('summary');

    const next = await r.agent.generate({ session: r.session, prompt: 'third question' });
    expect(next.text).toBe('next turn ok');
    expect(server.requests.at(-1)!.view.messages[0]!.text).toContain(SUMMARY);
  });

  it('is not re-run in a resumed turn whose open step ran a call in the process that ended', async () => {
    server.setFallback(script('first answer', { fail: 'context-overflow' }, 'next turn ok'));
    const r = await compactingRig();
    await r.agent.generate({ session: r.session, prompt: 'first question' });
    // The second turn as a killed process leaves it: its step's call named and run (the result on
    // record), the step not yet settled.
    r.readJournal((j) => {
      j.transaction(() => {
        j.startTurn('second', 'compact-me');
        j.appendMessage('compact-me', 'second', 'user', { role: 'user', content: 'second question' });
      });
      j.appendMessage('compact-me', 'second', 'assistant', {
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'echo', input: { text: 'side effect' } }],
      });
      const [call] = j.openCalls('second');
      j.setCallStatus(call!, 'started');
      j.recordCallResult(call!, { type: 'text', value: 'echo: side effect' });
    });
    await expect(r.agent.continueGenerate({ session: r.session })).rejects.toThrow();
    expect(r.echo.seen, 'the call that ran before is not run again').toEqual([]);
    const kinds = server.requests.map((req) => (isSummaryRequest(req) ? 'summary' : 'turn'));
    expect(kinds, 'compacted, but no re-run of the model call').toEqual(['turn', 'turn', 'summary']);
    expect(linesOf(r.logger.lines, 'WARNING', 'context overflow').join('\n')).toMatch(/tools_ran=1 .*no re-run after a tool ran/);
    expect(r.readJournal((j) => j.turns('compact-me')).map((t) => t.status)).toEqual(['done', 'failed']);
  });

  it('a context budget of 0 disables compaction and the rescue with it', async () => {
    server.setFallback(script('first', { fail: 'context-overflow' }));
    const r = await compactingRig({ contextTokens: 0 });
    await r.agent.generate({ session: r.session, prompt: 'one' });
    await expect(r.agent.generate({ session: r.session, prompt: 'two' })).rejects.toThrow();
    expect(server.requests.filter(isSummaryRequest)).toHaveLength(0);
    expect(server.requests).toHaveLength(2);
  });
});

describe('the headroom inequality', () => {
  it('WARNs when ceiling × 0.5 of headroom is below 6144 × maxSteps / 3, naming the numbers and the remedy', async () => {
    const r = rig(await openaiModel(server), { harness: { contextTokens: 20_000 } });
    await r.agent.createSession();
    const warnings = linesOf(r.logger.lines, 'WARNING', 'context budget headroom too small');
    // The seed's own example: a 20000 budget at 24 steps needs 98304, or 4 steps.
    expect(warnings).toEqual([
      'WARNING context budget headroom too small limit=20000 source=config headroom=10000 turn_growth=49152 max_steps=24 ' +
        'remedy="raise the context budget (ACX_MAX_CONTEXT_TOKENS, --context-tokens) to at least 98304 or lower the step budget (ACX_MAX_STEPS, --max-steps) to 4" ' +
        'note="a turn may overshoot the ceiling before compaction, which runs only between turns; the over-length rescue still applies"',
    ]);
  });

  it("a small ceiling the model itself states is its wall: the remedy is fewer steps, never a bigger budget", async () => {
    const model = { ...(await openaiModel(server)), contextWindowTokens: 32_768 };
    const r = rig(model);
    await r.agent.createSession();
    const [warning] = linesOf(r.logger.lines, 'WARNING', 'context budget headroom too small');
    expect(warning).toMatch(/ limit=32768 source=model headroom=16384 turn_growth=49152 max_steps=24 remedy="lower the step budget \(ACX_MAX_STEPS, --max-steps\) to 8" /);
  });

  it("following the remedy silences it: the seed's 98304 at 24 steps passes, a budget just under does not", async () => {
    const at = async (contextTokens: number) => {
      const r = rig(await openaiModel(server), { harness: { contextTokens } });
      await r.agent.createSession();
      return linesOf(r.logger.lines, 'WARNING', 'context budget headroom too small').length;
    };
    expect(await at(98_304)).toBe(0);
    expect(await at(98_302)).toBe(1);
  });

  it('warns once per agent, not once per session (or turn): the numbers are the same for all of them', async () => {
    const r = rig(await openaiModel(server), { harness: { contextTokens: 32_768 } });
    server.setFallback('fine');
    const first = await r.agent.createSession();
    await r.agent.generate({ session: first, prompt: 'one' });
    await r.agent.generate({ session: first, prompt: 'two' });
    await r.agent.generate({ session: await r.agent.createSession(), prompt: 'three' });
    expect(linesOf(r.logger.lines, 'WARNING', 'context budget headroom too small')).toHaveLength(1);
  });

  it('stays quiet at the 128,000 floor, when disabled, and when the steps fit', async () => {
    for (const harness of [{}, { contextTokens: 0 }, { contextTokens: 20_000, maxSteps: 4 }, { contextTokens: 98_304 }, { warnHeadroom: false, contextTokens: 20_000 }]) {
      const r = rig(await openaiModel(server), { harness });
      await r.agent.createSession();
      expect(linesOf(r.logger.lines, 'WARNING', 'context budget headroom too small'), JSON.stringify(harness)).toEqual([]);
    }
  });

  it('logs the context limit it resolved and where it came from', async () => {
    const r = rig(await openaiModel(server));
    await r.agent.createSession();
    expect(linesOf(r.logger.lines, 'INFO', 'context limit')[0]).toMatch(/limit=128000 source=floor compact_at=64000/);
  });
});
