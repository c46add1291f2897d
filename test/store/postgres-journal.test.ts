// What an engine step costs on the PostgreSQL journal: its writes reach the server as one query,
// the server's own transaction (no BEGIN/COMMIT of its own), with the hot writes prepared on each
// connection. Queries are counted on the pool's real connections to a real throwaway cluster.
import { afterAll, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.ts';
import { fromLanguageModel } from '../../src/model/providers.ts';
import { PostgresJournalStore } from '../../src/store/postgres-journal.ts';
import { POSTGRES_SKIP, postgresForSuite } from '../support/postgres.ts';
import { watchQueries } from '../support/postgres-queries.ts';
import { scriptedModel } from '../support/scripted-model.ts';

const postgres = postgresForSuite();
const stores: PostgresJournalStore[] = [];
afterAll(async () => {
  for (const store of stores) await store.close();
});

async function openStore(maxConnections?: number): Promise<{ store: PostgresJournalStore; sent: string[] }> {
  const store = await PostgresJournalStore.open(postgres.database('pgjournal'), { agentId: 'default', ...(maxConnections ? { maxConnections } : {}) });
  stores.push(store);
  const sent: string[] = [];
  watchQueries(store.pool, (text) => sent.push(text));
  return { store, sent };
}

const tool = { role: 'tool' as const, content: [] };

describe('the PostgreSQL journal on the wire', () => {
  it.skipIf(POSTGRES_SKIP !== '')(`commits a step (settlement + next assistant message) as one statement, with no BEGIN/COMMIT of its own${POSTGRES_SKIP}`, async () => {
    const { store, sent } = await openStore();
    await store.ensureSession('s');
    await store.transaction(() => store.startTurn('t', 's'));
    const call = { turnId: 't', step: 1, callId: 'c1', ordinal: 0, toolName: 'write', input: { path: 'a' } };
    await store.recordCallResult(call, { type: 'text', value: 'full result' });
    sent.length = 0;
    await store.transaction(async () => {
      await store.appendMessage('s', 't', 'tool', tool, 1);
      await store.settleStep('t', 1);
      await store.appendMessage('s', 't', 'assistant', { role: 'assistant', content: 'next' }, 2);
    });
    expect(sent).toHaveLength(1);
    expect(sent[0], 'the three writes go out as one EXECUTE of the statement prepared for them').toMatch(/^EXECUTE acx_step_commit\([^;]*\)$/);
    expect((await store.messages('s')).map((m) => [m.seq, m.turnId, m.kind, m.message])).toEqual([
      [1, 't', 'tool', tool],
      [2, 't', 'assistant', { role: 'assistant', content: 'next' }],
    ]);
    expect((await store.calls('t', 1)).map((c) => [c.callId, c.status, c.result])).toEqual([['c1', 'settled', null]]);
  });

  it.skipIf(POSTGRES_SKIP !== '')(`commits writes of any other shape one statement each, in the order they were made${POSTGRES_SKIP}`, async () => {
    const { store, sent } = await openStore();
    await store.ensureSession('s');
    await store.transaction(() => store.startTurn('t', 's'));
    await store.appendMessage('s', 't', 'assistant', { role: 'assistant', content: 'long arguments' }, 1);
    sent.length = 0;
    await store.transaction(async () => {
      await store.replaceMessage('s', 1, { role: 'assistant', content: 'capped arguments' });
      await store.appendMessage('s', 't', 'tool', tool, 2);
      await store.settleStep('t', 1);
      await store.appendMessage('s', 't', 'assistant', { role: 'assistant', content: 'next' }, 3);
    });
    expect(sent).toHaveLength(1);
    expect(sent[0]!.split(';\n').map((statement) => statement.split(/[ (]/, 2).join(' '))).toEqual([
      'UPDATE acx_messages',
      'EXECUTE acx_append_at_seq',
      'EXECUTE acx_settle_step',
      'EXECUTE acx_append_at_seq',
    ]);
    expect((await store.messages('s')).map((m) => [m.seq, m.message])).toEqual([
      [1, { role: 'assistant', content: 'capped arguments' }],
      [2, tool],
      [3, { role: 'assistant', content: 'next' }],
    ]);
  });

  it.skipIf(POSTGRES_SKIP !== '')(`prepares its hot writes on every connection a transaction takes${POSTGRES_SKIP}`, async () => {
    const { store } = await openStore(3);
    await store.ensureSession('s');
    await store.transaction(() => store.startTurn('t', 's'));
    // Three transactions open at once hold three connections; each must find its statements prepared.
    let arrived = 0;
    let allThere!: () => void;
    const barrier = new Promise<void>((resolve) => (allThere = resolve));
    await Promise.all(
      [1, 2, 3].map((seq) =>
        store.transaction(async () => {
          if (++arrived === 3) allThere();
          await barrier;
          await store.appendMessage('s', 't', 'tool', tool, seq);
        }),
      ),
    );
    expect((await store.messages('s')).map((m) => m.seq)).toEqual([1, 2, 3]);
  });

  it.skipIf(POSTGRES_SKIP !== '')(`prepares again on a connection that lost its prepared writes, in a transaction or at its end${POSTGRES_SKIP}`, async () => {
    const { store } = await openStore(1);
    await store.ensureSession('s');
    await store.transaction(() => store.startTurn('t', 's'));
    // One connection: what DEALLOCATE ALL clears is what the next transaction takes.
    await store.pool.query('DEALLOCATE ALL');
    await store.transaction(() => store.appendMessage('s', 't', 'tool', tool, 1));
    await store.pool.query('DEALLOCATE ALL');
    await store.transaction(async () => {
      await store.appendMessage('s', 't', 'tool', tool, 2);
      expect(await store.messages('s'), 'a read inside the transaction sees its writes').toHaveLength(2);
      await store.appendMessage('s', 't', 'tool', tool, 3);
    });
    expect((await store.messages('s')).map((m) => m.seq)).toEqual([1, 2, 3]);
  });
  it.skipIf(POSTGRES_SKIP !== '')(`starts a turn in one round trip — the session, the turn and its question — and reads neither the turn back nor its ledger; a caller's turn id is read with the unfinished turn${POSTGRES_SKIP}`, async () => {
    const { store, sent } = await openStore();
    let atStart: string[] = [];
    let sentBeforeStep = 0;
    const engine = new Engine({
      model: fromLanguageModel(scriptedModel([{ text: 'Hello.' }])),
      journal: store,
      checkpoint: (event) => {
        if (event.at === 'turn-started') atStart = sent.filter((sql) => !sql.startsWith('PREPARE '));
        if (event.at === 'model-call') sentBeforeStep ||= sent.length;
      },
    });
    const result = await engine.runTurn({ sessionId: 'new-session', prompt: 'Hi.' });
    expect(result.text).toBe('Hello.');
    // What is unfinished; then one query that is one transaction (no BEGIN, no COMMIT): the
    // session (if new), the turn, the session touched, the question numbered by the server.
    expect(atStart).toEqual([
      expect.stringMatching(/^SELECT \* FROM acx_turns WHERE agent_id = \$\d+ AND session_id = \$\d+ AND status IN/),
      expect.stringMatching(/^INSERT INTO acx_sessions [^\n]*;\nINSERT INTO acx_turns [^\n]*;\nUPDATE acx_sessions [^\n]*;\nINSERT INTO acx_messages [^\n]*'user', '\{"role":"user","content":"Hi\."\}'[^\n]*$/),
    ]);
    expect(sent.filter((sql) => /FROM acx_turns WHERE agent_id = \$\d+ AND id = /.test(sql)), 'the turn just written, read back').toEqual([]);
    expect(sent.slice(0, sentBeforeStep).filter((sql) => sql.includes('FROM acx_tool_calls')), 'the ledger of a turn just begun, read').toEqual([]);
    expect(await store.turn(result.turnId)).toMatchObject({ sessionId: 'new-session', status: 'done', finalText: 'Hello.' });
    expect((await store.messages('new-session')).map((m) => [m.seq, m.kind, m.turnId])).toEqual([
      [1, 'user', result.turnId],
      [2, 'assistant', result.turnId],
    ]);
    const withId = sent.length;
    let atStartWithId: string[] = [];
    const redelivered = new Engine({
      model: fromLanguageModel(scriptedModel([{ text: 'Again.' }])),
      journal: store,
      checkpoint: (event) => {
        if (event.at === 'turn-started') atStartWithId = sent.slice(withId).filter((sql) => !sql.startsWith('PREPARE '));
      },
    });
    expect((await redelivered.runTurn({ sessionId: 'new-session', prompt: 'Hi again.', turnId: 'caller-id' })).text).toBe('Again.');
    // A caller's turn id: the turn of that id (a redelivery) and the unfinished one, read at once.
    expect(atStartWithId).toEqual([expect.stringMatching(/^\(SELECT \*, false AS unfinished FROM acx_turns .* UNION ALL /), expect.stringMatching(/^INSERT INTO acx_sessions /)]);
  });
});
