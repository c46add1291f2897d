// A suite on an ACP harness: runEval given a HarnessAgent on acx's ACP client, driving the fake
// ACP agent (test/fixtures/acp/fake-agent.ts; its prompt picks what it does). Text, a host tool the
// agent called over MCP, the turn's usage, and structured output the harness cannot give, refused
// as that case's failure.
import { afterAll, describe, expect, it } from 'vitest';
import { createACP } from '../../src/harness/acp/create.ts';
import { HarnessAgent } from '../../src/harness/harness-agent.ts';
import { parseSuite, runEval } from '../../src/exports/eval.ts';
import { echo, fakeProfile, tempCache } from '../harness/acp/fake-profile.ts';
import { scaled } from '../support/time-scale.ts';

const harness = createACP(fakeProfile(tempCache()));
afterAll(() => harness.close?.());

describe('runEval on an ACP harness', { timeout: scaled(120_000) }, () => {
  it('runs each case in a new session of the ACP agent and checks what it did', async () => {
    const agent = new HarnessAgent({ id: 'fake', harness, tools: [echo] });
    const suite = parseSuite(
      [
        'cases:',
        '  - name: greets',
        '    prompt: "[[hello]]"',
        '    expect: { textContains: Hello from the fake agent., noToolCalled: true }',
        '  - name: echoes through a host tool',
        '    prompt: \'[[mcp:echo {"text":"hi"}]]\'',
        '    expect: { toolCalled: { name: echo, args: { text: hi }, match: exact }, textContains: "result=echo:hi" }',
        '  - name: answers as JSON',
        '    prompt: "[[hello]]"',
        '    expect: { outputSchema: { type: object } }',
      ].join('\n'),
    );
    const report = await runEval({ agent, suite });
    expect(report.agent).toEqual({ label: 'fake', harness: 'acp:fake-acp', id: 'fake' });
    expect(report.cases.map((c) => [c.name, c.passed, c.checks.filter((check) => !check.passed).map((check) => check.detail)])).toEqual([
      ['greets', true, []],
      ['echoes through a host tool', true, []],
      ['answers as JSON', false, []],
    ]);
    expect(report.cases[0]!.tokens).toEqual({ input: 11, output: 7, total: 18 });
    expect(report.cases[1]!.toolCalls).toEqual([{ name: 'echo', input: { text: 'hi' } }]);
    expect(report.cases[2]!.error).toMatchObject({ code: 'harness-capability-unsupported', message: 'fake-acp has no structured output mapping; ACP v1 does not standardize structured output.' });
  });
});
