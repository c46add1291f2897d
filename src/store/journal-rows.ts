import type { CallDecision } from '../core/hooks.ts';
import type { ModelMessage } from 'ai';
import type { CallRecord, CallStatus, StoredMessage, TurnRecord, TurnStatus } from './journal.ts';

// The journal's turn and call rows as both stores return them, and the records made of them.

/** A turns row as either store returns it (SQLite keeps `nudged` as 0/1, PostgreSQL as a boolean). */
export interface TurnRow {
  id: string;
  session_id: string;
  status: TurnStatus;
  steps: number;
  tools_ran: number;
  nudged: number | boolean;
  final_text: string | null;
  error: string | null;
  started_at: string;
  ended_at: string | null;
}

export interface CallRow {
  turn_id: string;
  step: number;
  call_id: string;
  ordinal: number;
  tool_name: string;
  input: string;
  status: CallStatus;
  result: string | null;
  approval: string | null;
  decision: string | null;
}

/** A turn as both stores read it back right after startTurn wrote it: running, nothing done yet. */
export function startedTurn(id: string, sessionId: string, startedAt: string): TurnRecord {
  return { id, sessionId, status: 'running', steps: 0, toolsRan: 0, nudged: false, finalText: null, error: null, startedAt, endedAt: null };
}

export function toTurn(row: TurnRow): TurnRecord {
  return {
    id: row.id,
    sessionId: row.session_id,
    status: row.status,
    steps: row.steps,
    toolsRan: row.tools_ran,
    nudged: row.nudged === 1 || row.nudged === true,
    finalText: row.final_text,
    error: row.error,
    startedAt: row.started_at,
    endedAt: row.ended_at,
  };
}

export function toCall(row: CallRow): CallRecord {
  return {
    turnId: row.turn_id,
    step: row.step,
    callId: row.call_id,
    ordinal: row.ordinal,
    toolName: row.tool_name,
    input: JSON.parse(row.input) as unknown,
    status: row.status,
    result: row.result === null ? null : (JSON.parse(row.result) as unknown),
    approval: row.approval === null ? null : (JSON.parse(row.approval) as CallRecord['approval']),
    decision: row.decision === null ? null : (JSON.parse(row.decision) as CallDecision),
  };
}

/** A turn's assistant and tool rows as the stores read them, their bodies parsed. */
export function parsedRows(rows: ReadonlyArray<{ kind: 'assistant' | 'tool'; body: string }>): Array<{ kind: 'assistant' | 'tool'; message: ModelMessage }> {
  return rows.map((row) => ({ kind: row.kind, message: JSON.parse(row.body) as ModelMessage }));
}

/**
 * The open step's calls from a turn's messages (in order: those of other kinds are passed over)
 * and its ledger rows: shared by every store and by the engine, which reads them from a transcript
 * it has just loaded, so recovery reads the same evidence the same way wherever it is kept.
 */
export function openCallsOf(turnId: string, rows: ReadonlyArray<{ kind: StoredMessage['kind']; message: ModelMessage }>, calls: CallRecord[]): CallRecord[] {
  let step = 0;
  let open: { step: number; parts: ToolCallPart[] } | undefined;
  for (const row of rows) {
    if (row.kind === 'tool') {
      open = undefined;
      continue;
    }
    if (row.kind !== 'assistant') continue;
    step += 1;
    const parts = toolCallParts(row.message);
    open = parts.length > 0 ? { step, parts } : undefined;
  }
  const ledger = calls.filter((call) => call.status !== 'settled');
  if (!open) return ledger;
  const { step: openStep, parts } = open;
  const recorded = new Map(ledger.filter((call) => call.step === openStep).map((call) => [call.callId, call]));
  return parts.map(
    (part, ordinal): CallRecord =>
      recorded.get(part.toolCallId) ?? {
        turnId,
        step: openStep,
        callId: part.toolCallId,
        ordinal,
        toolName: part.toolName,
        input: part.input,
        status: 'pending',
        result: null,
        approval: null,
        decision: null,
      },
  );
}

type ToolCallPart = { toolCallId: string; toolName: string; input: unknown };

export function toolCallParts(message: ModelMessage): ToolCallPart[] {
  if (message.role !== 'assistant' || typeof message.content === 'string') return [];
  // A provider-executed call (web search, code interpreter) ran inside the model call: it is
  // evidence of what happened, never a call to run again.
  return message.content.filter(
    (part): part is ToolCallPart & { type: 'tool-call' } => part.type === 'tool-call' && !(part as { providerExecuted?: boolean }).providerExecuted,
  );
}
