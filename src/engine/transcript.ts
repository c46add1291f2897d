import type { ModelMessage } from 'ai';
import type { CallRecord, StoredMessage } from '../store/journal.ts';
import type { JournalStore } from '../store/journal-store.ts';

/**
 * One journaled message of a session's transcript, as a turn holds it. Read-only: the entries of
 * a transcript read from the journal are the journal's own, shared with its other readers.
 */
export interface Entry {
  readonly seq: number;
  readonly turnId: string | null;
  readonly kind: StoredMessage['kind'];
  readonly message: ModelMessage;
}

/**
 * A turn's transcript only grows: persistence.ts appends entries to the array, and nothing
 * replaces or removes one in place; anything that is not growth (a compaction, a reload from the
 * journal) makes a new array. Its messages are therefore kept as one array per transcript, grown
 * by what was appended since the last call, so a step reads them in time independent of the
 * history's length (and the provider prompt, given the same array, recognises pure growth).
 */
const messageViews = new WeakMap<readonly Entry[], ModelMessage[]>();

export function messagesOf(transcript: readonly Entry[]): readonly ModelMessage[] {
  let messages = messageViews.get(transcript);
  const known = messages?.length ?? 0;
  if (!messages || known > transcript.length || (known > 0 && messages[known - 1] !== transcript[known - 1]!.message)) {
    messages = [];
    messageViews.set(transcript, messages);
  }
  for (let i = messages.length; i < transcript.length; i++) messages.push(transcript[i]!.message);
  return messages;
}

/** The session's transcript as a turn's own array to grow; its entries are the journal's (shared, never mutated). */
export async function loadTranscript(journal: JournalStore, sessionId: string): Promise<Entry[]> {
  return (await journal.transcript(sessionId)).slice();
}

export function textOf(message: ModelMessage): string {
  if (typeof message.content === 'string') return message.content;
  return (message.content as Array<{ type: string; text?: string }>)
    .filter((part) => part.type === 'text')
    .map((part) => part.text ?? '')
    .join('');
}

/** Whether an assistant message names calls acx runs (a provider-executed call already ran on the provider's side). */
export function hasToolCalls(message: ModelMessage): boolean {
  return (
    message.role === 'assistant' &&
    Array.isArray(message.content) &&
    message.content.some((part) => part.type === 'tool-call' && !part.providerExecuted)
  );
}

/**
 * How many calls of the turn ran, derived from evidence rather than a counter: every call of a
 * settled step (its result is in a tool message), and the open step's calls that started or
 * finished.
 */
export function toolsRanIn(transcript: readonly Entry[], turnId: string, open: readonly CallRecord[]): number {
  let ran = open.filter((call) => call.status === 'started' || call.status === 'done').length;
  for (const entry of transcript) {
    if (entry.turnId === turnId && entry.kind === 'tool' && Array.isArray(entry.message.content)) {
      ran += entry.message.content.filter((part) => part.type === 'tool-result').length;
    }
  }
  return ran;
}
