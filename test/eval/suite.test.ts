// An eval suite is checked whole before anything runs: each problem names the file's line, the
// case and the field, and says what is wanted; a valid one reads with its defaults applied.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors.ts';
import { loadSuite, parseSuite } from '../../src/eval/suite.ts';

/** The problems a suite's text is refused with, one per line. */
function problems(text: string): string[] {
  try {
    parseSuite(text, { source: 'suite.yaml', baseDir: '/nowhere' });
  } catch (error) {
    expect(ConfigError.isInstance(error)).toBe(true);
    expect((error as ConfigError).hint).toBe('The suite format: docs/eval.md.');
    const [first, ...rest] = (error as Error).message.split('\n');
    expect(first).toBe('The eval suite is not valid:');
    return rest.map((line) => line.trim());
  }
  throw new Error('the suite was accepted');
}

describe('an eval suite file', () => {
  it('reads a valid suite: one value or a list for each check, subset matching by default, a cassette path from the file\'s directory', () => {
    const dir = mkdtempSync(join(tmpdir(), 'acx-suite-'));
    writeFileSync(join(dir, 'take.json'), JSON.stringify({ format: 'acx.cassette/1', provider: 'openai.responses', modelId: 'm', interactions: [] }));
    writeFileSync(
      join(dir, 'smoke.yaml'),
      [
        'judge: openai:gpt-5.4-mini',
        'cases:',
        '  - prompt: Remember the freeze',
        '    replay: take.json',
        '    expect:',
        '      textContains: freeze',
        '      toolCalled: memory_write',
        '  - name: strict',
        '    prompt: Say hi',
        '    expect:',
        '      textMatches: [hi, { pattern: "^h", flags: i }]',
        '      toolCalled: [{ name: memory_write, args: { key: k }, match: exact }]',
        '      noToolCalled: true',
        '      outputSchema: { $id: "x", type: object }',
        '      rubric: { criteria: Is friendly, judge: "anthropic:claude-haiku-4-5" }',
        '  - prompt: Judge me',
        '    expect: { rubric: Is short }',
      ].join('\n'),
    );
    const suite = loadSuite(join(dir, 'smoke.yaml'));
    expect(suite.name).toBe('smoke');
    expect(suite.cases).toEqual([
      {
        name: 'case 1',
        prompt: 'Remember the freeze',
        replay: join(dir, 'take.json'),
        expect: { textContains: ['freeze'], textMatches: [], toolCalled: [{ name: 'memory_write', match: 'subset' }] },
      },
      {
        name: 'strict',
        prompt: 'Say hi',
        expect: {
          textContains: [],
          textMatches: [{ pattern: 'hi', flags: '' }, { pattern: '^h', flags: 'i' }],
          toolCalled: [{ name: 'memory_write', args: { key: 'k' }, match: 'exact' }],
          noToolCalled: true,
          outputSchema: { type: 'object' }, // $id dropped: two cases may reuse one
          rubric: { criteria: 'Is friendly', judge: 'anthropic:claude-haiku-4-5' },
        },
      },
      { name: 'case 3', prompt: 'Judge me', expect: { textContains: [], textMatches: [], toolCalled: [], rubric: { criteria: 'Is short', judge: 'openai:gpt-5.4-mini' } } },
    ]);
  });

  it('names the line, the case and the field of each problem the schema finds', () => {
    expect(
      problems(
        [
          'cases:',
          '  - name: writes',
          '    prompt: Remember it',
          '    expect:',
          '      toolCalled: { name: 3, args: [1] }',
          '      textContains: []',
          '  - name: empty',
          '    prompt: ""',
          '    expect: { noToolCalled: false }',
          '  - prompt: typo',
          '    expct: {}',
        ].join('\n'),
      ),
    ).toEqual([
      'suite.yaml:5: case 1 ("writes"): expect.toolCalled.name: must be text',
      "suite.yaml:5: case 1 (\"writes\"): expect.toolCalled.args: must be an object of the call's arguments, e.g. {path: notes.md}",
      'suite.yaml:6: case 1 ("writes"): expect.textContains: must not be an empty list',
      'suite.yaml:8: case 2 ("empty"): prompt: must not be empty',
      'suite.yaml:9: case 2 ("empty"): expect.noToolCalled: must be true (no tool at all) or a list of tool names',
      'suite.yaml:10: case 3: expect: missing',
      'suite.yaml:10: case 3: unknown field "expct"',
    ]);
  });

  it('then what a schema cannot say: a regular expression, a JSON Schema, a judge, a cassette, names', () => {
    expect(
      problems(
        [
          'cases:',
          '  - name: same',
          '    prompt: a',
          '    expect:',
          '      textMatches: "(unclosed"',
          '      toolCalled: { name: t, argsSchema: { type: object, required: 3 } }',
          '  - name: same',
          '    prompt: b',
          '    replay: missing.json',
          '    expect: { rubric: Is kind }',
          '  - prompt: c',
          '    expect: { rubric: { criteria: Is kind, judge: gpt4 } }',
          '  - prompt: d',
          '    expect: {}',
        ].join('\n'),
      ),
    ).toEqual([
      'suite.yaml:5: case 1 ("same"): expect.textMatches: not a valid regular expression: Invalid regular expression: /(unclosed/: Unterminated group',
      'suite.yaml:6: case 1 ("same"): expect.toolCalled.argsSchema: Invalid JSON Schema: data/required must be array',
      'suite.yaml:7: case 2 ("same"): name: the name "same" is case 1\'s too; give each case its own name',
      'suite.yaml:9: case 2 ("same"): replay: no cassette at /nowhere/missing.json (a relative path starts at the suite file\'s directory)',
      'suite.yaml:10: case 2 ("same"): expect.rubric: a rubric needs a judge model: set judge: provider:model-id on the suite, or write {criteria, judge}',
      'suite.yaml:12: case 3: expect.rubric.judge: "gpt4" is not a model spec. (write provider:model-id, e.g. openai:gpt-5.4-mini)',
      'suite.yaml:14: case 4: expect: expects nothing: add at least one check',
    ]);
  });

  it('refuses what is not YAML, or not a suite, saying so', () => {
    const notYaml = problems('cases: [\n  - prompt: a');
    expect(notYaml.length).toBeGreaterThan(0);
    for (const line of notYaml) expect(line).toMatch(/^suite\.yaml:2: .+ \(not valid YAML\)$/);
    expect(problems('- just a list')).toEqual(['suite.yaml:1: the suite must be a map with cases (and optionally suite and judge)']);
    expect(problems('cases: []')).toEqual(['suite.yaml:1: cases: must hold at least one case']);
    expect(() => loadSuite('/nowhere/suite.yaml')).toThrow(/^Cannot read the eval suite \/nowhere\/suite\.yaml: ENOENT/);
  });
});
