import type { ModelMessage } from 'ai';
import type { ModelParams } from '../model/params.ts';
import type { ResolvedModel } from '../model/providers.ts';
import type { StoredMessage } from '../store/journal.ts';
import type { JournalStore } from '../store/journal-store.ts';
import { errorMessage } from '../core/errors.ts';
import type { Logger } from '../util/logger.ts';
import { slugifyKey } from '../memory/keys.ts';
import { elide } from './caps.ts';
import { CHARS_PER_TOKEN, type ContextBudget } from './context-budget.ts';
import { callModel } from './model-call.ts';

/**
 * Compaction keeps a recent window verbatim and replaces everything older with one cumulative
 * summary the model writes itself, recording the *work* (actions, ids, outcomes, open threads).
 * A cut lands only immediately before a user turn — never inside a tool chain, which would
 * strand a result from its call — or the compactor declines and says so.
 */
export const KEEP_SHARE = 0.2;
export const SUMMARY_PREFIX = '[Summary of the earlier conversation, written at compaction. It replaces the turns it covers.]';

export interface CompactionOutcome {
  compacted: boolean;
  reason?: string;
  messagesBefore: number;
  messagesAfter: number;
  summarized: number;
  /** The summary now standing for the older turns (compacted only). */
  summary?: string;
  /** The transcript's size in tokens, estimated from its characters (see CHARS_PER_TOKEN). */
  tokensBefore: number;
  tokensAfter: number;
}

function estimateTokens(messages: readonly StoredMessage[]): number {
  return Math.ceil(messages.reduce((n, m) => n + chars(m.message), 0) / CHARS_PER_TOKEN);
}

const SUMMARY_INSTRUCTIONS = `You are compacting your own conversation transcript so it fits your context window.
Write one summary that replaces the transcript below. Record the work, not just the talk:
- every action you took with tools and its outcome, with exact ids, names, paths and numbers;
- decisions made and why; facts learned about the people and the task;
- open threads: what remains to be done and what you promised.
If the transcript starts with an earlier summary, fold it in so the record stays cumulative.
Write plain prose and bullet points, no preamble.`;

function chars(message: ModelMessage): number {
  return JSON.stringify(message.content).length;
}

/** Renders messages as plain text for the summariser (tool calls and results included). */
export function renderTranscript(messages: readonly StoredMessage[]): string {
  return messages
    .map(({ message }) => {
      if (typeof message.content === 'string') return `${message.role}: ${message.content}`;
      const parts = (message.content as Array<Record<string, unknown>>).map((part) => {
        switch (part.type) {
          case 'text':
            return String(part.text);
          case 'tool-call':
            return `[call ${String(part.toolName)} ${JSON.stringify(part.input)}]`;
          case 'tool-result':
            return `[result of ${String(part.toolName)}: ${JSON.stringify((part.output as { value?: unknown })?.value ?? part.output)}]`;
          default:
            return '';
        }
      });
      return `${message.role}: ${parts.filter(Boolean).join(' ')}`;
    })
    .join('\n');
}

/** The index of the message to cut before: a real user turn, keeping ~KEEP_SHARE of the budget. */
export function findCut(messages: readonly StoredMessage[], keepChars: number, hard: boolean): number | undefined {
  const userTurns = messages.map((m, i) => (m.kind === 'user' ? i : -1)).filter((i) => i > 0);
  if (userTurns.length === 0) return undefined;
  if (hard) return userTurns.at(-1);
  let kept = 0;
  let cut: number | undefined;
  for (let i = messages.length - 1; i > 0; i--) {
    kept += chars(messages[i]!.message);
    if (messages[i]!.kind === 'user') {
      if (kept > keepChars && cut !== undefined) break;
      cut = i;
    }
  }
  return cut;
}

export async function compactSession(options: {
  journal: JournalStore;
  sessionId: string;
  model: ResolvedModel;
  params: ModelParams;
  budget: ContextBudget;
  hard: boolean;
  memory?: { remember(key: string, value: string): Promise<void> };
  logger: Logger;
  now: Date;
  inputTokens: number | undefined;
  abortSignal?: AbortSignal | undefined;
}): Promise<CompactionOutcome> {
  const { journal, sessionId, budget, logger } = options;
  const messages = await journal.messages(sessionId);
  const keepChars = Math.floor(budget.limit * KEEP_SHARE * CHARS_PER_TOKEN);
  const cutIndex = findCut(messages, keepChars, options.hard);
  const tokensBefore = estimateTokens(messages);
  const base = { messagesBefore: messages.length, messagesAfter: messages.length, summarized: 0, tokensBefore, tokensAfter: tokensBefore };
  if (cutIndex === undefined) {
    logger.warn('context compact declined', { session: sessionId, reason: 'no safe cut before a user turn', messages: messages.length });
    return { compacted: false, reason: 'no safe cut', ...base };
  }
  const older = messages.slice(0, cutIndex);
  // The summariser must itself fit: bound the rendered transcript to half the ceiling.
  const rendered = elide(renderTranscript(older), Math.floor(budget.limit * 0.5 * CHARS_PER_TOKEN));
  let summary: string;
  try {
    const result = await callModel({
      model: options.model,
      system: SUMMARY_INSTRUCTIONS,
      messages: [{ role: 'user', content: `Transcript to summarise:\n\n${rendered}` }],
      tools: undefined,
      params: options.params,
      abortSignal: options.abortSignal,
    });
    summary = result.text.trim();
    if (!summary) throw new Error('the summary came back empty');
  } catch (error) {
    logger.warn('context compact failed', { session: sessionId, error: errorMessage(error) });
    return { compacted: false, reason: errorMessage(error), ...base };
  }
  const cutSeq = messages[cutIndex]!.seq;
  await journal.compact(sessionId, cutSeq, { role: 'user', content: `${SUMMARY_PREFIX}\n${summary}` });
  const after = await journal.messages(sessionId);
  logger.info('context compact', {
    session: sessionId,
    tokens_in: options.inputTokens,
    limit: budget.limit,
    source: budget.source,
    threshold: budget.compactAt,
    hard: options.hard || undefined,
    messages: `${messages.length}→${after.length}`,
    chars: `${messages.reduce((n, m) => n + chars(m.message), 0)}→${after.reduce((n, m) => n + chars(m.message), 0)}`,
    summarized: older.length,
  });
  if (options.memory) {
    try {
      // Session ids are free text; memory keys are not.
      const session = slugifyKey(sessionId, 64).replace(/[/:]/g, '_') || 'session';
      await options.memory.remember(`compaction/${session}/${options.now.toISOString()}`, summary);
    } catch (error) {
      logger.warn('memory remember failed', { error: errorMessage(error) });
    }
  }
  return {
    compacted: true,
    messagesBefore: messages.length,
    messagesAfter: after.length,
    summarized: older.length,
    summary,
    tokensBefore,
    tokensAfter: estimateTokens(after),
  };
}
