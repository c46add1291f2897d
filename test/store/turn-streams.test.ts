// The TurnStreamStore contract, run against both stores: the SQLite file (a writer is its
// process) and a real throwaway PostgreSQL cluster (a writer lives by its renewed expiry;
// skipped, saying why, when the binaries are not installed). A writer that dies is a real child
// process killed with SIGKILL.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openTurnStreamStore } from '../../src/store/turn-streams.ts';
import type { TurnStreamStore } from '../../src/store/turn-streams.ts';
import { POSTGRES_SKIP, postgresForSuite } from '../support/postgres.ts';
import { streamPlaces } from '../support/stream-places.ts';

const postgres = postgresForSuite();
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
});
const places = streamPlaces(postgres, 'streams');

const key = { sessionId: 'chat-1', turnId: 'turn-1' };
const bodies = (store: TurnStreamStore, turnId = key.turnId) => store.parts({ ...key, turnId }, -1, 100).then((parts) => parts.map((p) => [p.seq, p.body]));

/** A writer in a child process: it opens the stream, appends `parts`, and is then killed by the test. */
function writerProcess(location: string, writer: string, parts: string[], writerTtlMs?: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [join(import.meta.dirname, '../support/stream-writer.ts'), JSON.stringify({ location, writer, parts, ...key, ...(writerTtlMs ? { writerTtlMs } : {}) })], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (data: Buffer) => data.toString().includes('ready') && resolve(child));
    child.once('exit', (code) => reject(new Error(`the writer exited (${code}) before it was ready`)));
  });
}

/** Kills the process and waits until it is gone (reaped: a zombie still looks alive to a pid check). */
function kill(child: ChildProcess): Promise<void> {
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  return exited;
}

describe.each(places)('TurnStreamStore on %s', (name, place, skip) => {
  const stores: TurnStreamStore[] = [];
  const open = async (location = place()) => {
    const store = await openTurnStreamStore(location);
    stores.push(store);
    return store;
  };
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
  });

  it.skipIf(skip !== '')(`numbers a turn's parts from 0 in order, reads them from any place, and numbers on when the turn is opened again${skip}`, async () => {
    const store = await open();
    await store.open(key, 'w1');
    expect(await store.append(key, 'w1', ['a', 'b'])).toBe(true);
    expect(await store.append(key, 'w1', ['c'])).toBe(true);
    expect(await bodies(store)).toEqual([[0, 'a'], [1, 'b'], [2, 'c']]);
    expect((await store.parts(key, 0, 1)).map((p) => p.body)).toEqual(['b']);
    expect(await store.info(key)).toEqual({ ...key, status: 'open', writer: 'w1', writerAlive: true, parts: 3 });
    expect((await store.active(key.sessionId))?.turnId).toBe(key.turnId);

    await store.finish(key, 'w1');
    expect((await store.info(key))?.status).toBe('done');
    expect(await store.active(key.sessionId), 'a finished stream is not the active one').toBeUndefined();
    expect(await store.append(key, 'w1', ['late']), 'a finished stream takes no more').toBe(false);

    // The turn continued by a later call (its approvals answered): the same stream, numbered on.
    await store.open(key, 'w2');
    expect(await store.append(key, 'w2', ['d'])).toBe(true);
    expect(await bodies(store)).toEqual([[0, 'a'], [1, 'b'], [2, 'c'], [3, 'd']]);
    expect((await store.active(key.sessionId))?.writer).toBe('w2');
  });

  it.skipIf(skip !== '')(`a writer another has replaced writes nothing more and cannot finish the stream${skip}`, async () => {
    const store = await open();
    await store.open(key, 'w1');
    await store.append(key, 'w1', ['a']);
    await store.open(key, 'w2');
    expect(await store.append(key, 'w1', ['stale'])).toBe(false);
    expect(await store.renew(key, 'w1')).toBe(false);
    await store.finish(key, 'w1');
    expect(await store.info(key)).toMatchObject({ status: 'open', writer: 'w2', parts: 1 });
    expect(await bodies(store)).toEqual([[0, 'a']]);
  });

  it.skipIf(skip !== '')(`a live writer's stream is never taken over${skip}`, async () => {
    const store = await open();
    await store.open(key, 'w1');
    expect(await store.takeOver(key, 'w2')).toBe(false);
    expect(await store.renew(key, 'w1')).toBe(true);
    expect((await store.info(key))?.writer).toBe('w1');
  });

  it.skipIf(skip !== '')(`a writer whose process died: its parts stay, and exactly one of two readers takes its stream over${skip}`, async () => {
    const location = place();
    // On PostgreSQL the dead writer is known once its expiry passes (the live one renews it): ten seconds here, generous for a busy machine.
    const child = await writerProcess(location, 'dead', ['a', 'b'], name === 'postgres' ? 10_000 : undefined);
    const [one, two] = [await open(location), await open(location)];
    expect(await one.info(key)).toMatchObject({ writer: 'dead', writerAlive: true });
    expect(await one.takeOver(key, 'early'), 'not while it lives').toBe(false);
    await kill(child);
    await expect.poll(async () => (await one.info(key))?.writerAlive, { timeout: 30_000 }).toBe(false);

    const won = await Promise.all([one.takeOver(key, 'r1'), two.takeOver(key, 'r2')]);
    expect(won.filter(Boolean)).toHaveLength(1);
    const winner = won[0] ? 'r1' : 'r2';
    expect(await two.info(key)).toMatchObject({ status: 'open', writer: winner, writerAlive: true, parts: 2 });
    expect(await one.takeOver(key, 'r3'), 'the new writer lives').toBe(false);
    expect(await one.append(key, winner, ['c'])).toBe(true);
    expect(await bodies(two)).toEqual([[0, 'a'], [1, 'b'], [2, 'c']]);
  });

  it.skipIf(skip !== '')(`prunes a finished stream, parts and all, once its keep has passed; a live one stays${skip}`, async () => {
    const store = await open();
    const live = { ...key, turnId: 'live' };
    await store.open(key, 'w');
    await store.append(key, 'w', ['a']);
    await store.finish(key, 'w');
    await store.open(live, 'w');
    await store.append(live, 'w', ['x']);
    expect(await store.prune(60_000), 'kept for its keep').toBe(0);
    expect(await bodies(store)).toEqual([[0, 'a']]);
    await expect.poll(() => store.prune(0), { timeout: 30_000 }).toBe(1);
    expect(await store.info(key)).toBeUndefined();
    expect(await bodies(store)).toEqual([]);
    expect(await bodies(store, 'live')).toEqual([[0, 'x']]);
  });

  it.skipIf(skip !== '')(`prunes a stream left open by a writer that died and that nobody took up${skip}`, async () => {
    const location = place();
    const child = await writerProcess(location, 'dead', ['a'], name === 'postgres' ? 10_000 : undefined);
    const store = await open(location);
    expect(await store.prune(0), 'not while its writer lives').toBe(0);
    await kill(child);
    await expect.poll(() => store.prune(0), { timeout: 30_000 }).toBe(1);
    expect(await store.info(key)).toBeUndefined();
  });

  it.skipIf(skip !== '')(`deleting a session removes its streams only${skip}`, async () => {
    const store = await open();
    const other = { sessionId: 'chat-2', turnId: 't' };
    await store.open(key, 'w');
    await store.append(key, 'w', ['a']);
    await store.open(other, 'w');
    await store.append(other, 'w', ['b']);
    await store.deleteSession(key.sessionId);
    expect(await store.info(key)).toBeUndefined();
    expect(await bodies(store)).toEqual([]);
    expect((await store.parts(other, -1, 10)).map((p) => p.body)).toEqual(['b']);
  });
});

describe('turn streams on a PostgreSQL database shared by agents', () => {
  it.skipIf(POSTGRES_SKIP !== '')(`each agent sees only its own streams${POSTGRES_SKIP}`, async () => {
    const url = postgres.database('streams-agents');
    const [a, b] = await Promise.all([openTurnStreamStore(url, { agentId: 'a' }), openTurnStreamStore(url, { agentId: 'b' })]);
    try {
      await a.open(key, 'w');
      await a.append(key, 'w', ['for a']);
      expect(await b.info(key)).toBeUndefined();
      expect(await b.active(key.sessionId)).toBeUndefined();
      expect(await b.append(key, 'w', ['not for b'])).toBe(false);
      await b.open(key, 'w');
      await b.append(key, 'w', ['for b']);
      expect((await a.parts(key, -1, 10)).map((p) => p.body)).toEqual(['for a']);
      expect((await b.parts(key, -1, 10)).map((p) => p.body)).toEqual(['for b']);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
