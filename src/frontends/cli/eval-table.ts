import type { EvalComparison } from '../../eval/compare.ts';
import type { CaseResult } from '../../eval/run-case.ts';
import type { EvalReport, EvalTotals } from '../../eval/run-eval.ts';
import type { EvalAgentInfo } from '../../eval/target.ts';

/**
 * `acx eval`'s report for a terminal: one row per case (verdict, tokens, cost, latency), each
 * failed check or turn error under its case, and the totals; with --compare, both agents' columns
 * and what changed from the first to the second.
 */
const DASH = '-';

export const formatTokens = (tokens: number | null): string => (tokens === null ? DASH : String(tokens));
export const formatCost = (usd: number | null): string => (usd === null ? DASH : usd >= 0.01 ? `$${usd.toFixed(2)}` : `$${Number(usd.toPrecision(2))}`);
export const formatLatency = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
const verdict = (c: CaseResult): string => (c.passed ? 'pass' : 'FAIL');
const percent = (rate: number): string => `${Math.round(rate * 100)}%`;

/** Columns padded to their widest cell; those in `right` aligned right (numbers). The last is not padded. */
function table(rows: string[][], right: ReadonlySet<number>): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  const line = (row: string[]) =>
    row
      .map((cell, column) => (right.has(column) ? cell.padStart(widths[column]!) : column === row.length - 1 ? cell : cell.padEnd(widths[column]!)))
      .join('  ')
      .trimEnd();
  return rows.map(line).join('\n');
}

function describeAgent(agent: EvalAgentInfo): string {
  const identity = agent.id ? `${agent.id}${agent.version ? ` ${agent.version}` : ''}, ` : '';
  return `${agent.label} (${identity}${agent.harness})`;
}

/** The lines under a failed case: its turn error, or each check that failed. */
function failureLines(c: CaseResult, indent = '  '): string[] {
  if (c.error) return [`${indent}✗ the turn failed: ${c.error.message}`];
  return c.checks.filter((check) => !check.passed).map((check) => `${indent}✗ ${check.check} ${check.expected}: ${check.detail}`);
}

function totalLine(total: EvalTotals): string {
  return `${total.passed} of ${total.cases} passed (${percent(total.passRate)}), ${formatTokens(total.tokens.total)} tokens, ${formatCost(total.costUsd)}, ${formatLatency(total.latencyMs)}`;
}

export function renderReport(report: EvalReport): string {
  const rows = [['case', 'result', 'tokens', 'cost', 'latency']];
  for (const c of report.cases) rows.push([c.name, verdict(c), formatTokens(c.tokens.total), formatCost(c.costUsd), formatLatency(c.latencyMs)]);
  // The columns are sized over the cases' rows alone; a failed case's reasons go under its row.
  const lines = table(rows, new Set([2, 3, 4])).split('\n');
  const out = [`${report.suite.name}: ${describeAgent(report.agent)}`, '', lines[0]!];
  report.cases.forEach((c, index) => out.push(lines[index + 1]!, ...failureLines(c)));
  out.push('', `total: ${totalLine(report.total)}`);
  return `${out.join('\n')}\n`;
}

const CHANGE_TEXT = { same: '', 'now-passes': 'now passes', 'now-fails': 'now fails' } as const;

export function renderComparison(comparison: EvalComparison): string {
  const { a, b } = comparison;
  const rows = [['case', 'A', 'B', 'tokens A', 'tokens B', 'cost A', 'cost B', 'latency A', 'latency B', 'change']];
  for (const c of comparison.cases) {
    rows.push([
      c.name,
      verdict(c.a),
      verdict(c.b),
      formatTokens(c.a.tokens.total),
      formatTokens(c.b.tokens.total),
      formatCost(c.a.costUsd),
      formatCost(c.b.costUsd),
      formatLatency(c.a.latencyMs),
      formatLatency(c.b.latencyMs),
      CHANGE_TEXT[c.change],
    ]);
  }
  const lines = table(rows, new Set([3, 4, 5, 6, 7, 8])).split('\n');
  const out = [comparison.suite.name, `A: ${describeAgent(a.agent)}`, `B: ${describeAgent(b.agent)}`, '', lines[0]!];
  comparison.cases.forEach((c, index) => {
    out.push(lines[index + 1]!);
    // A verdict that changed: what differs. One that did not: a failure on both is still shown, each side's.
    if (c.change !== 'same') out.push(...c.differences.map((line) => `  ${line}`));
    else if (!c.a.passed) out.push(...failureLines(c.a, '  A '), ...failureLines(c.b, '  B '));
  });
  out.push('', `total A: ${totalLine(a.total)}`, `total B: ${totalLine(b.total)}`);
  return `${out.join('\n')}\n`;
}
