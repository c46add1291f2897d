import type { ModelMessage } from 'ai';
import type { StoredMessage, TurnRecord } from './journal.ts';
import type { JournalStore, SessionListing } from './journal-store.ts';
import type { InboxItem, WakeStore } from './wake-store.ts';

/**
 * What an agent's sessions hold, read from the stores the engine and wake mode write (the
 * journal, wake.db) and never from anything else: `acx sessions` shows what really happened.
 */
export interface SessionSummary {
  id: string;
  /** When the journal first saw the session (or its first wake event, if the journal has none). */
  createdAt: string;
  /** The latest of its last turn's start and its last wake event. */
  lastActivityAt: string;
  turns: number;
  /** A turn that has not ended (running when a process died, or waiting for approvals). */
  unfinishedTurn: boolean;
  pendingEvents: number;
}

export interface SessionDetail extends SessionSummary {
  turnRecords: TurnRecord[];
  messages: StoredMessage[];
  events: InboxItem[];
}

/** Every session either store knows, the most recently active first. */
export async function summarizeSessions(journal: JournalStore | undefined, wakes: WakeStore | undefined): Promise<SessionSummary[]> {
  const listed = (await journal?.listSessions()) ?? [];
  const ids = new Set([...listed.map((s) => s.id), ...((await wakes?.sessions()) ?? []).map((s) => s.sessionId)]);
  const summaries = await Promise.all([...ids].map((id) => summarize(id, journal, wakes, listed)));
  return summaries.sort((a, b) => b.lastActivityAt.localeCompare(a.lastActivityAt) || a.id.localeCompare(b.id));
}

export async function sessionDetail(id: string, journal: JournalStore | undefined, wakes: WakeStore | undefined): Promise<SessionDetail | undefined> {
  const events = (await wakes?.items(id)) ?? [];
  if (!(await journal?.hasSession(id)) && events.length === 0) return undefined;
  return {
    ...(await summarize(id, journal, wakes, (await journal?.listSessions()) ?? [])),
    turnRecords: (await journal?.turns(id)) ?? [],
    messages: (await journal?.messages(id)) ?? [],
    events,
  };
}

async function summarize(id: string, journal: JournalStore | undefined, wakes: WakeStore | undefined, listed: readonly SessionListing[]): Promise<SessionSummary> {
  const session = listed.find((s) => s.id === id);
  const events = (await wakes?.items(id)) ?? [];
  const turns = (await journal?.turns(id)) ?? [];
  const times = [session?.updatedAt, ...events.map((e) => e.receivedAt)].filter((t): t is string => t !== undefined).sort();
  return {
    id,
    createdAt: session?.createdAt ?? events[0]?.receivedAt ?? times[0] ?? '',
    lastActivityAt: times.at(-1) ?? '',
    turns: turns.length,
    unfinishedTurn: (await journal?.unfinishedTurn(id)) !== undefined,
    pendingEvents: events.filter((e) => e.state === 'pending').length,
  };
}

/** One piece of a stored message as a person reads it: said, called, returned, or noted. */
export type TranscriptLine =
  | { kind: 'user' | 'agent' | 'summary' | 'note'; text: string }
  | { kind: 'tool-call'; toolName: string; input: unknown }
  | { kind: 'tool-result'; toolName: string; output: string; isError: boolean };

/** A stored message as transcript lines (reasoning and provider metadata left out). */
export function transcriptLines(stored: StoredMessage): TranscriptLine[] {
  const message = stored.message as ModelMessage;
  const textKind = stored.kind === 'summary' || stored.kind === 'note' ? stored.kind : message.role === 'user' ? 'user' : 'agent';
  if (typeof message.content === 'string') return message.content.trim() ? [{ kind: textKind, text: message.content }] : [];
  const lines: TranscriptLine[] = [];
  for (const part of message.content as Array<Record<string, unknown>>) {
    switch (part.type) {
      case 'text':
        if (typeof part.text === 'string' && part.text.trim()) lines.push({ kind: textKind, text: part.text });
        break;
      case 'image':
      case 'file':
        lines.push({ kind: textKind, text: `[${part.type}${typeof part.mediaType === 'string' ? ` ${part.mediaType}` : ''}]` });
        break;
      case 'tool-call':
        lines.push({ kind: 'tool-call', toolName: String(part.toolName), input: part.input });
        break;
      case 'tool-result': {
        const { text, isError } = resultText(part.output);
        lines.push({ kind: 'tool-result', toolName: String(part.toolName), output: text, isError });
        break;
      }
      default:
        break; // reasoning, tool-approval parts: not part of what was said or done
    }
  }
  return lines;
}

/** A tool result's output (the AI SDK's ToolResultOutput shapes) as text. */
function resultText(output: unknown): { text: string; isError: boolean } {
  const o = output as { type?: string; value?: unknown } | undefined;
  const isError = o?.type === 'error-text' || o?.type === 'error-json' || o?.type === 'execution-denied';
  if (o?.type === 'text' || o?.type === 'error-text') return { text: String(o.value ?? ''), isError };
  if (o?.type === 'json' || o?.type === 'error-json') return { text: JSON.stringify(o.value), isError };
  if (o?.type === 'execution-denied') return { text: `denied${(o as { reason?: string }).reason ? `: ${(o as { reason?: string }).reason}` : ''}`, isError };
  if (o?.type === 'content' && Array.isArray(o.value)) {
    const text = (o.value as Array<{ type: string; text?: string; mediaType?: string }>)
      .map((p) => (p.type === 'text' ? (p.text ?? '') : `[${p.mediaType ?? p.type}]`))
      .join(' ');
    return { text, isError };
  }
  return { text: JSON.stringify(output ?? null), isError };
}
