/**
 * `acx/eval` — evals from what acx records: `runEval()` runs a suite's cases (a prompt each, and
 * what its reply must have: text, tool calls and their arguments, structured output, a judged
 * rubric) against an agent directory, a cartridge or a HarnessAgent, each in a fresh session,
 * live or replayed from a cassette, with tokens, cost and latency; `compareReports()` puts two
 * agents' reports side by side; `loadSuite` / `parseSuite` read and check a suite.
 */
import '../node-guard.ts';
export { runEval, meetsPassRate, totalsOf } from '../eval/run-eval.ts';
export type { EvalReport, EvalTotals, RunEvalOptions } from '../eval/run-eval.ts';
export { compareReports } from '../eval/compare.ts';
export type { CaseChange, CaseComparison, EvalComparison } from '../eval/compare.ts';
export { loadSuite, parseSuite } from '../eval/suite.ts';
export type { CaseExpectations, EvalCase, EvalSuite, RubricExpectation, TextPattern, ToolCallExpectation } from '../eval/suite.ts';
export type { CaseResult, Tokens } from '../eval/run-case.ts';
export type { CheckKind, CheckResult } from '../eval/checks.ts';
export type { JudgeUsage } from '../eval/judge.ts';
export type { EvalAgentInfo, EvalLoadOptions } from '../eval/target.ts';
