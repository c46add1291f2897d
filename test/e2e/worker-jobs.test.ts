// What `acx worker` does with each kind of job, on real PostgreSQL and pg-boss with a real worker
// process: the same event delivered twice is answered once and both jobs complete; an event the
// model always refuses is retried by pg-boss, set aside by the wake after --max-attempts and
// dead-lettered; a job for an agent the worker does not serve is dead-lettered at once.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWakeStore } from '../../src/store/open-wake-store.ts';
import { POSTGRES_SKIP, type PostgresCluster, startPostgres } from '../support/postgres.ts';
import { scaled } from '../support/time-scale.ts';
import type { RecordedRequest } from '../support/model-server.ts';
import { waitFor } from '../support/wait.ts';
import { type Fleet, FLEET_AGENT, startFleet } from '../support/worker-fleet.ts';

let cluster: PostgresCluster | undefined;
let fleet: Fleet | undefined;
beforeAll(async () => {
  if (POSTGRES_SKIP) return;
  cluster = startPostgres();
  fleet = await startFleet(cluster.createDatabase('worker_jobs'));
}, scaled(120_000));
afterAll(async () => {
  await fleet?.close();
  cluster?.stop();
});

describe('acx worker jobs (e2e, real PostgreSQL and pg-boss)', () => {
  const test = POSTGRES_SKIP ? it.skip : it;
  test(`a duplicate is answered once, a poison event and an unknown agent end in the dead-letter queue${POSTGRES_SKIP}`, { timeout: scaled(120_000) }, async () => {
    const f = fleet!;
    const worker = f.startWorker(2, ['--max-attempts', '2']);
    const repeat = { id: 'evt-s01-e1', text: 'Please log evt-s01-e1.' };
    await f.queue.send({ kind: 'session', agent: FLEET_AGENT, sessionId: 'room-01', event: repeat });
    await f.queue.send({ kind: 'session', agent: FLEET_AGENT, sessionId: 'room-01', event: repeat });
    await f.queue.send({ kind: 'session', agent: FLEET_AGENT, sessionId: 'room-02', event: { id: 'evt-s02-e1', text: 'poison evt-s02-e1' } });
    await f.queue.send({ kind: 'session', agent: 'ghost', sessionId: 'room-03', event: { id: 'evt-s03-e1', text: 'Please log evt-s03-e1.' } });
    const settled = async () => {
      const { states } = await f.jobStates();
      return (states.completed ?? 0) + (states.failed ?? 0) === 4;
    };
    await waitFor('jobs not settled', settled, { withinMs: 90_000, everyMs: 200, explain: async () => `${JSON.stringify((await f.jobStates()).states)}\n${worker.stderr().slice(-3000)}` });
    worker.child.kill('SIGTERM');
    expect((await worker.exited).status).toBe(0);
    const log = worker.stderr();

    expect(await f.jobStates()).toEqual({ states: { completed: 2, failed: 2 }, deadLettered: 2 });
    // The duplicate: one ledger line, one turn's first step, the second job a nothing-new wake.
    const ledger = existsSync(f.ledger) ? readFileSync(f.ledger, 'utf8') : '';
    expect(ledger).toBe('evt-s01-e1\n');
    expect(log).toMatch(/INFO wake start session=room-01 event=evt-s01-e1 new_event=false/);
    expect(log).toMatch(/INFO wake end session=room-01 outcome=nothing-new turns=0/);
    // The poison event: a retry by pg-boss, then set aside by the wake and dead-lettered.
    expect(log).toMatch(/WARNING worker job retried job=\S+ session=room-02 attempt=1/);
    expect(log).toMatch(/ERROR wake event failed session=room-02 event=evt-s02-e1 attempts=2/);
    const store = await openWakeStore({ stateDir: f.home, storeUrl: f.storeUrl, agentId: FLEET_AGENT });
    try {
      expect((await store.item('room-02', 'evt-s02-e1'))?.state).toBe('failed');
      expect((await store.item('room-01', 'evt-s01-e1'))?.state).toBe('done');
      expect(await store.items('room-03'), "the unknown agent's event was never recorded").toEqual([]);
    } finally {
      await store.close();
    }
    expect(log).toMatch(/ERROR worker job refused job=\S+ agent=ghost reason="this worker serves no agent named ghost"/);
  });

  test(`an agent stays prepared between jobs and is prepared again, from its new files, once they change${POSTGRES_SKIP}`, { timeout: scaled(120_000) }, async () => {
    const f = await startFleet(cluster!.createDatabase('worker_reprepare'));
    try {
      const worker = f.startWorker(1);
      const send = (room: number) => f.queue.send({ kind: 'session', agent: FLEET_AGENT, sessionId: `room-${room}`, event: { id: `evt-s0${room}-e1`, text: `Please log evt-s0${room}-e1.` } });
      const completed = (n: number) => async () => ((await f.jobStates()).states.completed ?? 0) >= n;
      const explain = async () => `${JSON.stringify((await f.jobStates()).states)}\n${worker.stderr().slice(-3000)}`;
      await send(1);
      await send(2);
      await waitFor('the first two jobs not completed', completed(2), { withinMs: 60_000, everyMs: 100, explain });
      expect(worker.stderr(), 'answering jobs changes nothing the agent is prepared from').not.toMatch(/worker agent changed/);
      const agentJson = join(f.agentDir, 'agent.json');
      writeFileSync(agentJson, readFileSync(agentJson, 'utf8').replace('"openai:fleet-model"', '"openai:fleet-model-2"'));
      await waitFor('the change not noticed', () => /INFO worker agent changed agent=ledger/.test(worker.stderr()), { withinMs: 30_000, everyMs: 50, explain });
      await send(3);
      await waitFor('the third job not completed', completed(3), { withinMs: 60_000, everyMs: 100, explain });
      worker.child.kill('SIGTERM');
      expect((await worker.exited).status).toBe(0);
      // The event a request answers: its newest user message (recalled memories may quote older events).
      const prompt = (r: RecordedRequest) => r.view.messages.filter((m) => m.role === 'user' && !m.text.startsWith('<acx-brief>')).at(-1)?.text ?? '';
      const modelFor = (event: string) => [...new Set(f.server.requests.filter((r) => prompt(r).includes(event)).map((r) => r.view.model))];
      expect(modelFor('evt-s01-e1')).toEqual(['fleet-model']);
      expect(modelFor('evt-s02-e1')).toEqual(['fleet-model']);
      expect(modelFor('evt-s03-e1'), 'one worker process throughout, its agent prepared again').toEqual(['fleet-model-2']);
    } finally {
      await f.close();
    }
  });
  // Found by the 15-minute chaos run: a worker SIGKILLed during an outage and restarted by its
  // supervisor exited at once ("Cannot connect to the PostgreSQL store") six times in a row, since
  // it opened each agent's wake store before the queue's wait for the server.
  test(`a worker started while PostgreSQL is down waits for it, then answers${POSTGRES_SKIP}`, { timeout: scaled(120_000) }, async () => {
    const f = await startFleet(cluster!.createDatabase('worker_late'));
    try {
      await cluster!.halt();
      let worker: ReturnType<Fleet['startWorker']> | undefined;
      let exited: { status: number | null } | undefined;
      try {
        worker = f.startWorker(1);
        void worker.exited.then((result) => (exited = result));
        const explain = () => worker!.stderr().slice(-3000);
        await waitFor('the worker does not say it waits', () => /WARNING postgres not reachable yet /.test(worker!.stderr()) || exited !== undefined, { withinMs: 60_000, everyMs: 50, explain });
        expect(exited, 'still running while the server is down').toBeUndefined();
      } finally {
        await cluster!.start();
      }
      await waitFor('the worker does not start', () => /INFO worker started /.test(worker!.stderr()), { withinMs: 60_000, everyMs: 100, explain: () => worker!.stderr().slice(-3000) });
      expect(worker!.stderr()).toMatch(/INFO postgres reachable url=\S+ waited=[\d.]+s/);
      await f.queue.send({ kind: 'session', agent: FLEET_AGENT, sessionId: 'room-09', event: { id: 'evt-s09-e1', text: 'Please log evt-s09-e1.' } });
      await waitFor('the job not completed', async () => ((await f.jobStates()).states.completed ?? 0) >= 1, { withinMs: 60_000, everyMs: 100, explain: () => worker!.stderr().slice(-3000) });
      worker!.child.kill('SIGTERM');
      expect((await worker!.exited).status).toBe(0);
      expect(readFileSync(f.ledger, 'utf8')).toBe('evt-s09-e1\n');
    } finally {
      await f.close();
    }
  });
});
