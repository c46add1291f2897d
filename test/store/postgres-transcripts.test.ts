// A long session's next turn on the PostgreSQL journal reads only what was added since the last
// read, and still sees every other change to the session's messages, whoever made it: two
// stores stand for two workers, a plain pool for someone editing the table by hand. Rows are
// counted on the pool's real connections to a real throwaway cluster.
import pg from 'pg';
import type { ModelMessage } from 'ai';
import { afterAll, describe, expect, it } from 'vitest';
import { PostgresJournalStore } from '../../src/store/postgres-journal.ts';
import { JOURNAL_MIGRATIONS } from '../../src/store/postgres-journal-schema.ts';
import { PostgresTranscripts } from '../../src/store/postgres-transcripts.ts';
import { migratePostgres } from '../../src/store/postgres-migrations.ts';
import { POSTGRES_SKIP, postgresForSuite } from '../support/postgres.ts';
import { watchQueries } from '../support/postgres-queries.ts';

const postgres = postgresForSuite();
const closing: Array<{ close?: () => Promise<void>; end?: () => Promise<void> }> = [];
afterAll(async () => {
  for (const c of closing) await (c.close ?? c.end)!.call(c);
});

/** A store whose reads of acx_messages are counted: how many message rows each one fetched. */
async function openStore(url: string): Promise<{ store: PostgresJournalStore; fetched: number[] }> {
  const store = await PostgresJournalStore.open(url, { agentId: 'default' });
  closing.push(store);
  const fetched: number[] = [];
  watchQueries(store.pool, (text, result) => {
    if (/^SELECT .* acx_messages/.test(text)) fetched.push(result.rows.filter((row: { seq?: unknown }) => row.seq != null).length);
  });
  return { store, fetched };
}

const say = (text: string): ModelMessage => ({ role: 'user', content: text });
const texts = (messages: ReadonlyArray<{ seq: number; message: ModelMessage }>) => messages.map((m) => `${m.seq}:${String(m.message.content)}`);

async function appendAll(store: PostgresJournalStore, session: string, from: number, to: number): Promise<void> {
  for (let seq = from; seq <= to; seq++) await store.appendMessage(session, null, 'user', say(`m${seq}`), seq);
}

describe('the PostgreSQL journal keeps what it read of a transcript', () => {
  it.skipIf(POSTGRES_SKIP !== '')(`reads only the messages added since its last read, and hands out the ones it kept${POSTGRES_SKIP}`, async () => {
    const { store, fetched } = await openStore(postgres.database('transcripts'));
    await store.ensureSession('s');
    await appendAll(store, 's', 1, 400);
    const first = await store.transcript('s');
    expect(fetched).toEqual([400]);
    await appendAll(store, 's', 401, 402);
    fetched.length = 0;
    const second = await store.transcript('s');
    expect(fetched, 'the second read fetches the two new messages only').toEqual([2]);
    expect(texts(second)).toEqual(texts(await store.messages('s')));
    expect(second[0], 'a message already read is the object handed out before').toBe(first[0]);
    expect(first, 'an array handed out earlier does not change').toHaveLength(400);
    fetched.length = 0;
    expect(await store.transcript('s')).toBe(second);
    expect(fetched).toEqual([0]);
    expect(await store.transcript('none')).toEqual([]);
  });

  it.skipIf(POSTGRES_SKIP !== '')(`sees every change that is not an append, made by another store or by hand${POSTGRES_SKIP}`, async () => {
    const url = postgres.database('transcripts');
    const { store: reader } = await openStore(url);
    const { store: writer } = await openStore(url);
    const byHand = new pg.Pool({ connectionString: url, max: 1 });
    closing.push(byHand);
    const same = async () => expect(texts(await reader.transcript('s'))).toEqual(texts(await writer.messages('s')));
    await writer.ensureSession('s');
    await appendAll(writer, 's', 1, 6);
    await same();

    await writer.replaceMessage('s', 3, say('m3 capped'));
    await same();
    expect(String((await reader.transcript('s'))[2]!.message.content)).toBe('m3 capped');

    // A rewind to seq 4 and a new answer there: the same seqs as before, other messages.
    await writer.branches.truncate({ sessionId: 's', cutSeq: 4 }, []);
    await writer.appendMessage('s', null, 'user', say('after the rewind'), 4);
    await same();
    expect(texts(await reader.transcript('s'))).toEqual(['1:m1', '2:m2', '3:m3 capped', '4:after the rewind']);

    await writer.compact('s', 3, say('summary'));
    await same();

    await byHand.query("UPDATE acx_messages SET body = $1 WHERE session_id = 's' AND seq = 3", [JSON.stringify(say('edited by hand'))]);
    await same();
    await byHand.query("DELETE FROM acx_messages WHERE session_id = 's' AND seq = 4");
    await same();

    // Deleted and made again, with as many messages as the reader kept: a new session.
    await writer.deleteSession('s');
    expect(await reader.transcript('s')).toEqual([]);
    await writer.ensureSession('s');
    await appendAll(writer, 's', 1, 3);
    await reader.transcript('s');
    await writer.deleteSession('s');
    await writer.ensureSession('s');
    await writer.appendMessage('s', null, 'user', say('a new session'), 1);
    await writer.appendMessage('s', null, 'user', say('its second message'), 2);
    await writer.appendMessage('s', null, 'user', say('its third message'), 3);
    await same();

    await writer.clearHistory('s');
    expect(await reader.transcript('s')).toEqual([]);
  });

  it.skipIf(POSTGRES_SKIP !== '')(`sees a compaction whose summary lands below what it kept, though its DELETE removed nothing${POSTGRES_SKIP}`, async () => {
    const url = postgres.database('transcripts');
    const { store: reader } = await openStore(url);
    const { store: writer } = await openStore(url);
    await writer.ensureSession('s');
    await appendAll(writer, 's', 1, 10);
    await writer.compact('s', 8, say('the first summary'));
    expect(texts(await reader.transcript('s'))).toEqual(['7:the first summary', '8:m8', '9:m9', '10:m10']);
    // A compaction that began before the first one finished: nothing below its cut is left.
    await writer.compact('s', 4, say('a late summary'));
    expect(texts(await reader.transcript('s'))).toEqual(texts(await writer.messages('s')));
    expect(texts(await reader.transcript('s'))).toEqual(['3:a late summary', '7:the first summary', '8:m8', '9:m9', '10:m10']);
  });

  it.skipIf(POSTGRES_SKIP !== '')(`sees a message moved by hand into a session it kept${POSTGRES_SKIP}`, async () => {
    const url = postgres.database('transcripts');
    const { store: reader } = await openStore(url);
    const { store: writer } = await openStore(url);
    const byHand = new pg.Pool({ connectionString: url, max: 1 });
    closing.push(byHand);
    for (const session of ['from', 'to']) await writer.ensureSession(session);
    await writer.appendMessage('from', null, 'user', say('moved'), 1);
    await writer.appendMessage('to', null, 'user', say('already there'), 2);
    expect(texts(await reader.transcript('to'))).toEqual(['2:already there']);
    await byHand.query("UPDATE acx_messages SET session_id = 'to' WHERE session_id = 'from' AND seq = 1");
    expect(texts(await reader.transcript('to'))).toEqual(['1:moved', '2:already there']);
  });

  it.skipIf(POSTGRES_SKIP !== '')(`keeps nothing it read inside a transaction that rolled back${POSTGRES_SKIP}`, async () => {
    const { store } = await openStore(postgres.database('transcripts'));
    await store.ensureSession('s');
    await appendAll(store, 's', 1, 2);
    await store.transcript('s');
    await expect(
      store.transaction(async () => {
        await store.appendMessage('s', null, 'user', say('never committed'), 3);
        expect(texts(await store.transcript('s'))).toEqual(['1:m1', '2:m2', '3:never committed']);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(texts(await store.transcript('s'))).toEqual(['1:m1', '2:m2']);
    await store.appendMessage('s', null, 'user', say('m3'), 3);
    expect(texts(await store.transcript('s'))).toEqual(['1:m1', '2:m2', '3:m3']);
  });

  it.skipIf(POSTGRES_SKIP !== '')(`gives each session an epoch of its own when an existing journal is migrated${POSTGRES_SKIP}`, async () => {
    const url = postgres.database('transcripts');
    const before = new pg.Pool({ connectionString: url, max: 1 });
    closing.push(before);
    await migratePostgres(before, JOURNAL_MIGRATIONS.slice(0, -1), 'acx_journal_migrations');
    for (const id of ['a', 'b']) {
      await before.query("INSERT INTO acx_sessions (agent_id, id, created_at, updated_at) VALUES ('default', $1, 'then', 'then')", [id]);
      await before.query("INSERT INTO acx_messages (agent_id, session_id, seq, turn_id, kind, body, created_at) VALUES ('default', $1, 1, NULL, 'user', $2, 'then')", [id, JSON.stringify(say(`in ${id}`))]);
    }
    const { store } = await openStore(url);
    const epochs = (await before.query<{ transcript_epoch: string }>('SELECT transcript_epoch FROM acx_sessions ORDER BY id')).rows.map((r) => r.transcript_epoch);
    expect(new Set(epochs).size).toBe(2);
    expect(texts(await store.transcript('a'))).toEqual(['1:in a']);
    await before.query("UPDATE acx_messages SET body = $1 WHERE session_id = 'a'", [JSON.stringify(say('changed'))]);
    expect(texts(await store.transcript('a'))).toEqual(['1:changed']);
  });
});

describe('what PostgresTranscripts keeps', () => {
  it('counts a session once when two reads of it overlap, so the size bound does not fill with nothing', async () => {
    const body = JSON.stringify(say('x'.repeat(20)));
    const asked: number[] = [];
    const query = async <R extends object>(_sql: string, values: unknown[]): Promise<R[]> => {
      asked.push(values[1] as number);
      await new Promise((resolve) => setImmediate(resolve));
      // As TRANSCRIPT_SINCE answers: the session's row joined with its messages after $2, or alone.
      const rows = [1, 2].filter((seq) => seq > (values[1] as number)).map((seq) => ({ epoch: '1', seq, turn_id: null, kind: 'user', body }));
      return (rows.length > 0 ? rows : [{ epoch: '1', seq: null }]) as unknown as R[];
    };
    const transcripts = new PostgresTranscripts({ chars: body.length * 2 + 10 });
    await Promise.all([transcripts.read('s', query), transcripts.read('s', query)]);
    asked.length = 0;
    expect(await transcripts.read('s', query)).toHaveLength(2);
    expect(asked, 'the next read asks only for what came after the kept messages').toEqual([2]);
  });
});
