import { randomUUID } from 'node:crypto';
import { AcxError, HarnessCapabilityUnsupportedError } from '../core/errors.ts';
import type { TurnRecord } from '../store/journal.ts';
import type { JournalStore } from '../store/journal-store.ts';
import type { SessionBranches } from '../store/session-branches.ts';
import { planFileRestore, stageFileRestore, type RestoredFile } from './file-rewind.ts';

/**
 * Session fork and rewind on the engine's journal. Turns are numbered from 1 in the order they
 * started; "at turn N" keeps turns 1..N and every message written before turn N+1's first one.
 */

export interface ForkOptions {
  /** Keep turns 1..atTurn (0: none). Default: every finished turn. */
  atTurn?: number;
}

export interface RewindOptions {
  /** Keep turns 1..toTurn (0: none); every later turn is removed from the transcript. */
  toTurn: number;
  /** Also restore the workspace files the agent's tools changed after that turn (default false). */
  files?: boolean;
}

export interface RewindResult {
  /** How many turns were removed. */
  turnsRemoved: number;
  /** The files put back as they were after turn `toTurn` (with `files: true`), by path. */
  files: RestoredFile[];
}

const FINISHED = new Set<TurnRecord['status']>(['done', 'failed', 'cancelled']);

function branchesOf(journal: JournalStore): SessionBranches {
  if (!journal.branches) {
    throw new HarnessCapabilityUnsupportedError('This journal store has no fork or rewind (it implements no `branches`).', {
      hint: 'Use the SQLite journal or a postgres:// store.',
    });
  }
  return journal.branches;
}

/** Where a session splits at turn `at`: the turns kept and dropped, and the first message seq that is dropped. */
async function cutAt(journal: JournalStore, sessionId: string, at: number, verb: 'fork' | 'rewind') {
  if (!(await journal.hasSession(sessionId))) {
    throw new AcxError('session-not-found', `There is no session ${sessionId}.`, { hint: 'List the sessions with `acx sessions list`.' });
  }
  const turns = await journal.turns(sessionId);
  if (!Number.isInteger(at) || at < 0 || at > turns.length) {
    throw new AcxError('usage', `Session ${sessionId} has ${turns.length} turn${turns.length === 1 ? '' : 's'}; the turn to ${verb} at is a whole number from 0 to ${turns.length}, not ${at}.`, {
      hint: 'Turns are numbered from 1 in the order they started (`acx sessions show` lists them).',
    });
  }
  const kept = turns.slice(0, at);
  const dropped = turns.slice(at);
  const unfinished = kept.findIndex((turn) => !FINISHED.has(turn.status));
  if (unfinished >= 0) {
    throw new AcxError('turn-unfinished', `Turn ${unfinished + 1} of session ${sessionId} has not finished (it is ${kept[unfinished]!.status}).`, {
      hint: `Use a turn before it, or let it finish (or abandon it) first.`,
    });
  }
  const messages = await journal.messages(sessionId);
  const droppedIds = new Set(dropped.map((turn) => turn.id));
  const first = messages.find((message) => message.turnId !== null && droppedIds.has(message.turnId));
  // Compaction folds whole turns, oldest first, into one summary: when the first turn to drop has
  // lost its opening message to it, the summary speaks for turns on both sides of the cut.
  const firstDropped = dropped[0];
  if (firstDropped && messages.some((m) => m.kind === 'summary') && !messages.some((m) => m.turnId === firstDropped.id && m.kind === 'user')) {
    throw new AcxError('turn-compacted', `Turn ${at + 1} of session ${sessionId} has been compacted into a summary, so the transcript cannot be cut after turn ${at}.`, {
      hint: 'Use a later turn: those after the summary can still be cut at.',
    });
  }
  return { kept, dropped, cut: { sessionId, cutSeq: first?.seq } };
}

/** Copies a session up to a turn into a new session; returns the new session's id. The original is not touched. */
export async function forkSession(journal: JournalStore, sessionId: string, options: ForkOptions = {}): Promise<string> {
  const branches = branchesOf(journal);
  let at = options.atTurn;
  if (at === undefined) {
    const turns = await journal.turns(sessionId);
    const open = turns.findIndex((turn) => !FINISHED.has(turn.status));
    at = open >= 0 ? open : turns.length;
  }
  const { kept, cut } = await cutAt(journal, sessionId, at, 'fork');
  const forkId = randomUUID();
  await branches.copy(cut, forkId, kept.map((turn) => ({ from: turn.id, to: randomUUID() })));
  return forkId;
}

/**
 * Cuts a session back to a turn, and with `files` puts back the files the agent's tools changed
 * after it. Nothing half-done: every file is checked first (a refusal changes nothing), the
 * restored contents are written beside their files before the transcript is cut, and only then
 * moved into place.
 */
export async function rewindSession(journal: JournalStore, sessionId: string, options: RewindOptions): Promise<RewindResult> {
  const branches = branchesOf(journal);
  const turns = await journal.turns(sessionId);
  const open = turns.findIndex((turn) => !FINISHED.has(turn.status));
  if (open >= 0) {
    throw new AcxError('turn-unfinished', `Turn ${open + 1} of session ${sessionId} has not finished (it is ${turns[open]!.status}); a session is rewound between turns.`, {
      hint: 'Let it finish, or give it up with session.abandonTurn(turnId, reason), then rewind.',
    });
  }
  const { kept, dropped, cut } = await cutAt(journal, sessionId, options.toTurn, 'rewind');
  if (!options.files) {
    await branches.truncate(cut, dropped.map((turn) => turn.id));
    return { turnsRemoved: dropped.length, files: [] };
  }
  const [before, after] = await Promise.all([branches.fileChanges(kept.map((turn) => turn.id)), branches.fileChanges(dropped.map((turn) => turn.id))]);
  const staged = stageFileRestore(sessionId, planFileRestore(before, after));
  try {
    await branches.truncate(cut, dropped.map((turn) => turn.id));
  } catch (error) {
    staged.discard();
    throw error;
  }
  return { turnsRemoved: dropped.length, files: staged.publish() };
}
