// runEval against the local model server: every kind of check passing and failing, a judged
// rubric (the judge is a model call too: on the OpenAI wire, while the agent runs on OpenRouter's,
// which states each call's cost), tokens and cost per case and in total, a turn that fails, and
// each case on fresh state: what one case writes to memory, the next does not see.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngineHarness } from '../../src/harness/engine-harness.ts';
import { HarnessAgent } from '../../src/harness/harness-agent.ts';
import { meetsPassRate, parseSuite, runEval } from '../../src/exports/eval.ts';
import { BRIEF_TAG } from '../../src/model/brief-tag.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { type ModelServer, type RecordedRequest, type ScriptedResponse, startModelServer } from '../support/model-server.ts';
import { scriptedModel } from '../support/scripted-model.ts';
import { scaled } from '../support/time-scale.ts';

const ROOT = join(import.meta.dirname, '../..');
const AGENT = join(ROOT, 'examples/notes-keeper');
const USAGE = { inputTokens: 100, outputTokens: 10, cost: 0.001 };

const userText = (request: RecordedRequest) => request.view.messages.filter((m) => m.role === 'user').map((m) => m.text).join('\n');
const toolResults = (request: RecordedRequest) => request.view.messages.flatMap((m) => m.toolResults ?? []);

/** The agent's model: each case's prompt picks its answers; a second step sees the first's tool results. */
function agentModel(request: RecordedRequest): ScriptedResponse {
  const user = userText(request);
  const results = toolResults(request);
  if (user.includes('Remember that the plant is called Fern')) {
    return results.length === 0 ? { toolCalls: [{ name: 'memory_write', input: { key: 'plant', value: 'The plant is called Fern' } }], usage: USAGE } : { text: 'Noted: the plant is called Fern.', usage: USAGE };
  }
  if (user.includes('What is the plant called?')) {
    return results.length === 0 ? { toolCalls: [{ name: 'memory_search', input: { query: 'plant' } }], usage: USAGE } : { text: `My memory says: ${results[0]!.output}`, usage: USAGE };
  }
  if (user.includes('Say hello')) return { text: 'Hello! I keep the team notes.', usage: USAGE };
  if (user.includes('Say goodbye')) return { text: 'Goodbye!', usage: USAGE };
  if (user.includes('as JSON')) return { text: '{"day": "Thursday"}', usage: USAGE };
  if (user.includes('When is the party?')) return { text: 'I do not know.', usage: USAGE };
  if (user.includes('Break')) return { fail: { status: 400, message: 'the request is malformed' } };
  throw new Error(`no answer scripted for: ${user}`);
}

/** The judge's model: passes a reply that greets; a farewell leaves it undecided (no verdict). */
function judgeModel(request: RecordedRequest): ScriptedResponse {
  if (userText(request).includes('<reply>\nGoodbye!')) return { text: 'Hard to say.' };
  const passes = userText(request).includes('<reply>\nHello!');
  return { text: JSON.stringify({ pass: passes, reason: passes ? 'It greets the user.' : 'It names no day.' }), usage: { inputTokens: 50, outputTokens: 5 } };
}

let model: ModelServer;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  model = await startModelServer({ fallback: (request) => (request.wire === 'openai-responses' ? judgeModel(request) : agentModel(request)) });
  const home = mkdtempSync(join(tmpdir(), 'acx-eval-'));
  env = {
    PATH: process.env.PATH,
    HOME: home,
    ACX_CONFIG_HOME: home,
    ACX_MODEL: 'openrouter:vendor/model',
    OPENROUTER_API_KEY: 'sk-or-test-0123456789',
    OPENROUTER_BASE_URL: model.openaiBaseURL,
    OPENAI_API_KEY: 'sk-judge-test',
    OPENAI_BASE_URL: model.openaiBaseURL,
    ACX_CONTEXT_TOKENS: '64000',
  };
});
afterAll(() => model?.close());

const SUITE = `
suite: live
judge: openai:judge-model
cases:
  - name: remembers
    prompt: Remember that the plant is called Fern.
    expect:
      textContains: Fern
      textMatches: { pattern: "^noted", flags: i }
      toolCalled:
        - { name: memory_write, args: { key: plant } }
        - { name: memory_write, args: { key: plant }, match: exact }
        - { name: memory_write, argsSchema: { type: object, required: [key, value], properties: { value: { pattern: "Fern$" } } } }
      noToolCalled: [memory_delete]
  - name: greets
    prompt: Say hello.
    expect:
      noToolCalled: true
      rubric: The reply greets the user.
  - name: answers in JSON
    prompt: Which day is the deploy? Answer as JSON.
    expect:
      outputSchema: { type: object, required: [day], properties: { day: { type: string } } }
  - name: fresh memory
    prompt: What is the plant called?
    expect:
      toolCalled: memory_search
      textContains: Fern
  - name: knows the party
    prompt: When is the party?
    expect:
      toolCalled: memory_search
      rubric: The reply names a day.
  - name: breaks
    prompt: Break, please.
    expect:
      textContains: anything
`;

describe('runEval on the local model server', { timeout: scaled(120_000) }, () => {
  it('runs each case in a fresh session on fresh state and reports every check, tokens, cost and latency', async () => {
    const seen: string[] = [];
    const report = await runEval({ agent: AGENT, suite: parseSuite(SUITE), env, logger: createMemoryLogger(), onCase: (result, index, count) => seen.push(`${index + 1}/${count} ${result.name}`) });
    expect(seen).toEqual(['1/6 remembers', '2/6 greets', '3/6 answers in JSON', '4/6 fresh memory', '5/6 knows the party', '6/6 breaks']);
    expect(report.suite).toEqual({ name: 'live' });
    expect(report.agent).toEqual({ label: AGENT, harness: 'engine', id: 'notes-keeper', version: '0.1.0' });
    const outcomes = report.cases.map((c) => ({ name: c.name, passed: c.passed, checks: c.checks.map((check) => [check.check, check.expected, check.passed, check.detail]) }));
    expect(outcomes).toEqual([
      {
        name: 'remembers',
        passed: false,
        checks: [
          ['textContains', '"Fern"', true, 'the reply contains it'],
          ['textMatches', '/^noted/i', true, 'the reply matches it'],
          ['toolCalled', 'memory_write {"key":"plant"} (subset)', true, 'called with {"key":"plant","value":"The plant is called Fern"}'],
          ['toolCalled', 'memory_write {"key":"plant"} (exact)', false, 'memory_write was called once, never with matching arguments: {"key":"plant","value":"The plant is called Fern"}'],
          ['toolCalled', 'memory_write args valid for the schema', true, 'called with {"key":"plant","value":"The plant is called Fern"}'],
          ['noToolCalled', 'none of memory_delete', true, 'none of them was called'],
        ],
      },
      {
        name: 'greets',
        passed: true,
        checks: [
          ['noToolCalled', 'no tool', true, 'no tool was called'],
          ['rubric', 'The reply greets the user.', true, 'openai:judge-model: It greets the user.'],
        ],
      },
      { name: 'answers in JSON', passed: true, checks: [['outputSchema', 'output valid for the schema', true, 'it is']] },
      {
        name: 'fresh memory',
        passed: false,
        checks: [
          // Case 1 wrote the plant's name to memory; this case's memory has only the agent's seeds.
          ['textContains', '"Fern"', false, 'the reply does not contain it'],
          ['toolCalled', 'memory_search', true, 'called with {"query":"plant"}'],
        ],
      },
      {
        name: 'knows the party',
        passed: false,
        checks: [
          ['toolCalled', 'memory_search', false, 'memory_search was not called (no tool was called)'],
          ['rubric', 'The reply names a day.', false, 'openai:judge-model: It names no day.'],
        ],
      },
      { name: 'breaks', passed: false, checks: [] },
    ]);
    const [remembers, greets, json, fresh, , breaks] = report.cases;
    expect(remembers!.toolCalls).toEqual([{ name: 'memory_write', input: { key: 'plant', value: 'The plant is called Fern' } }]);
    expect(json!.output).toEqual({ day: 'Thursday' });
    expect(fresh!.reply).toMatch(/^My memory says: /);
    expect(breaks!.error).toMatchObject({ message: expect.stringContaining('the request is malformed') });
    expect(breaks!.reply).toBe('');

    // Two model calls for a case that used a tool, one otherwise; each 100 in, 10 out, $0.001.
    expect(remembers!.tokens).toEqual({ input: 200, output: 20, total: 220 });
    expect(remembers!.costUsd).toBeCloseTo(0.002, 10);
    expect(greets!.tokens).toEqual({ input: 100, output: 10, total: 110 });
    expect(greets!.costUsd).toBeCloseTo(0.001, 10);
    // The judge's call is its own, not the agent's.
    expect(greets!.judge).toMatchObject({ model: 'openai:judge-model', usage: { inputTokens: 50, outputTokens: 5, totalTokens: 55 } });
    expect(breaks!.tokens).toEqual({ input: null, output: null, total: null });
    expect(breaks!.costUsd).toBeNull();
    for (const c of report.cases) expect(c.latencyMs).toBeGreaterThanOrEqual(0);

    expect(report.total).toMatchObject({ cases: 6, passed: 2, failed: 4, passRate: 2 / 6, tokens: { input: 700, output: 70, total: 770 } });
    expect(report.total.costUsd).toBeCloseTo(0.007, 10);
    expect(report.total.latencyMs).toBe(report.cases.reduce((sum, c) => sum + c.latencyMs, 0));
    expect(meetsPassRate(report)).toBe(false);
    expect(meetsPassRate(report, 0.33)).toBe(true);

    // Each case is its own session: every first request of a case carries one message of the user's.
    const firstRequests = model.requests.filter((r) => r.wire === 'openai-chat' && toolResults(r).length === 0);
    for (const request of firstRequests) expect(request.view.messages.filter((m) => m.role === 'user' && !m.text.startsWith(BRIEF_TAG)).length).toBe(1);
    // The judge read the case's message, the tool calls and the reply, as material between tags.
    const judged = model.requests.find((r) => r.wire === 'openai-responses')!;
    expect(userText(judged)).toBe(
      '<rubric>\nThe reply greets the user.\n</rubric>\n\n<user_message>\nSay hello.\n</user_message>\n\n<tool_calls>\n(none)\n</tool_calls>\n\n<reply>\nHello! I keep the team notes.\n</reply>',
    );
  });

  it('refuses a tool call that asks for approval, records it, and tells the model why', async () => {
    const suite = parseSuite('cases:\n  - prompt: Remember that the plant is called Fern.\n    expect: { toolCalled: memory_write }');
    const before = model.requests.length;
    const report = await runEval({ agent: AGENT, suite, env, permissionMode: 'allow-reads', logger: createMemoryLogger() });
    expect(report.cases[0]!.deniedApprovals).toEqual(['memory_write']);
    // Called, though not run: the check is about what the model did.
    expect(report.cases[0]!.passed).toBe(true);
    const answered = model.requests.slice(before).find((r) => toolResults(r).length > 0)!;
    expect(toolResults(answered)[0]!.output).toContain('memory_write needs an approval, and an eval runs with nobody to give one; the call was not run.');
  });

  it('fails a rubric whose judge answers no verdict, saying so', async () => {
    const suite = parseSuite('judge: openai:judge-model\ncases:\n  - prompt: Say goodbye.\n    expect: { rubric: Says goodbye }');
    const report = await runEval({ agent: AGENT, suite, env, logger: createMemoryLogger() });
    const [check] = report.cases[0]!.checks;
    expect(check).toMatchObject({ check: 'rubric', expected: 'Says goodbye', passed: false });
    expect(check!.detail).toMatch(/^the judge openai:judge-model gave no verdict: No object generated: could not parse the response\./);
    expect(report.cases[0]!.passed).toBe(false);
  });

  it('stops before any case when a judge has no key', async () => {
    const suite = parseSuite('judge: anthropic:claude-haiku-4-5\ncases:\n  - prompt: Say hello.\n    expect: { rubric: Greets }');
    const before = model.requests.length;
    await expect(runEval({ agent: AGENT, suite, env, logger: createMemoryLogger() })).rejects.toThrow(/ANTHROPIC_API_KEY/);
    expect(model.requests.length).toBe(before);
  });

  it('runs on a HarnessAgent the caller built, a new session per case; a case that replays needs a loadable agent', async () => {
    const scripted = scriptedModel((options) => {
      const user = JSON.stringify(options.prompt.filter((m) => m.role === 'user'));
      return { text: user.includes('first') ? 'one' : 'two' };
    });
    const agent = new HarnessAgent({ id: 'mine', harness: createEngineHarness({ model: scripted, home: mkdtempSync(join(tmpdir(), 'acx-eval-own-')) }) });
    const report = await runEval({ agent, suite: parseSuite('cases:\n  - prompt: the first\n    expect: { textContains: one }\n  - prompt: the second\n    expect: { textContains: two }') });
    expect(report.agent).toEqual({ label: 'mine', harness: 'engine', id: 'mine' });
    expect(report.cases.map((c) => [c.reply, c.passed])).toEqual([['one', true], ['two', true]]);
    // The second case's request holds only its own message: a new session.
    expect(JSON.stringify(scripted.calls[1]!.prompt)).not.toContain('the first');

    const replayed = parseSuite(`cases:\n  - prompt: hi\n    replay: ${join(ROOT, 'examples/notes-keeper/cassettes/quickstart.json')}\n    expect: { textContains: hi }`);
    await expect(runEval({ agent, suite: replayed })).rejects.toThrow('Case "case 1" replays a cassette, which needs an agent directory or cartridge to load on it.');
  });
});
