import type { ToolResultOutput } from '@ai-sdk/provider-utils';
import type { CallRecord } from '../store/journal.ts';
import type { EngineContext } from './engine-context.ts';
import { settlementWrite } from './persistence.ts';
import { errorOutput } from './tool-output.ts';
import { hasToolCalls, loadTranscript } from './transcript.ts';

/**
 * A turn given up with calls still open. Invariant: every call an assistant message names has a
 * result before anything follows it (the provider refuses a transcript where one is missing), so
 * a turn that ends without running its open calls answers each of them with what happened.
 */

/** What a call that will never run (or never finish here) is told, by what it was waiting for. */
export function unansweredOutput(call: CallRecord, why: string): ToolResultOutput {
  switch (call.status) {
    case 'awaiting-approval':
      return { type: 'execution-denied', reason: `Not run: ${why}.` };
    case 'started':
      return errorOutput(`It was running when ${why}: whether it took effect is unknown. Check its effect before you retry it.`);
    default:
      return errorOutput(`Not run: ${why}.`);
  }
}

/**
 * Gives up a running or suspended turn for good, in one transaction: its open calls are answered
 * (unansweredOutput) and their step settled, and the turn is recorded as cancelled, saying why.
 * False when the session has no such turn unfinished.
 */
export async function abandonTurn(ctx: EngineContext, sessionId: string, turnId: string, reason: string): Promise<boolean> {
  const { journal } = ctx;
  const abandoned = await journal.transaction(async () => {
    const turn = await journal.turn(turnId);
    if (!turn || turn.sessionId !== sessionId || (turn.status !== 'running' && turn.status !== 'suspended')) return false;
    const open = await journal.openCalls(turnId);
    if (open.length > 0) {
      const transcript = await loadTranscript(journal, sessionId);
      const assistant = transcript.findLast((entry) => entry.turnId === turnId && entry.kind === 'assistant' && hasToolCalls(entry.message))!;
      const outputs = open.map((call) => (call.status === 'done' ? (call.result as ToolResultOutput) : unansweredOutput(call, `the turn was abandoned (${reason})`)));
      await settlementWrite(ctx, { sessionId, turnId, step: open[0]!.step, assistant, calls: open, outputs })();
    }
    await journal.updateTurn(turnId, { status: 'cancelled', error: `abandoned: ${reason}` });
    return true;
  });
  if (abandoned) ctx.logger.warn('turn abandoned', { session: sessionId, turn: turnId, reason });
  return abandoned;
}
