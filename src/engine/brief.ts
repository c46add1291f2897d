import { BRIEF_TAG } from '../model/brief-tag.ts';

/**
 * The volatile brief: the clock, the step counter and per-turn context, composed fresh for every
 * model call, spliced in *last* (after all stable content, so provider prefix caches keep
 * paying out) and never persisted.
 */
/**
 * How the agent is heard: `final-text` (the final text is the reply), `tool` (speaking is a call
 * to the named tool; the final text is unspoken narration), or `unspoken` (no speaking tool:
 * only tool calls act, the final text goes to the log and memory).
 */
export type SpeechMode = { mode: 'final-text' } | { mode: 'tool'; tool: string } | { mode: 'unspoken' };

/** Whether the final text of a turn reaches no one. */
export function isUnspoken(speech: SpeechMode): boolean {
  return speech.mode !== 'final-text';
}

export const LOW_STEPS = 5;

// A table, not Intl: a time-zone formatter costs ~0.3 ms per step and ~50 ms to initialise.
const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

export function formatNow(now: Date): string {
  const day = WEEKDAYS[now.getUTCDay()];
  return `${now.toISOString().slice(0, 19).replace('T', ' ')} UTC (+00:00, ${day})`;
}

function speakHint(speech: SpeechMode): string {
  if (speech.mode === 'tool') return ` Speaking means calling the \`${speech.tool}\` tool; text you write outside it reaches no one.`;
  if (speech.mode === 'unspoken') return ' Text you write reaches no one; only your tool calls act.';
  return '';
}

export interface BriefInput {
  now: Date;
  step: number;
  maxSteps: number;
  speech: SpeechMode;
  /** Shown on every step of the turn: memory context, absent optional tools, output format. */
  turnContext: readonly string[];
}

/** A step's note, as the brief shows it and the transcript's step ledger keeps it. */
export function stepNote(step: number, maxSteps: number, now: Date): string {
  return `Current Time: ${formatNow(now)} / Step ${step} of ${maxSteps}`;
}

export function composeBrief(input: BriefInput): string {
  const lines = [
    BRIEF_TAG,
    stepNote(input.step, input.maxSteps, input.now),
    'Times above are UTC; convert to the local zone before answering about a named place.',
  ];
  // How the agent is heard is said on the first step, and again when steps run low.
  if (input.step === 1) lines.push(`This turn has a budget of ${input.maxSteps} steps (model calls).${speakHint(input.speech)}`);
  const remaining = input.maxSteps - input.step;
  if (remaining < LOW_STEPS) {
    lines.push(
      `Only ${remaining} step(s) remain after this one. Prioritise: finish the most important work, ` +
        'note what remains for a later turn, and end with your final reply instead of more tool calls.' +
        speakHint(input.speech),
    );
  }
  lines.push(...input.turnContext);
  return lines.join('\n');
}

export function reserveBrief(input: { now: Date; maxSteps: number; speech: SpeechMode }): string {
  return [
    BRIEF_TAG,
    `Current Time: ${formatNow(input.now)}`,
    `The step budget of ${input.maxSteps} steps for this turn is spent and tools are now withheld.`,
    'Write your own honest progress report: what you completed, what remains, and what the next turn should do first.' +
      (isUnspoken(input.speech)
        ? ' This report is unspoken: it goes to your record and your next turn, not to anyone in the conversation.'
        : ''),
  ].join('\n');
}

/**
 * Why a message calls for a reply: it names the agent (`mention`), or it comes from the only
 * other party of a one-on-one conversation (`one-on-one`). `true`: addressed, reason unstated.
 */
export type Addressed = boolean | 'mention' | 'one-on-one';

export function nudgeNote(speech: SpeechMode & { mode: 'tool' }, addressed: Addressed = true): string {
  const why = addressed === 'one-on-one' ? 'You are the only other party in this conversation' : 'You were addressed';
  return (
    `[harness] ${why} and this turn has taken no visible action. If silence is deliberate, say why; ` +
    `otherwise act now. Speaking means calling the \`${speech.tool}\` tool; text written here reaches no one.`
  );
}

export function fallbackReserveNote(maxSteps: number, reason: string): string {
  return `[The step budget of ${maxSteps} steps ran out before a final answer, and the progress report could not be written (${reason}). The work so far is in the transcript above.]`;
}
