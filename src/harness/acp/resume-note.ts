import type { UserContent } from 'ai';
import type { CallRecord } from '../../store/journal.ts';
import type { HostOutcome } from './turn-journal.ts';

/**
 * The prompt that takes up a turn the agent did not finish — after the acx process driving it
 * stopped, or after it waited for the user — in the agent's reopened session: what happened, the
 * turn's request again (an agent may not have kept it), and what the journal shows of its host
 * tool calls and the user's answers, so the agent finishes the turn instead of starting over.
 */

export type ResumeReason = 'interrupted' | 'paused' | 'request';

const WHY: Record<ResumeReason, string> = {
  interrupted: 'Your previous turn in this session was interrupted before it finished: the process driving it stopped.',
  paused: 'Your previous turn in this session waited for the user, and the session was reopened to go on with their answers.',
  request: "Your previous turn in this session was paused at the user's request before it finished.",
};

/** How much of one recorded result the note quotes. */
const QUOTE_CHARS = 600;

export function resumeNote(reason: ResumeReason, request: string | UserContent, calls: readonly CallRecord[]): string {
  const lines = [`[acx] ${WHY[reason]} Finish that turn now. Its request was:`, '<request>', textOf(request), '</request>'];
  const finished = calls.filter((call) => call.status === 'done');
  const unknown = calls.filter((call) => call.status === 'started');
  const decided = calls.filter((call) => call.approval);
  if (finished.length > 0) {
    lines.push('Host tool calls of that turn that finished (calling one again with the same arguments gives the same result; it does not run again):');
    for (const call of finished) lines.push(`- ${describe(call)} → ${outcomeText(call.result as HostOutcome)}`);
  }
  if (unknown.length > 0) {
    lines.push(
      'Host tool calls of that turn whose outcome is unknown (they started and no result was recorded; one that is not safe to repeat will not run again with the same arguments — check its effect first):',
    );
    for (const call of unknown) lines.push(`- ${describe(call)}`);
  }
  if (decided.length > 0) {
    lines.push("The user's decisions on what you asked to do (ask again for the same call and it is answered the same way):");
    for (const call of decided) lines.push(`- ${describe(call)}: ${call.approval!.approved ? 'approved' : `denied${call.approval!.reason ? ` (${call.approval!.reason})` : ''}`}`);
  }
  return lines.join('\n');
}

function describe(call: CallRecord): string {
  return `${call.toolName} ${quote(JSON.stringify(call.input ?? {}))}`;
}

function outcomeText(outcome: HostOutcome | null): string {
  if (!outcome) return '(no result)';
  return outcome.ok ? quote(typeof outcome.output === 'string' ? outcome.output : JSON.stringify(outcome.output)) : `error: ${quote(outcome.error)}`;
}

function quote(text: string | undefined): string {
  const value = text ?? '';
  return value.length > QUOTE_CHARS ? `${value.slice(0, QUOTE_CHARS)}… (${value.length - QUOTE_CHARS} more characters)` : value;
}

function textOf(prompt: string | UserContent): string {
  if (typeof prompt === 'string') return prompt;
  return prompt.map((part) => (part.type === 'text' ? part.text : `[${part.type}]`)).join('\n');
}
