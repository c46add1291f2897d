import type { CallDecision } from '../core/hooks.ts';
import type { CallRecord, CallStatus, TurnRecord, TurnStatus } from './journal.ts';

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
