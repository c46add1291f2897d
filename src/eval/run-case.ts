import { AcxError, errorMessage } from '../core/errors.ts';
import { addUsage, emptyUsage, type Usage } from '../engine/events.ts';
import { HarnessAgent } from '../harness/harness-agent.ts';
import type { HarnessTurnResult } from '../harness/harness-results.ts';
import { type CheckResult, runChecks, type TurnOutcome } from './checks.ts';
import { judgeRubric, type JudgeUsage } from './judge.ts';
import type { EvalCase } from './suite.ts';
import type { EvalAgentInfo, EvalTarget } from './target.ts';

/** Tokens a case's turn used (null where the provider reported none). */
export interface Tokens {
  input: number | null;
  output: number | null;
  total: number | null;
}

export interface CaseResult {
  name: string;
  prompt: string;
  /** The cassette the model's replies were replayed from; absent: the case ran live. */
  replay?: string;
  /** Every check passed and the turn ended without an error. */
  passed: boolean;
  checks: CheckResult[];
  /** Why the turn failed (a replay mismatch, a model error, output the schema refused); its checks did not run. */
  error?: { code: string; message: string; hint?: string };
  /** The turn's final text. */
  reply: string;
  toolCalls: Array<{ name: string; input: unknown }>;
  /** The structured output, for a case with an outputSchema. */
  output?: unknown;
  /** Tools that asked for an approval an eval has nobody to give: refused, and the model was told why. */
  deniedApprovals: string[];
  tokens: Tokens;
  /** What the turn's model calls cost, when the provider states it (acx never estimates a price); null otherwise. */
  costUsd: number | null;
  /** Milliseconds from the prompt to the turn's end (loading the agent not counted). */
  latencyMs: number;
  /** The rubric's judge call, apart from the agent's own figures. */
  judge?: JudgeUsage;
}

export const tokensOf = (usage: Usage): Tokens => ({ input: usage.inputTokens ?? null, output: usage.outputTokens ?? null, total: usage.totalTokens ?? null });

/**
 * One case: the agent opened for it, a new session, the prompt as one turn (streamed, to read
 * what each model call cost), then the checks against what the turn did. A turn that fails is
 * the case's failure, not the run's; an agent that cannot be opened at all stops the run.
 */
export async function runCase(target: EvalTarget, evalCase: EvalCase, options: { env?: NodeJS.ProcessEnv; abortSignal?: AbortSignal } = {}): Promise<{ result: CaseResult; agent: EvalAgentInfo }> {
  const opened = await target(evalCase).catch((error: unknown) => {
    throw AcxError.isInstance(error) ? error : new AcxError('failed', `Case "${evalCase.name}": the agent could not be opened: ${errorMessage(error)}`);
  });
  try {
    // Structured output is the agent's setting: a case that asks for it runs on a copy that has it.
    const schema = evalCase.expect.outputSchema;
    const agent = schema ? new HarnessAgent({ ...opened.agent.settings, output: schema }) : opened.agent;
    const denied: string[] = [];
    let usage = emptyUsage();
    let costUsd: number | null = null;
    let started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const base = { name: evalCase.name, prompt: evalCase.prompt, ...(evalCase.replay ? { replay: evalCase.replay } : {}) };
    let turn: HarnessTurnResult;
    try {
      const session = await agent.createSession();
      // The clock starts with the prompt: opening the session (an ACP agent's process) is not the turn's latency.
      started = performance.now();
      const stream = agent.stream({
        session,
        prompt: evalCase.prompt,
        ...(options.abortSignal ? { abortSignal: options.abortSignal } : {}),
        onApprovalRequest: async (request) => {
          denied.push(request.toolName);
          return { approved: false, reason: `${request.toolName} needs an approval, and an eval runs with nobody to give one; the call was not run.` };
        },
      });
      for await (const part of stream.harnessStream) {
        if (part.type !== 'finish-step') continue;
        usage = addUsage(usage, part.usage);
        if (part.costUsd !== undefined) costUsd = (costUsd ?? 0) + part.costUsd;
      }
      turn = await stream.result;
    } catch (error) {
      const failure = AcxError.isInstance(error) ? { code: error.code, message: error.message, ...(error.hint ? { hint: error.hint } : {}) } : { code: 'internal', message: errorMessage(error) };
      const result: CaseResult = { ...base, passed: false, checks: [], error: failure, reply: '', toolCalls: [], deniedApprovals: denied, tokens: tokensOf(usage), costUsd, latencyMs: elapsed() };
      return { result, agent: opened.info };
    }
    const latencyMs = elapsed();
    const outcome: TurnOutcome = { text: turn.text || (turn.unspoken ?? ''), toolCalls: turn.toolCalls, output: turn.output };
    const checks = runChecks(evalCase.expect, outcome);
    let judge: JudgeUsage | undefined;
    if (evalCase.expect.rubric) {
      const judged = await judgeRubric(evalCase.expect.rubric, evalCase.prompt, outcome, options);
      checks.push(judged.check);
      judge = judged.judge;
    }
    const result: CaseResult = {
      ...base,
      passed: checks.every((check) => check.passed),
      checks,
      reply: outcome.text,
      toolCalls: turn.toolCalls.map((call) => ({ name: call.toolName, input: call.input })),
      ...(schema ? { output: turn.output } : {}),
      deniedApprovals: denied,
      // The turn's own total where the harness gives one; the steps' sum otherwise.
      tokens: tokensOf(turn.totalUsage.totalTokens !== undefined ? turn.totalUsage : usage),
      costUsd,
      latencyMs,
      ...(judge ? { judge } : {}),
    };
    return { result, agent: opened.info };
  } finally {
    await opened.close();
  }
}
