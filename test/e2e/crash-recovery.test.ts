import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type CaseStore, crashStores, effectsOf, runDriver } from '../support/crash-kit.ts';
import { scaled } from '../support/time-scale.ts';

/**
 * SIGKILLs a real agent process at every durability boundary of a turn and inside tools,
 * restarts it, and checks the exact side effects of the whole run: which calls ran and how often,
 * which were reported as "outcome unknown", and that the journal is well-formed.
 */
const AGENT = join(import.meta.dirname, '../fixtures/agents/crash-agent.ts');
const STORES = crashStores('crash');

const runAgent = (home: string, effects: string, crash: string, store: CaseStore) => runDriver(AGENT, [home, effects, crash], store.env);

async function assertWellFormed(store: CaseStore) {
  const journal = await store.open();
  try {
    const messages = await journal.messages('crash-session');
    const called = new Set<string>();
    const answered = new Set<string>();
    for (const { message } of messages) {
      if (!Array.isArray(message.content)) continue;
      for (const part of message.content as Array<{ type: string; toolCallId?: string }>) {
        if (part.type === 'tool-call') called.add(part.toolCallId!);
        if (part.type === 'tool-result') answered.add(part.toolCallId!);
      }
    }
    expect([...called].sort()).toEqual([...answered].sort());
    const turns = await journal.turns('crash-session');
    expect(turns).toHaveLength(1);
    expect(turns[0]!.status).toBe('done');
    return messages;
  } finally {
    await journal.close();
  }
}

/**
 * What a whole run leaves behind once a process killed at checkpoint `at` has been restarted.
 * The fixture's turn: step 1 calls send(a) [unsafe] and lookup(q) [read-only] in parallel,
 * step 2 calls send(b) [unsafe] and save(k) [idempotent], step 3 replies "all done".
 * Recovery by evidence decides each row:
 *  - a call named in a persisted assistant message but never started runs on resume (3, 10);
 *  - an unsafe call marked started without a result is never run again, and its result says the
 *    outcome is unknown, whether its effect happened before the kill (5, 12) or not (4, 11);
 *  - a read-only or idempotent call that ran without a recorded result runs again (6, 13);
 *  - a persisted model reply is never asked for again (`modelCalls`: calls the restarted process made).
 * The logs hold one line per run of a tool, across both processes.
 */
interface Expected {
  at: number;
  checkpoint: string;
  send: string[];
  lookup: string[];
  save: string[];
  unknown: string[];
  modelCalls: number;
}
const all = { send: ['a', 'b'], lookup: ['q'], save: ['k'], unknown: [] };
const expectations: Expected[] = [
  { at: 1, checkpoint: 'turn-started', ...all, modelCalls: 3 },
  { at: 2, checkpoint: 'model-call 1', ...all, modelCalls: 3 },
  { at: 3, checkpoint: 'assistant-persisted 1', ...all, modelCalls: 2 },
  { at: 4, checkpoint: 'tool-started c1', ...all, send: ['b'], unknown: ['c1'], modelCalls: 2 },
  { at: 5, checkpoint: 'tool-started c2', ...all, unknown: ['c1'], modelCalls: 2 },
  { at: 6, checkpoint: 'tool-finished c1', ...all, lookup: ['q', 'q'], modelCalls: 2 },
  { at: 7, checkpoint: 'tool-finished c2', ...all, modelCalls: 2 },
  { at: 8, checkpoint: 'step-settled 1', ...all, modelCalls: 2 },
  { at: 9, checkpoint: 'model-call 2', ...all, modelCalls: 2 },
  { at: 10, checkpoint: 'assistant-persisted 2', ...all, modelCalls: 1 },
  { at: 11, checkpoint: 'tool-started c3', ...all, send: ['a'], unknown: ['c3'], modelCalls: 1 },
  { at: 12, checkpoint: 'tool-started c4', ...all, unknown: ['c3'], modelCalls: 1 },
  { at: 13, checkpoint: 'tool-finished c3', ...all, save: ['k', 'k'], modelCalls: 1 },
  { at: 14, checkpoint: 'tool-finished c4', ...all, modelCalls: 1 },
  { at: 15, checkpoint: 'step-settled 2', ...all, modelCalls: 1 },
  { at: 16, checkpoint: 'model-call 3', ...all, modelCalls: 1 },
  { at: 17, checkpoint: 'assistant-persisted 3', ...all, modelCalls: 0 },
  { at: 18, checkpoint: 'turn-ended', ...all, modelCalls: 0 },
];

interface AgentOutput {
  text: string;
  checkpoints: string[];
  modelCalls: number;
}

/** The calls whose recorded result tells the model the outcome is unknown. */
function unknownOutcomes(messages: Awaited<ReturnType<typeof assertWellFormed>>): string[] {
  const ids: string[] = [];
  for (const { message } of messages) {
    if (message.role !== 'tool' || !Array.isArray(message.content)) continue;
    for (const part of message.content as Array<{ type: string; toolCallId: string; output: unknown }>) {
      if (part.type === 'tool-result' && /Whether it took effect is unknown/.test(JSON.stringify(part.output))) ids.push(part.toolCallId);
    }
  }
  return ids.sort();
}

// Each case spawns two real processes; on a loaded 2-core machine that can take a while.
describe.each(STORES)('crash recovery (e2e, real processes) on %s', { timeout: scaled(240_000) }, (_name, skip, make) => {
  const test = skip ? it.skip : it.concurrent;
  test(`a clean run passes every checkpoint in order and calls each tool once${skip}`, async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-crash-'));
    const effects = mkdtempSync(join(tmpdir(), 'acx-effects-'));
    const store = make(home);
    const run = await runAgent(home, effects, 'none', store);
    expect(run.status, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout.trim()) as AgentOutput;
    expect(out.text).toBe('all done');
    expect(out.checkpoints).toEqual(expectations.map((e) => e.checkpoint));
    expect(out.modelCalls).toBe(3);
    expect(effectsOf(effects)).toEqual({ send: ['a', 'b'], lookup: ['q'], save: ['k'], upserts: 1 });
    expect(unknownOutcomes(await assertWellFormed(store))).toEqual([]);
  });

  for (const expected of expectations) {
    const { at, checkpoint } = expected;
    test(`killed at checkpoint ${at} (${checkpoint}): resumes to the same answer, each call run as its evidence allows${skip}`, async () => {
      const home = mkdtempSync(join(tmpdir(), 'acx-crash-'));
      const effects = mkdtempSync(join(tmpdir(), 'acx-effects-'));
      const store = make(home);
      const killed = await runAgent(home, effects, `checkpoint:${at}`, store);
      expect(killed.signal).toBe('SIGKILL');
      await store.lapse();
      const resumed = await runAgent(home, effects, 'none', store);
      expect(resumed.status, resumed.stderr).toBe(0);
      const out = JSON.parse(resumed.stdout.trim()) as AgentOutput;
      expect(out.text).toBe('all done');
      expect(effectsOf(effects)).toEqual({ send: expected.send, lookup: expected.lookup, save: expected.save, upserts: 1 });
      expect(unknownOutcomes(await assertWellFormed(store))).toEqual(expected.unknown);
      expect(out.modelCalls).toBe(expected.modelCalls);
    });
  }

  // Killed inside a tool's own code. The parallel sibling in step 1 (send, then lookup) starts
  // after send ran, so a kill inside lookup also leaves send without a result.
  const inside: Array<{ crash: string; title: string } & Omit<Expected, 'at' | 'checkpoint' | 'modelCalls'>> = [
    { crash: 'inside:send:after:1', title: 'an unsafe tool after its effect: not re-run, and the model is told the outcome is unknown', ...all, unknown: ['c1'] },
    { crash: 'inside:send:before:1', title: 'an unsafe tool before its effect: still not re-run (the engine cannot know)', ...all, send: ['b'], unknown: ['c1'] },
    { crash: 'inside:lookup:after:1', title: 'a read-only tool: it is re-run', ...all, lookup: ['q', 'q'], unknown: ['c1'] },
    { crash: 'inside:save:after:1', title: 'an idempotent tool: it is re-run under the same idempotency key', ...all, save: ['k', 'k'], unknown: ['c3'] },
  ];
  for (const expected of inside) {
    test(`killed inside ${expected.title}${skip}`, async () => {
      const home = mkdtempSync(join(tmpdir(), 'acx-crash-'));
      const effects = mkdtempSync(join(tmpdir(), 'acx-effects-'));
      const store = make(home);
      expect((await runAgent(home, effects, expected.crash, store)).signal).toBe('SIGKILL');
      await store.lapse();
      const resumed = await runAgent(home, effects, 'none', store);
      expect(resumed.status, resumed.stderr).toBe(0);
      expect((JSON.parse(resumed.stdout.trim()) as AgentOutput).text).toBe('all done');
      expect(effectsOf(effects)).toEqual({ send: expected.send, lookup: expected.lookup, save: expected.save, upserts: 1 });
      expect(unknownOutcomes(await assertWellFormed(store))).toEqual(expected.unknown);
    });
  }
});
