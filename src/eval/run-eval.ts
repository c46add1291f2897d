import type { HarnessAgent } from '../harness/harness-agent.ts';
import { parseModelSpec, providerApiKey } from '../model/providers.ts';
import { type CaseResult, runCase, type Tokens } from './run-case.ts';
import { type EvalSuite, loadSuite } from './suite.ts';
import { type EvalAgentInfo, type EvalLoadOptions, targetOf } from './target.ts';

/**
 * `runEval()`: every case of a suite against one agent, one after another (a case's latency is
 * its own), and the totals. `acx eval` prints what it returns.
 */
export interface RunEvalOptions extends EvalLoadOptions {
  /** An agent directory, a `.acx` cartridge, "default", or a HarnessAgent you built (its cases cannot replay). */
  agent: string | HarnessAgent;
  /** A suite file's path, or a suite parseSuite/loadSuite returned. */
  suite: string | EvalSuite;
  /** Called as each case ends, e.g. to show progress. */
  onCase?: (result: CaseResult, index: number, count: number) => void;
  abortSignal?: AbortSignal;
}

export interface EvalTotals {
  cases: number;
  passed: number;
  failed: number;
  /** passed / cases, from 0 to 1. */
  passRate: number;
  tokens: Tokens;
  /** The sum of the costs providers stated; null when none did. */
  costUsd: number | null;
  latencyMs: number;
}

export interface EvalReport {
  suite: { name: string; path?: string };
  agent: EvalAgentInfo;
  cases: CaseResult[];
  total: EvalTotals;
}

export async function runEval(options: RunEvalOptions): Promise<EvalReport> {
  const { agent, suite: suiteOrPath, onCase, abortSignal, ...loadOptions } = options;
  const suite = typeof suiteOrPath === 'string' ? loadSuite(suiteOrPath) : suiteOrPath;
  checkJudgeKeys(suite, loadOptions.env);
  const target = targetOf(agent, loadOptions);
  const cases: CaseResult[] = [];
  let info: EvalAgentInfo | undefined;
  for (const [index, evalCase] of suite.cases.entries()) {
    abortSignal?.throwIfAborted();
    const ran = await runCase(target, evalCase, { ...(loadOptions.env ? { env: loadOptions.env } : {}), ...(abortSignal ? { abortSignal } : {}) });
    info ??= ran.agent;
    cases.push(ran.result);
    onCase?.(ran.result, index, suite.cases.length);
  }
  return { suite: { name: suite.name, ...(suite.path ? { path: suite.path } : {}) }, agent: info!, cases, total: totalsOf(cases) };
}

/** A judge without its key would fail every rubric the same way: say so before any case runs. */
function checkJudgeKeys(suite: EvalSuite, env: NodeJS.ProcessEnv | undefined): void {
  const judges = new Set(suite.cases.flatMap((c) => (c.expect.rubric ? [c.expect.rubric.judge] : [])));
  for (const judge of judges) providerApiKey(parseModelSpec(judge).provider, env);
}

const sum = (values: ReadonlyArray<number | null>): number | null =>
  values.every((value) => value === null) ? null : values.reduce<number>((total, value) => total + (value ?? 0), 0);

export function totalsOf(cases: readonly CaseResult[]): EvalTotals {
  const passed = cases.filter((c) => c.passed).length;
  return {
    cases: cases.length,
    passed,
    failed: cases.length - passed,
    passRate: cases.length === 0 ? 0 : passed / cases.length,
    tokens: {
      input: sum(cases.map((c) => c.tokens.input)),
      output: sum(cases.map((c) => c.tokens.output)),
      total: sum(cases.map((c) => c.tokens.total)),
    },
    costUsd: sum(cases.map((c) => c.costUsd)),
    latencyMs: cases.reduce((total, c) => total + c.latencyMs, 0),
  };
}

/** Whether a report's pass rate reaches `minimum` (0 to 1; default 1: every case passes). */
export function meetsPassRate(report: EvalReport, minimum = 1): boolean {
  return report.total.passRate >= minimum - 1e-9;
}
