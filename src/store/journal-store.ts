import type { ModelMessage } from 'ai';
import type { CallDecision } from '../core/hooks.ts';
import type { CallIdentity, CallRecord, CallStatus, Journal, StoredMessage, TurnRecord } from './journal.ts';
import type { SessionBranches } from './session-branches.ts';
import { SqliteSessionBranches } from './sqlite-session-branches.ts';

/**
 * The journal as the engine sees it: every read and write returns a promise, so the same engine
 * runs on the embedded SQLite file (whose calls complete at once) or on a PostgreSQL server.
 * The invariants are the implementation's to keep, whichever it is: a transaction is all or
 * nothing, `claimSuspended` is true for exactly one caller, `appendMessage` refuses a sequence
 * number already taken.
 */
export type StoreKind = 'sqlite' | 'postgres';

export type TurnPatch = Partial<Pick<TurnRecord, 'status' | 'steps' | 'toolsRan' | 'nudged' | 'finalText' | 'error'>>;

export interface SessionListing {
  id: string;
  createdAt: string;
  updatedAt: string;
}

/**
 * Who runs a session's turn now, across hosts: a row with an expiry the holder renews while its
 * turn runs. A holder that dies stops renewing, and its lease is free once it expires; a live
 * holder's lease is never taken. Times are the store server's, so hosts' clocks need not agree.
 */
export interface SessionLeases {
  /** True when the session was free, its lease expired, or `holder` already holds it. */
  take(sessionId: string, holder: string, ttlMs: number): Promise<boolean>;
  /** Extends the holder's lease; false when it no longer holds it (it expired and was taken). */
  renew(sessionId: string, holder: string, ttlMs: number): Promise<boolean>;
  release(sessionId: string, holder: string): Promise<void>;
}

export interface JournalStore {
  readonly kind: StoreKind;
  /** Present on stores shared by several processes (PostgreSQL); absent on the one-host SQLite file. */
  readonly leases?: SessionLeases;
  /** Session fork and rewind, and the record of the files the agent's tools changed; absent on a store that has none (then fork/rewind are unsupported). */
  readonly branches?: SessionBranches;
  close(): Promise<void>;
  /** Runs `fn` as one unit: every write it makes through this store commits together or not at all. */
  transaction<T>(fn: () => Promise<T>): Promise<T>;

  ensureSession(sessionId: string): Promise<void>;
  hasSession(sessionId: string): Promise<boolean>;
  listSessions(): Promise<SessionListing[]>;
  sessionsWithAttribute(name: string): Promise<Array<SessionListing & { value: string }>>;
  clearHistory(sessionId: string): Promise<void>;
  deleteSession(sessionId: string): Promise<void>;
  setSessionAttribute(sessionId: string, name: string, value: string): Promise<void>;
  sessionAttribute(sessionId: string, name: string): Promise<string | undefined>;

  messages(sessionId: string): Promise<StoredMessage[]>;
  /**
   * The session's messages for a turn to read: what messages() gives, except that the objects may
   * be shared with other reads (a store may keep them parsed between turns), so never mutate one.
   */
  transcript(sessionId: string): Promise<readonly StoredMessage[]>;
  appendMessage(sessionId: string, turnId: string | null, kind: StoredMessage['kind'], message: ModelMessage, seq?: number): Promise<number>;
  replaceMessage(sessionId: string, seq: number, message: ModelMessage): Promise<void>;
  compact(sessionId: string, cutSeq: number, summary: ModelMessage): Promise<void>;

  /**
   * Writes a new running turn, and with it (one commit) its question as the session's next
   * message when given; gives the turn as turn() would read it back, so the caller need not ask.
   */
  startTurn(turnId: string, sessionId: string, question?: ModelMessage): Promise<TurnRecord>;
  turn(turnId: string): Promise<TurnRecord | undefined>;
  unfinishedTurn(sessionId: string): Promise<TurnRecord | undefined>;
  /** turn(turnId) and unfinishedTurn(sessionId) read together (one round trip on PostgreSQL): what a turn with a caller's id starts from. */
  turnAndUnfinished(turnId: string, sessionId: string): Promise<{ turn: TurnRecord | undefined; unfinished: TurnRecord | undefined }>;
  claimSuspended(turnId: string): Promise<boolean>;
  suspendedTurns(): Promise<TurnRecord[]>;
  turns(sessionId: string): Promise<TurnRecord[]>;
  updateTurn(turnId: string, patch: TurnPatch): Promise<void>;

  setCallStatus(call: CallIdentity, status: CallStatus): Promise<void>;
  recordCallResult(call: CallIdentity, result: unknown): Promise<void>;
  recordApproval(call: CallIdentity & { status: CallStatus }, approval: { approved: boolean; reason?: string }): Promise<void>;
  recordDecision(call: CallIdentity & { status: CallStatus }, decision: CallDecision): Promise<void>;
  settleStep(turnId: string, step: number): Promise<void>;
  calls(turnId: string, step?: number): Promise<CallRecord[]>;
  turnCalls(turnId: string): Promise<Array<{ step: number; ordinal: number; toolName: string; input: unknown }>>;
  openCalls(turnId: string): Promise<CallRecord[]>;
}

/**
 * The SQLite journal behind the async interface. Its statements run synchronously, so a
 * transaction's awaits resolve at once; a write made meanwhile from elsewhere in this process
 * (a parallel tool call) joins the open transaction on the one connection, as it did before.
 */
export class SqliteJournalStore implements JournalStore {
  readonly kind = 'sqlite' as const;
  readonly journal: Journal;
  readonly branches: SessionBranches;

  constructor(journal: Journal) {
    this.journal = journal;
    this.branches = new SqliteSessionBranches(journal.db, (sessionId) => journal.forgetTranscript(sessionId));
  }

  async close(): Promise<void> {
    this.journal.close();
  }

  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    if (!this.journal.begin()) return fn();
    try {
      const result = await fn();
      this.journal.commit();
      return result;
    } catch (error) {
      this.journal.rollback();
      throw error;
    }
  }

  async ensureSession(sessionId: string) {
    this.journal.ensureSession(sessionId);
  }
  async hasSession(sessionId: string) {
    return this.journal.hasSession(sessionId);
  }
  async listSessions() {
    return this.journal.listSessions();
  }
  async sessionsWithAttribute(name: string) {
    return this.journal.sessionsWithAttribute(name);
  }
  async clearHistory(sessionId: string) {
    this.journal.clearHistory(sessionId);
  }
  async deleteSession(sessionId: string) {
    this.journal.deleteSession(sessionId);
  }
  async setSessionAttribute(sessionId: string, name: string, value: string) {
    this.journal.setSessionAttribute(sessionId, name, value);
  }
  async sessionAttribute(sessionId: string, name: string) {
    return this.journal.sessionAttribute(sessionId, name);
  }
  async messages(sessionId: string) {
    return this.journal.messages(sessionId);
  }
  async transcript(sessionId: string) {
    return this.journal.transcript(sessionId);
  }
  async appendMessage(sessionId: string, turnId: string | null, kind: StoredMessage['kind'], message: ModelMessage, seq?: number) {
    return this.journal.appendMessage(sessionId, turnId, kind, message, seq);
  }
  async replaceMessage(sessionId: string, seq: number, message: ModelMessage) {
    this.journal.replaceMessage(sessionId, seq, message);
  }
  async compact(sessionId: string, cutSeq: number, summary: ModelMessage) {
    this.journal.compact(sessionId, cutSeq, summary);
  }
  async startTurn(turnId: string, sessionId: string, question?: ModelMessage) {
    if (!question) return this.journal.startTurn(turnId, sessionId);
    return this.transaction(async () => {
      const turn = this.journal.startTurn(turnId, sessionId);
      this.journal.appendMessage(sessionId, turnId, 'user', question);
      return turn;
    });
  }
  async turn(turnId: string) {
    return this.journal.turn(turnId);
  }
  async unfinishedTurn(sessionId: string) {
    return this.journal.unfinishedTurn(sessionId);
  }
  async turnAndUnfinished(turnId: string, sessionId: string) {
    return { turn: this.journal.turn(turnId), unfinished: this.journal.unfinishedTurn(sessionId) };
  }
  async claimSuspended(turnId: string) {
    return this.journal.claimSuspended(turnId);
  }
  async suspendedTurns() {
    return this.journal.suspendedTurns();
  }
  async turns(sessionId: string) {
    return this.journal.turns(sessionId);
  }
  async updateTurn(turnId: string, patch: TurnPatch) {
    this.journal.updateTurn(turnId, patch);
  }
  async setCallStatus(call: CallIdentity, status: CallStatus) {
    this.journal.setCallStatus(call, status);
  }
  async recordCallResult(call: CallIdentity, result: unknown) {
    this.journal.recordCallResult(call, result);
  }
  async recordApproval(call: CallIdentity & { status: CallStatus }, approval: { approved: boolean; reason?: string }) {
    this.journal.recordApproval(call, approval);
  }
  async recordDecision(call: CallIdentity & { status: CallStatus }, decision: CallDecision) {
    this.journal.recordDecision(call, decision);
  }
  async settleStep(turnId: string, step: number) {
    this.journal.settleStep(turnId, step);
  }
  async calls(turnId: string, step?: number) {
    return this.journal.calls(turnId, step);
  }
  async turnCalls(turnId: string) {
    return this.journal.turnCalls(turnId);
  }
  async openCalls(turnId: string) {
    return this.journal.openCalls(turnId);
  }
}
