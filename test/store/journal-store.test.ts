// The JournalStore contract, run against both implementations: the SQLite file and a real
// throwaway PostgreSQL cluster (skipped, saying why, when the binaries are not installed).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ModelMessage } from 'ai';
import { afterAll, describe, expect, it } from 'vitest';
import { DeferredJournalStore } from '../../src/store/deferred-journal.ts';
import { Journal } from '../../src/store/journal.ts';
import { type JournalStore, SqliteJournalStore } from '../../src/store/journal-store.ts';
import { PostgresJournalStore } from '../../src/store/postgres-journal.ts';
import { POSTGRES_SKIP, postgresForSuite } from '../support/postgres.ts';

const assistant = (...calls: Array<[id: string, tool: string, input: unknown]>): ModelMessage => ({
  role: 'assistant',
  content: calls.map(([toolCallId, toolName, input]) => ({ type: 'tool-call' as const, toolCallId, toolName, input })),
});

const postgres = postgresForSuite();
const dirs: string[] = [];

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const stores: Array<[name: string, open: () => Promise<JournalStore>, skip: string]> = [
  [
    'sqlite',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'acx-journal-store-'));
      dirs.push(dir);
      return new SqliteJournalStore(new Journal(join(dir, 'journal.db')));
    },
    '',
  ],
  ['postgres', async () => PostgresJournalStore.open(postgres.database('journal'), { agentId: 'default' }), POSTGRES_SKIP],
  // What a harness given a postgres:// URL holds: the same store, opened on the first call.
  ['postgres, opened on first use', async () => new DeferredJournalStore(async () => new PostgresJournalStore(postgres.database('journal-deferred'), { agentId: 'default' })), POSTGRES_SKIP],
];

describe('a journal store opened on first use', () => {
  it('opens the store once, on the first call, and closes only a store it opened', async () => {
    const opened: SqliteJournalStore[] = [];
    const deferred = () =>
      new DeferredJournalStore(async () => {
        const dir = mkdtempSync(join(tmpdir(), 'acx-journal-deferred-'));
        dirs.push(dir);
        opened.push(new SqliteJournalStore(new Journal(join(dir, 'journal.db'))));
        return opened.at(-1)!;
      });
    const unused = deferred();
    await unused.close();
    expect(opened).toHaveLength(0);
    const used = deferred();
    await Promise.all([used.ensureSession('s'), used.ensureSession('t')]);
    expect(opened).toHaveLength(1);
    expect((await used.listSessions()).map((s) => s.id).sort()).toEqual(['s', 't']);
    expect(await opened[0]!.hasSession('s')).toBe(true);
    await used.close();
  });
});

describe.each(stores)('JournalStore on %s', (_name, open, skip) => {
  it.skipIf(skip !== '')(`starts a turn with its question in one commit, and reads a turn by id with the session's unfinished one${skip}`, async () => {
    const journal = await open();
    try {
      await journal.ensureSession('s');
      await journal.startTurn('done-turn', 's', { role: 'user', content: 'first?' });
      await journal.updateTurn('done-turn', { status: 'done', finalText: 'yes' });
      await journal.startTurn('open-turn', 's', { role: 'user', content: 'second?' });
      expect((await journal.messages('s')).map((m) => [m.seq, m.turnId, m.kind, m.message.content])).toEqual([
        [1, 'done-turn', 'user', 'first?'],
        [2, 'open-turn', 'user', 'second?'],
      ]);
      const ids = async (turnId: string, sessionId: string) => {
        const { turn, unfinished } = await journal.turnAndUnfinished(turnId, sessionId);
        return [turn ? `${turn.id}:${turn.status}` : undefined, unfinished ? `${unfinished.id}:${unfinished.status}` : undefined];
      };
      expect(await ids('done-turn', 's')).toEqual(['done-turn:done', 'open-turn:running']);
      expect(await ids('open-turn', 's')).toEqual(['open-turn:running', 'open-turn:running']);
      expect(await ids('no-such-turn', 's')).toEqual([undefined, 'open-turn:running']);
      expect(await ids('done-turn', 'another-session')).toEqual(['done-turn:done', undefined]);
      expect(await journal.turnAndUnfinished('open-turn', 's')).toEqual({ turn: await journal.turn('open-turn'), unfinished: await journal.unfinishedTurn('s') });
    } finally {
      await journal.close();
    }
  });

  it.skipIf(skip !== '')(`gives a started turn exactly as it reads back${skip}`, async () => {
    const journal = await open();
    try {
      await journal.ensureSession('s');
      let started: Awaited<ReturnType<JournalStore['startTurn']>> | undefined;
      await journal.transaction(async () => {
        started = await journal.startTurn('t', 's');
      });
      expect(started).toStrictEqual(await journal.turn('t'));
      expect(started).toMatchObject({ id: 't', sessionId: 's', status: 'running', steps: 0, endedAt: null });
    } finally {
      await journal.close();
    }
  });

  it.skipIf(skip !== '')(`keeps a turn, its messages and its call ledger as the engine writes them${skip}`, async () => {
    const journal = await open();
    try {
      await journal.ensureSession('s');
      await journal.transaction(async () => {
        await journal.startTurn('t', 's');
        await journal.appendMessage('s', 't', 'user', { role: 'user', content: 'go' });
      });
      expect(await journal.hasSession('s')).toBe(true);
      expect((await journal.unfinishedTurn('s'))?.id).toBe('t');
      const seq = await journal.appendMessage('s', 't', 'assistant', assistant(['a', 'send', { k: 1 }], ['b', 'lookup', {}]));
      expect(seq).toBe(2);
      await expect(journal.appendMessage('s', 't', 'note', { role: 'user', content: 'dup' }, 2), 'a taken sequence number is refused').rejects.toThrow();
      const [a, b] = await journal.openCalls('t');
      expect([a?.status, b?.status]).toEqual(['pending', 'pending']);
      await journal.setCallStatus(a!, 'started');
      await journal.recordCallResult(b!, { type: 'text', value: 'found' });
      expect((await journal.openCalls('t')).map((c) => [c.callId, c.status, c.result])).toEqual([
        ['a', 'started', null],
        ['b', 'done', { type: 'text', value: 'found' }],
      ]);
      expect(await journal.turnCalls('t')).toEqual([
        { step: 1, ordinal: 0, toolName: 'send', input: { k: 1 } },
        { step: 1, ordinal: 1, toolName: 'lookup', input: {} },
      ]);
      await journal.transaction(async () => {
        await journal.appendMessage('s', 't', 'tool', { role: 'tool', content: [] }, 3);
        await journal.settleStep('t', 1);
      });
      expect(await journal.openCalls('t')).toEqual([]);
      await journal.updateTurn('t', { status: 'done', finalText: 'ok', steps: 1, nudged: true });
      const turn = await journal.turn('t');
      expect([turn?.status, turn?.finalText, turn?.nudged, turn?.endedAt !== null]).toEqual(['done', 'ok', true, true]);
      expect((await journal.messages('s')).map((m) => [m.seq, m.kind])).toEqual([
        [1, 'user'],
        [2, 'assistant'],
        [3, 'tool'],
      ]);
    } finally {
      await journal.close();
    }
  });

  it.skipIf(skip !== '')(`rolls a failed transaction back whole${skip}`, async () => {
    const journal = await open();
    try {
      await journal.ensureSession('s');
      await expect(
        journal.transaction(async () => {
          await journal.startTurn('t', 's');
          await journal.appendMessage('s', 't', 'user', { role: 'user', content: 'go' }, 1);
          await journal.appendMessage('s', 't', 'user', { role: 'user', content: 'again' }, 1);
        }),
      ).rejects.toThrow();
      expect(await journal.turns('s')).toEqual([]);
      expect(await journal.messages('s')).toEqual([]);
    } finally {
      await journal.close();
    }
  });

  it.skipIf(skip !== '')(`keeps any text exactly, quotes, backslashes and SQL included, in a transaction or not${skip}`, async () => {
    const journal = await open();
    const nasty = "it's \\ a \\' quote'); DROP TABLE acx_messages; -- $1 $$ \u00e9\u4e2d\ud83d\ude00 \n\t end";
    try {
      await journal.ensureSession("s'; --");
      await journal.transaction(async () => {
        await journal.startTurn('t', "s'; --");
        await journal.appendMessage("s'; --", 't', 'user', { role: 'user', content: nasty }, 1);
        await journal.updateTurn('t', { finalText: nasty, error: null, steps: -1, nudged: false });
      });
      await journal.appendMessage("s'; --", 't', 'user', { role: 'user', content: nasty }, 2);
      const messages = await journal.messages("s'; --");
      expect(messages.map((m) => m.message)).toEqual([
        { role: 'user', content: nasty },
        { role: 'user', content: nasty },
      ]);
      const turn = await journal.turn('t');
      expect([turn?.finalText, turn?.steps, turn?.nudged]).toEqual([nasty, -1, false]);
    } finally {
      await journal.close();
    }
  });

  it.skipIf(skip !== '')(`reads, inside a transaction, what that transaction wrote before${skip}`, async () => {
    const journal = await open();
    try {
      await journal.ensureSession('s');
      const seen = await journal.transaction(async () => {
        await journal.startTurn('t', 's');
        await journal.appendMessage('s', 't', 'user', { role: 'user', content: 'go' }, 1);
        const read = [(await journal.turn('t'))?.status, (await journal.messages('s')).length];
        await journal.updateTurn('t', { status: 'done' });
        return read;
      });
      expect(seen).toEqual(['running', 1]);
      expect((await journal.turn('t'))?.status).toBe('done');
    } finally {
      await journal.close();
    }
  });

  it.skipIf(skip !== '')(`hands a suspended turn to exactly one of many claimants${skip}`, async () => {
    const journal = await open();
    try {
      await journal.ensureSession('s');
      await journal.startTurn('t', 's');
      await journal.updateTurn('t', { status: 'suspended' });
      expect((await journal.suspendedTurns()).map((t) => t.id)).toEqual(['t']);
      const claims = await Promise.all(Array.from({ length: 8 }, () => journal.claimSuspended('t')));
      expect(claims.filter(Boolean)).toHaveLength(1);
    } finally {
      await journal.close();
    }
  });

  it.skipIf(skip !== '')(`keeps session attributes and deletes a session whole${skip}`, async () => {
    const journal = await open();
    try {
      await journal.setSessionAttribute('s', 'acp.cwd', '/w');
      await journal.setSessionAttribute('s', 'acp.cwd', '/x');
      expect(await journal.sessionAttribute('s', 'acp.cwd')).toBe('/x');
      expect((await journal.sessionsWithAttribute('acp.cwd')).map((s) => [s.id, s.value])).toEqual([['s', '/x']]);
      await journal.startTurn('t', 's');
      await journal.appendMessage('s', 't', 'user', { role: 'user', content: 'go' });
      await journal.deleteSession('s');
      expect([await journal.hasSession('s'), await journal.turns('s'), await journal.listSessions()]).toEqual([false, [], []]);
    } finally {
      await journal.close();
    }
  });
});
