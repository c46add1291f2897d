import { type Command, InvalidArgumentError, Option } from 'commander';
import { compareReports } from '../../../eval/compare.ts';
import { type EvalReport, meetsPassRate, runEval } from '../../../eval/run-eval.ts';
import { loadSuite } from '../../../eval/suite.ts';
import type { EvalLoadOptions } from '../../../eval/target.ts';
import type { Logger } from '../../../util/logger.ts';
import { commandLogger } from '../command-logger.ts';
import { jsonOption } from '../common-options.ts';
import { CliExit } from '../output.ts';
import { createProgress } from '../progress.ts';
import { renderComparison, renderReport } from '../eval-table.ts';
import { addRunOptions } from '../run-options.ts';

/**
 * `acx eval <agent> <suite.yaml>`: every case of the suite against the agent, each in a fresh
 * session on fresh state, and a table of the results (or --json); `--compare <other>` runs the
 * suite on a second agent (another cartridge version) and shows both side by side. Exits 1 when
 * the pass rate is below --min-pass-rate (default: every case must pass).
 */
interface EvalFlags extends Record<string, unknown> {
  json?: boolean;
  compare?: string;
  minPassRate?: number;
  param?: string[];
}

export function register(program: Command): void {
  addRunOptions(
    program
      .command('eval')
      .description('run an eval suite (prompts and what each reply must have) against an agent: pass rate, tokens, cost and latency per case')
      .argument('<agent>', 'agent directory, .acx cartridge, or "default" for the config home\'s own agent')
      .argument('<suite>', 'the suite file (YAML; its format: docs/eval.md)')
      .option('--compare <agent>', 'run the suite on this agent too (another directory or cartridge version) and show both side by side')
      .addOption(new Option('--min-pass-rate <rate>', 'exit 1 when fewer cases pass: a share from 0 to 1 or a percentage such as 80% (default 1: every case)').argParser(passRateFlag))
      .addOption(jsonOption('{suite, agent, cases: [{name, passed, checks, error, reply, toolCalls, tokens, costUsd, latencyMs}], total}; with --compare {suite, a, b, cases}')),
    ['--session', '--home', '--store', '--workspace', '--record', '--replay'],
  ).action(async (agent: string, suitePath: string, flags: EvalFlags) => {
    const logger = commandLogger('answer');
    const suite = loadSuite(suitePath);
    const loadOptions = loadOptionsOf(flags, logger);
    const progress = createProgress();
    const run = async (which: string, label: string): Promise<EvalReport> => {
      progress.update(`${which}case 1 of ${suite.cases.length}`);
      return runEval({
        ...loadOptions,
        agent: label,
        suite,
        onCase: (_result, index, count) => {
          if (index + 1 < count) progress.update(`${which}case ${index + 2} of ${count}`);
        },
      });
    };
    let reports: EvalReport[];
    try {
      reports = [await run(flags.compare ? 'A: ' : '', agent)];
      if (flags.compare) reports.push(await run('B: ', flags.compare));
    } finally {
      progress.done();
    }
    const [a, b] = reports as [EvalReport, EvalReport | undefined];
    const comparison = b ? compareReports(a, b) : undefined;
    if (flags.json) process.stdout.write(`${JSON.stringify(comparison ?? a, null, 2)}\n`);
    else process.stdout.write(comparison ? renderComparison(comparison) : renderReport(a));
    const minimum = flags.minPassRate ?? 1;
    const short = reports.filter((report) => !meetsPassRate(report, minimum));
    if (short.length > 0) {
      const needed = `${Math.round(minimum * 100)}%`;
      const which = (report: EvalReport) => `${reports.length > 1 ? `${report.agent.label}: ` : ''}${report.total.failed} of ${report.total.cases} case(s) failed, a pass rate of ${Math.round(report.total.passRate * 100)}%`;
      // Under --json the report is the whole of stdout: the exit code alone says it fell short.
      throw new CliExit('failed', flags.json ? '' : `acx eval: ${short.map(which).join('; ')} (needed: ${needed})`);
    }
  });
}

/** The run flags as loadAgent's options (the logger is the command's). */
function loadOptionsOf(flags: EvalFlags, logger: Logger): EvalLoadOptions {
  const { json: _json, compare: _compare, minPassRate: _minPassRate, param, ...runFlags } = flags;
  return { ...(runFlags as EvalLoadOptions), ...(param ? { params: param } : {}), logger };
}

/** `0.8`, `1` or `80%`: a share from 0 to 1. */
function passRateFlag(value: string): number {
  const text = value.trim();
  const percent = text.endsWith('%');
  const number = Number(percent ? text.slice(0, -1) : text);
  const rate = percent ? number / 100 : number;
  if (text === '' || text === '%' || !Number.isFinite(rate) || rate < 0 || rate > 1) {
    throw new InvalidArgumentError('must be a share from 0 to 1 (e.g. 0.8) or a percentage from 0% to 100%.');
  }
  return rate;
}
