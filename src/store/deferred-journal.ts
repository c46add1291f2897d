import type { ModelMessage } from 'ai';
import type { CallDecision } from '../core/hooks.ts';
import type { CallIdentity, CallRecord, CallStatus, StoredMessage, TurnRecord } from './journal.ts';
import type { JournalStore, SessionLeases, SessionListing, TurnPatch } from './journal-store.ts';
import type { SessionBranches } from './session-branches.ts';

/**
 * A PostgreSQL journal store opened on its first use: a harness hands out its journal
 * synchronously, but the store's code (and its driver, pg) is loaded only when a postgres:// store
 * is named and then used, so a SQLite run never pays for it. Every call waits for it, then forwards.
 */
export class DeferredJournalStore implements JournalStore {
  readonly kind = 'postgres' as const;
  private store: Promise<JournalStore> | undefined;
  private readonly open: () => Promise<JournalStore>;

  /** `open` makes the shared store (its module imported there); called once, on the first use. */
  constructor(open: () => Promise<JournalStore>) {
    this.open = open;
  }

  /** The store itself, opened now if it was not yet. */
  opened(): Promise<JournalStore> {
    return (this.store ??= this.open());
  }

  /** The shared store's session leases; they wait for it too. */
  readonly leases: SessionLeases = {
    take: (sessionId, holder, ttlMs) => this.opened().then((store) => store.leases!.take(sessionId, holder, ttlMs)),
    renew: (sessionId, holder, ttlMs) => this.opened().then((store) => store.leases!.renew(sessionId, holder, ttlMs)),
    release: (sessionId, holder) => this.opened().then((store) => store.leases!.release(sessionId, holder)),
  };

  /** The shared store's fork/rewind support and file change record; they wait for it too. */
  readonly branches: SessionBranches = {
    copy: (cut, to, turns) => this.opened().then((store) => store.branches!.copy(cut, to, turns)),
    truncate: (cut, dropTurns) => this.opened().then((store) => store.branches!.truncate(cut, dropTurns)),
    recordFileChanges: (entries) => this.opened().then((store) => store.branches!.recordFileChanges(entries)),
    fileChanges: (turnIds) => this.opened().then((store) => store.branches!.fileChanges(turnIds)),
  };

  /** Closes the store if it was opened (a store never used is never connected). */
  async close(): Promise<void> {
    const store = this.store;
    this.store = undefined;
    if (store) await (await store).close();
  }

  transaction<T>(fn: () => Promise<T>): Promise<T> {
    return this.opened().then((store) => store.transaction(fn));
  }
  ensureSession(sessionId: string): Promise<void> {
    return this.opened().then((store) => store.ensureSession(sessionId));
  }
  hasSession(sessionId: string): Promise<boolean> {
    return this.opened().then((store) => store.hasSession(sessionId));
  }
  listSessions(): Promise<SessionListing[]> {
    return this.opened().then((store) => store.listSessions());
  }
  sessionsWithAttribute(name: string): Promise<Array<SessionListing & { value: string }>> {
    return this.opened().then((store) => store.sessionsWithAttribute(name));
  }
  clearHistory(sessionId: string): Promise<void> {
    return this.opened().then((store) => store.clearHistory(sessionId));
  }
  deleteSession(sessionId: string): Promise<void> {
    return this.opened().then((store) => store.deleteSession(sessionId));
  }
  setSessionAttribute(sessionId: string, name: string, value: string): Promise<void> {
    return this.opened().then((store) => store.setSessionAttribute(sessionId, name, value));
  }
  sessionAttribute(sessionId: string, name: string): Promise<string | undefined> {
    return this.opened().then((store) => store.sessionAttribute(sessionId, name));
  }
  messages(sessionId: string): Promise<StoredMessage[]> {
    return this.opened().then((store) => store.messages(sessionId));
  }
  transcript(sessionId: string): Promise<readonly StoredMessage[]> {
    return this.opened().then((store) => store.transcript(sessionId));
  }
  appendMessage(sessionId: string, turnId: string | null, kind: StoredMessage['kind'], message: ModelMessage, seq?: number): Promise<number> {
    return this.opened().then((store) => store.appendMessage(sessionId, turnId, kind, message, seq));
  }
  replaceMessage(sessionId: string, seq: number, message: ModelMessage): Promise<void> {
    return this.opened().then((store) => store.replaceMessage(sessionId, seq, message));
  }
  compact(sessionId: string, cutSeq: number, summary: ModelMessage): Promise<void> {
    return this.opened().then((store) => store.compact(sessionId, cutSeq, summary));
  }
  startTurn(turnId: string, sessionId: string, question?: ModelMessage): Promise<TurnRecord> {
    return this.opened().then((store) => store.startTurn(turnId, sessionId, question));
  }
  turn(turnId: string): Promise<TurnRecord | undefined> {
    return this.opened().then((store) => store.turn(turnId));
  }
  unfinishedTurn(sessionId: string): Promise<TurnRecord | undefined> {
    return this.opened().then((store) => store.unfinishedTurn(sessionId));
  }
  turnAndUnfinished(turnId: string, sessionId: string): Promise<{ turn: TurnRecord | undefined; unfinished: TurnRecord | undefined }> {
    return this.opened().then((store) => store.turnAndUnfinished(turnId, sessionId));
  }
  claimSuspended(turnId: string): Promise<boolean> {
    return this.opened().then((store) => store.claimSuspended(turnId));
  }
  suspendedTurns(): Promise<TurnRecord[]> {
    return this.opened().then((store) => store.suspendedTurns());
  }
  turns(sessionId: string): Promise<TurnRecord[]> {
    return this.opened().then((store) => store.turns(sessionId));
  }
  updateTurn(turnId: string, patch: TurnPatch): Promise<void> {
    return this.opened().then((store) => store.updateTurn(turnId, patch));
  }
  setCallStatus(call: CallIdentity, status: CallStatus): Promise<void> {
    return this.opened().then((store) => store.setCallStatus(call, status));
  }
  recordCallResult(call: CallIdentity, result: unknown): Promise<void> {
    return this.opened().then((store) => store.recordCallResult(call, result));
  }
  recordApproval(call: CallIdentity & { status: CallStatus }, approval: { approved: boolean; reason?: string }): Promise<void> {
    return this.opened().then((store) => store.recordApproval(call, approval));
  }
  recordDecision(call: CallIdentity & { status: CallStatus }, decision: CallDecision): Promise<void> {
    return this.opened().then((store) => store.recordDecision(call, decision));
  }
  settleStep(turnId: string, step: number): Promise<void> {
    return this.opened().then((store) => store.settleStep(turnId, step));
  }
  calls(turnId: string, step?: number): Promise<CallRecord[]> {
    return this.opened().then((store) => store.calls(turnId, step));
  }
  turnCalls(turnId: string): Promise<Array<{ step: number; ordinal: number; toolName: string; input: unknown }>> {
    return this.opened().then((store) => store.turnCalls(turnId));
  }
  openCalls(turnId: string): Promise<CallRecord[]> {
    return this.opened().then((store) => store.openCalls(turnId));
  }
}
