// An eval suite in CI, deterministic: the example agent's suite replays the quick start's
// recording (no key, no network), and its figures are the recording's; a case whose prompt is
// not the one recorded fails, naming what differs, while the other cases still run.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseSuite, runEval } from '../../src/exports/eval.ts';
import { QUICKSTART_AGENT, QUICKSTART_CASSETTE, QUICKSTART_PROMPT } from '../../scripts/quickstart.ts';
import type { Cassette } from '../../src/model/cassette.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { scaled } from '../support/time-scale.ts';

const ROOT = join(import.meta.dirname, '../..');
const SUITE = join(ROOT, 'examples/notes-keeper/evals/quickstart.yaml');
const CASSETTE = join(ROOT, QUICKSTART_CASSETTE);

/** A machine with no model key and no acx settings: the replay needs neither. */
const offline = (): NodeJS.ProcessEnv => {
  const home = mkdtempSync(join(tmpdir(), 'acx-eval-replay-'));
  return { PATH: process.env.PATH, HOME: home, ACX_CONFIG_HOME: home };
};

/** Tokens the recording's model calls reported, summed. */
function recordedTokens(): { input: number; output: number } {
  const cassette = JSON.parse(readFileSync(CASSETTE, 'utf8')) as Cassette;
  const finishes = cassette.interactions.flatMap((i) => i.parts as Array<{ type: string; usage?: { inputTokens: { total: number }; outputTokens: { total: number } } }>).filter((p) => p.type === 'finish');
  return { input: finishes.reduce((sum, p) => sum + p.usage!.inputTokens.total, 0), output: finishes.reduce((sum, p) => sum + p.usage!.outputTokens.total, 0) };
}

describe('an eval suite on a replayed cassette', { timeout: scaled(120_000) }, () => {
  it('the example suite passes offline, with the recording\'s tokens', async () => {
    const report = await runEval({ agent: join(ROOT, QUICKSTART_AGENT), suite: SUITE, env: offline(), logger: createMemoryLogger() });
    expect(report.suite).toEqual({ name: 'notes-keeper quick start', path: SUITE });
    const [only] = report.cases;
    expect(only).toMatchObject({ name: 'remembers the freeze and finds the last deploy day', prompt: QUICKSTART_PROMPT, replay: CASSETTE, passed: true, costUsd: null });
    expect(only!.checks.map((check) => `${check.passed ? 'pass' : 'FAIL'} ${check.check} ${check.expected}`)).toEqual([
      'pass textContains "Thursday 10 December"',
      'pass textMatches /before 15:00 utc/i',
      'pass toolCalled memory_write {"key":"release/freeze"} (subset)',
      'pass toolCalled memory_search',
      'pass noToolCalled none of memory_delete',
    ]);
    const { input, output } = recordedTokens();
    expect(only!.tokens).toEqual({ input, output, total: input + output });
    expect(report.total).toMatchObject({ cases: 1, passed: 1, passRate: 1, tokens: { input, output, total: input + output }, costUsd: null });
  });

  it('a case that asks what was not recorded fails with the replay\'s reason; the next case still runs', async () => {
    const suite = parseSuite(
      [
        'cases:',
        '  - name: another prompt',
        '    prompt: When is the freeze?',
        `    replay: ${CASSETTE}`,
        '    expect: { textContains: December }',
        '  - name: the recorded prompt',
        `    prompt: ${QUICKSTART_PROMPT}`,
        `    replay: ${CASSETTE}`,
        '    expect: { textContains: Thursday 10 December }',
      ].join('\n'),
    );
    const report = await runEval({ agent: join(ROOT, QUICKSTART_AGENT), suite, env: offline(), logger: createMemoryLogger() });
    expect(report.cases.map((c) => [c.name, c.passed])).toEqual([['another prompt', false], ['the recorded prompt', true]]);
    expect(report.cases[0]!.error).toEqual({
      code: 'replay-mismatch',
      message: `Replay mismatch at model call 1: the last user text was "${QUICKSTART_PROMPT}", now "When is the freeze?".`,
      hint: 'Replay needs the same agent, prompt and tools as the recorded run; record again with --record to update it.',
    });
  });
});
