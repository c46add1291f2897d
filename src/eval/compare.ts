import { AcxError } from '../core/errors.ts';
import type { CaseResult } from './run-case.ts';
import type { EvalReport } from './run-eval.ts';

/**
 * Two reports of one suite side by side (two agents, or two versions of a cartridge): per case,
 * whether each passed and what changed from the first to the second — the verdict, and each
 * check whose outcome differs.
 */
export type CaseChange = 'same' | 'now-passes' | 'now-fails';

export interface CaseComparison {
  name: string;
  a: CaseResult;
  b: CaseResult;
  change: CaseChange;
  /** One line per check (or turn error) whose outcome differs between the two, e.g. `toolCalled memory_write: pass → FAIL (…)`. */
  differences: string[];
}

export interface EvalComparison {
  suite: EvalReport['suite'];
  a: EvalReport;
  b: EvalReport;
  cases: CaseComparison[];
}

const verdict = (passed: boolean) => (passed ? 'pass' : 'FAIL');

function differencesOf(a: CaseResult, b: CaseResult): string[] {
  const lines: string[] = [];
  if (a.error?.message !== b.error?.message) {
    lines.push(`turn: ${a.error ? `error (${a.error.message})` : 'ran'} → ${b.error ? `error (${b.error.message})` : 'ran'}`);
  }
  // Checks line up by position: both ran the same case's expectations, in the same order.
  for (const [index, check] of a.checks.entries()) {
    const other = b.checks[index];
    if (!other || other.passed === check.passed) continue;
    lines.push(`${check.check} ${check.expected}: ${verdict(check.passed)} → ${verdict(other.passed)} (${other.detail})`);
  }
  return lines;
}

export function compareReports(a: EvalReport, b: EvalReport): EvalComparison {
  const names = (report: EvalReport) => report.cases.map((c) => c.name).join('\n');
  if (names(a) !== names(b)) {
    throw new AcxError('usage', 'The two reports are not of the same suite: their cases differ.', { hint: 'Compare reports of one suite, run against each agent.' });
  }
  const cases = a.cases.map((caseA, index): CaseComparison => {
    const caseB = b.cases[index]!;
    const change: CaseChange = caseA.passed === caseB.passed ? 'same' : caseB.passed ? 'now-passes' : 'now-fails';
    return { name: caseA.name, a: caseA, b: caseB, change, differences: differencesOf(caseA, caseB) };
  });
  return { suite: a.suite, a, b, cases };
}
