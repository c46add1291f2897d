// `acx eval` as a user runs it: the example suite offline (a replayed cassette) as a table and as
// JSON; the exit code against --min-pass-rate; a bad suite refused with the line, case and field;
// and --compare of two versions of a cartridge, each built with `acx build`, on the local model
// server: both columns side by side and what changed.
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/frontends/cli/output.ts';
import { EXAMPLE_AGENT, freshMachineEnv, localModelEnv, ROOT, runAcx, tempDir } from '../support/cartridge-fixtures.ts';
import { STACK_FRAME } from '../support/cli.ts';
import { type ModelServer, type RecordedRequest, startModelServer } from '../support/model-server.ts';
import { scaled } from '../support/time-scale.ts';

const AGENT = 'examples/notes-keeper';
const SUITE = 'examples/notes-keeper/evals/quickstart.yaml';
const CASSETTE = join(ROOT, 'examples/notes-keeper/cassettes/quickstart.json');

/** A fresh machine whose state and config live in `home`: no key, no acx settings. */
const offline = (home: string): NodeJS.ProcessEnv => ({ ...freshMachineEnv(), HOME: home, ACX_HOME: join(home, 'state'), ACX_CONFIG_HOME: join(home, 'config') });
/** Latencies differ run to run: the table with each one replaced by `N.NN s`. */
const steady = (table: string) => table.replace(/\d+\.\d\d s\b/g, 'N.NN s');

describe('acx eval (e2e)', { timeout: scaled(180_000) }, () => {
  it('runs the example suite offline: a table with the pass rate, tokens, cost and latency, or JSON', async () => {
    const home = tempDir('acx-eval-cli-');
    const table = await runAcx(['eval', AGENT, SUITE], offline(home));
    expect(table.code, table.stderr).toBe(0);
    expect(table.stderr).toBe('');
    expect(steady(table.stdout)).toBe(
      [
        `notes-keeper quick start: ${AGENT} (notes-keeper 0.1.0, engine)`,
        '',
        'case                                                result  tokens  cost  latency',
        'remembers the freeze and finds the last deploy day  pass      3282     -   N.NN s',
        '',
        'total: 1 of 1 passed (100%), 3282 tokens, -, N.NN s',
        '',
      ].join('\n'),
    );
    const json = await runAcx(['eval', AGENT, SUITE, '--json'], offline(home));
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout);
    expect(report).toMatchObject({
      suite: { name: 'notes-keeper quick start', path: SUITE },
      agent: { label: AGENT, harness: 'engine', id: 'notes-keeper', version: '0.1.0' },
      cases: [{ name: 'remembers the freeze and finds the last deploy day', passed: true, replay: CASSETTE, tokens: { input: 3170, output: 112, total: 3282 }, costUsd: null }],
      total: { cases: 1, passed: 1, failed: 0, passRate: 1, tokens: { total: 3282 }, costUsd: null },
    });
    expect(report.cases[0].toolCalls.map((call: { name: string }) => call.name)).toEqual(['memory_write', 'memory_search']);
  });

  it('exits 1 when the pass rate is below --min-pass-rate (default: every case), saying why on stderr', async () => {
    const home = tempDir('acx-eval-cli-');
    const suite = join(home, 'strict.yaml');
    writeFileSync(
      suite,
      [
        'cases:',
        '  - name: recorded',
        '    prompt: Remember that the release freeze starts on 12 December. When can we still deploy before it?',
        `    replay: ${CASSETTE}`,
        '    expect:',
        '      textContains: Friday',
        '      noToolCalled: true',
      ].join('\n'),
    );
    const failed = await runAcx(['eval', AGENT, suite], offline(home));
    expect(failed.code).toBe(EXIT.failure);
    expect(steady(failed.stdout)).toBe(
      [
        `strict: ${AGENT} (notes-keeper 0.1.0, engine)`,
        '',
        'case      result  tokens  cost  latency',
        'recorded  FAIL      3282     -   N.NN s',
        '  ✗ textContains "Friday": the reply does not contain it',
        '  ✗ noToolCalled no tool: the turn called memory_write, memory_search',
        '',
        'total: 0 of 1 passed (0%), 3282 tokens, -, N.NN s',
        '',
      ].join('\n'),
    );
    expect(failed.stderr).toBe('acx eval: 1 of 1 case(s) failed, a pass rate of 0% (needed: 100%)\n');
    // Under --json stdout is the report alone; the exit code says it fell short.
    const json = await runAcx(['eval', AGENT, suite, '--json'], offline(home));
    expect(json.code).toBe(EXIT.failure);
    expect(json.stderr).toBe('');
    expect(JSON.parse(json.stdout).total).toMatchObject({ passed: 0, failed: 1, passRate: 0 });
    const lenient = await runAcx(['eval', AGENT, suite, '--min-pass-rate', '0%'], offline(home));
    expect(lenient.code, lenient.stderr).toBe(0);
    const wrong = await runAcx(['eval', AGENT, suite, '--min-pass-rate', '120%'], offline(home));
    expect(wrong.code).toBe(EXIT.usage);
    expect(wrong.stderr).toBe('acx: --min-pass-rate: must be a share from 0 to 1 (e.g. 0.8) or a percentage from 0% to 100% (got "120%")\n  → run `acx eval --help` for its usage\n');
  });

  it('refuses a suite with a problem before running anything: the line, the case, the field, and no stack trace', async () => {
    const home = tempDir('acx-eval-cli-');
    const suite = join(home, 'bad.yaml');
    writeFileSync(suite, 'cases:\n  - name: typo\n    prompt: hi\n    expect:\n      toolCaled: memory_write\n');
    const run = await runAcx(['eval', AGENT, suite], offline(home));
    expect(run.code).toBe(EXIT.failure);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(`acx: The eval suite is not valid:\n  ${suite}:5: case 1 ("typo"): expect: unknown field "toolCaled"\n  → The suite format: docs/eval.md.\n`);
    expect(run.stderr).not.toMatch(STACK_FRAME);
  });

  describe('--compare of two cartridge versions built with acx build', () => {
    let model: ModelServer;
    beforeAll(async () => {
      // Version 0.3.0's instructions ask for French: the model answers as told.
      const french = (request: RecordedRequest) => request.view.system.join('\n').includes('Always answer in French.');
      model = await startModelServer({ fallback: (request) => (french(request) ? 'Nous déployons le mardi et le jeudi.' : 'We deploy on Tuesdays and Thursdays.') });
    });
    afterAll(() => model?.close());

    it('shows both versions side by side, and what changed from the first to the second', async () => {
      const home = tempDir('acx-eval-compare-');
      const env = { ...localModelEnv(home, model.openaiBaseURL), HOME: home };
      const keygen = await runAcx(['keygen', '-o', join(home, 'keys'), '--trust', '--publisher', 'dev.acx.examples'], env, { fresh: true });
      expect(keygen.code, keygen.stderr).toBe(0);
      const versions: Record<string, string> = {};
      for (const [version, extra] of [['0.2.0', ''], ['0.3.0', '\nAlways answer in French.\n']] as const) {
        const dir = join(home, `src-${version}`);
        cpSync(EXAMPLE_AGENT, dir, { recursive: true });
        const manifest = JSON.parse(readFileSync(join(dir, 'agent.json'), 'utf8'));
        writeFileSync(join(dir, 'agent.json'), JSON.stringify({ ...manifest, version }, null, 2));
        writeFileSync(join(dir, 'prompts/system-prompt.md'), `${readFileSync(join(dir, 'prompts/system-prompt.md'), 'utf8')}${extra}`);
        versions[version] = join(home, `notes-keeper-${version}.acx`);
        const build = await runAcx(['build', dir, '-o', versions[version]!, '--key', join(home, 'keys/acx-signing.key.pem')], env, { fresh: true });
        expect(build.code, build.stderr).toBe(0);
      }
      const suite = join(home, 'suite.yaml');
      writeFileSync(
        suite,
        ['suite: deploy questions', 'cases:', '  - name: names the deploy days', '    prompt: When do we deploy?', '    expect: { textContains: Tuesdays }', '  - name: calls no tool', '    prompt: Hello', '    expect: { noToolCalled: true }'].join('\n'),
      );
      const [a, b] = [versions['0.2.0']!, versions['0.3.0']!];
      const built = [readFileSync(a), readFileSync(b)];
      const run = await runAcx(['eval', a, suite, '--compare', b], env, { fresh: true });
      expect(run.code).toBe(EXIT.failure); // version 0.3.0 fails a case
      const lines = steady(run.stdout).split('\n');
      expect(lines.slice(0, 4)).toEqual(['deploy questions', `A: ${a} (notes-keeper 0.2.0, engine)`, `B: ${b} (notes-keeper 0.3.0, engine)`, '']);
      expect(lines[4]!.split(/\s{2,}/)).toEqual(['case', 'A', 'B', 'tokens A', 'tokens B', 'cost A', 'cost B', 'latency A', 'latency B', 'change']);
      expect(lines[5]!.split(/\s{2,}/)).toEqual(['names the deploy days', 'pass', 'FAIL', expect.stringMatching(/^\d+$/), expect.stringMatching(/^\d+$/), '-', '-', 'N.NN s', 'N.NN s', 'now fails']);
      expect(lines[6]).toBe('  textContains "Tuesdays": pass → FAIL (the reply does not contain it)');
      expect(lines[7]!.split(/\s{2,}/)).toEqual(['calls no tool', 'pass', 'pass', expect.stringMatching(/^\d+$/), expect.stringMatching(/^\d+$/), '-', '-', 'N.NN s', 'N.NN s']);
      expect(lines.slice(8)).toEqual(['', expect.stringMatching(/^total A: 2 of 2 passed \(100%\), \d+ tokens, -, N\.NN s$/), expect.stringMatching(/^total B: 1 of 2 passed \(50%\), \d+ tokens, -, N\.NN s$/), '']);
      expect(run.stderr).toBe(`acx eval: ${b}: 1 of 2 case(s) failed, a pass rate of 50% (needed: 100%)\n`);

      const json = await runAcx(['eval', a, suite, '--compare', b, '--json', '--min-pass-rate', '0.5'], env, { fresh: true });
      expect(json.code, json.stderr).toBe(0);
      const comparison = JSON.parse(json.stdout);
      expect(comparison.a.agent).toMatchObject({ label: a, version: '0.2.0' });
      expect(comparison.b.agent).toMatchObject({ label: b, version: '0.3.0' });
      expect(comparison.cases.map((c: { name: string; change: string; a: { reply: string }; b: { reply: string } }) => [c.name, c.change, c.b.reply])).toEqual([
        ['names the deploy days', 'now-fails', 'Nous déployons le mardi et le jeudi.'],
        ['calls no tool', 'same', 'Nous déployons le mardi et le jeudi.'],
      ]);
      // Running the suites wrote nothing into either cartridge (no SAVE zone: each case ran on a copy).
      expect(readFileSync(a).equals(built[0]!)).toBe(true);
      expect(readFileSync(b).equals(built[1]!)).toBe(true);
    });
  });
  // The judge calls the model through the AI SDK's generateText, which the CLI bundle keeps in a
  // chunk of its own (src/model/ai-calls.ts): CI runs this file again on the bundle.
  describe('a rubric', () => {
    let model: ModelServer;
    const userText = (request: RecordedRequest) => request.view.messages.filter((m) => m.role === 'user').map((m) => m.text).join('\n');
    beforeAll(async () => {
      model = await startModelServer({
        fallback: (request) => {
          const asked = userText(request);
          if (!asked.includes('<rubric>')) return 'We deploy on Tuesdays and Thursdays.';
          const pass = asked.includes('<reply>\nWe deploy on Tuesdays');
          return { text: JSON.stringify({ pass, reason: pass ? 'It names the deploy days.' : 'It names no day.' }), usage: { inputTokens: 40, outputTokens: 6 } };
        },
      });
    });
    afterAll(() => model?.close());

    it("is judged by the suite's judge model, whose verdict and reason the report gives", async () => {
      const home = tempDir('acx-eval-rubric-');
      const env = { ...localModelEnv(home, model.openaiBaseURL), HOME: home };
      const suite = join(home, 'suite.yaml');
      writeFileSync(
        suite,
        ['suite: judged', 'judge: openai:judge-model', 'cases:', '  - name: names the days', '    prompt: When do we deploy?', '    expect: { rubric: The reply names the deploy days. }'].join('\n'),
      );
      const run = await runAcx(['eval', AGENT, suite, '--json'], env, { fresh: true });
      expect(run.code, run.stderr).toBe(0);
      const report = JSON.parse(run.stdout);
      expect(report.cases[0].checks).toEqual([
        expect.objectContaining({ check: 'rubric', expected: 'The reply names the deploy days.', passed: true, detail: 'openai:judge-model: It names the deploy days.' }),
      ]);
      expect(report.cases[0].judge).toMatchObject({ model: 'openai:judge-model', usage: { inputTokens: 40, outputTokens: 6 } });
      const judged = model.requests.filter((request) => userText(request).includes('<rubric>'));
      expect(judged.map((request) => request.view.model)).toEqual(['judge-model']);
    });
  });
});
