// One turn per session at a time across replicas, on the PostgreSQL store: two harnesses (two
// "replicas") share one real throwaway cluster; the second generate() on a busy session waits
// and then fails with session-busy; a dead holder's expired lease is taken over, a live one never;
// a holder whose lease is taken over mid-turn stops its turn and leaves it to the next holder.
import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEngineHarness } from '../../src/harness/engine-harness.ts';
import { HarnessAgent } from '../../src/harness/harness-agent.ts';
import { fromLanguageModel } from '../../src/model/providers.ts';
import { tool } from '../../src/tools/tool.ts';
import { POSTGRES_SKIP, type PostgresCluster, startPostgres } from '../support/postgres.ts';
import { scriptedModel, toolResultCount } from '../support/scripted-model.ts';
import { scaled } from '../support/time-scale.ts';
import { AcxError } from '../../src/core/errors.ts';
import { leaseTakingTool, takeSessionLease } from '../support/lease-taker.ts';
import { machineId } from '../../src/store/lease-holder.ts';

let cluster: PostgresCluster | undefined;
let url = '';
beforeAll(() => {
  if (POSTGRES_SKIP) return;
  cluster = startPostgres();
  url = cluster.createDatabase('leases');
}, scaled(120_000));
afterAll(() => cluster?.stop());

/** A replica: its own harness on the shared store; its `hold` tool waits until `gate` opens. */
function replica(gate: { entered?: () => void; open: Promise<void> }, waitMs: number, agentId?: string) {
  const model = scriptedModel((options) => (toolResultCount(options) === 0 ? { toolCalls: [{ id: 'h', name: 'hold', input: {} }] } : { text: 'done' }));
  const harness = createEngineHarness({ model: fromLanguageModel(model), store: url, sessionLease: { waitMs, ttlMs: scaled(2_000) }, ...(agentId ? { agentId } : {}) });
  const hold = tool({
    name: 'hold',
    description: 'holds the turn open',
    inputSchema: z.object({}),
    capabilityScopes: [],
    kind: 'read',
    effect: 'read-only',
    execute: async () => {
      gate.entered?.();
      await gate.open;
      return 'held';
    },
  });
  return { harness, agent: new HarnessAgent({ harness, permissionMode: 'allow-all', tools: [hold] }) };
}

describe('session leases on PostgreSQL', () => {
  it.skipIf(POSTGRES_SKIP !== '')(`a second replica's generate() on a busy session fails with session-busy, and runs once the first is done${POSTGRES_SKIP}`, async () => {
    let open!: () => void;
    let entered!: () => void;
    const inTool = new Promise<void>((resolve) => (entered = resolve));
    const a = replica({ entered, open: new Promise<void>((resolve) => (open = resolve)) }, 0);
    const b = replica({ open: Promise.resolve() }, 0);
    try {
      const first = a.agent.generate({ prompt: 'one', options: { sessionId: 'shared' } });
      await inTool;
      const refused = await b.agent.generate({ prompt: 'two', options: { sessionId: 'shared' } }).catch((error: unknown) => error);
      expect((refused as { code?: string }).code).toBe('session-busy');
      expect(String((refused as Error).message)).toMatch(/running a turn elsewhere/);
      open();
      expect((await first).text).toBe('done');
      expect((await b.agent.generate({ prompt: 'two', options: { sessionId: 'shared' } })).text).toBe('done');
      expect((await a.harness.journal.turns('shared')).map((t) => t.status)).toEqual(['done', 'done']);
    } finally {
      await a.harness.close?.();
      await b.harness.close?.();
    }
  });

  it.skipIf(POSTGRES_SKIP !== '')(`a live holder's lease is never taken; once it expires (a dead worker), another replica takes the session${POSTGRES_SKIP}`, async () => {
    const b = replica({ open: Promise.resolve() }, 0);
    // The other worker's rows, written over a connection of its own.
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    try {
      await b.harness.journal.ensureSession('orphan');
      await pool.query("INSERT INTO acx_session_leases (agent_id, session_id, holder, expires_at) VALUES ('default', 'orphan', 'a-live-worker', now() + interval '1 hour')");
      const refused = await b.agent.generate({ prompt: 'x', options: { sessionId: 'orphan' } }).catch((error: unknown) => error);
      expect((refused as { code?: string }).code).toBe('session-busy');
      // The worker died: it stops renewing and its lease runs out.
      await pool.query("UPDATE acx_session_leases SET expires_at = now() - interval '1 second' WHERE session_id = 'orphan'");
      expect((await b.agent.generate({ prompt: 'x', options: { sessionId: 'orphan' } })).text).toBe('done');
      expect((await pool.query("SELECT count(*)::int AS n FROM acx_session_leases WHERE session_id = 'orphan'")).rows[0].n, 'released at the end').toBe(0);
    } finally {
      await pool.end();
      await b.harness.close?.();
    }
  });

  it.skipIf(POSTGRES_SKIP !== '')(`a holder that exited on this machine is taken over at once, its lease still running; one elsewhere is waited for${POSTGRES_SKIP}`, async () => {
    const b = replica({ open: Promise.resolve() }, 0);
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    const exited = spawnSync(process.execPath, ['-e', '0']).pid!;
    const holderOn = (machine: string) => JSON.stringify({ call: 'killed-call', pid: exited, host: hostname(), started: null, machine });
    try {
      for (const session of ['dead-here', 'dead-elsewhere']) await b.harness.journal.ensureSession(session);
      await pool.query("INSERT INTO acx_session_leases (agent_id, session_id, holder, expires_at) VALUES ('default', 'dead-here', $1, now() + interval '1 hour'), ('default', 'dead-elsewhere', $2, now() + interval '1 hour')", [
        holderOn(machineId()!),
        holderOn('00000000-0000-4000-8000-000000000000/pid:[1]'),
      ]);
      expect((await b.agent.generate({ prompt: 'x', options: { sessionId: 'dead-here' } })).text).toBe('done');
      const refused = await b.agent.generate({ prompt: 'x', options: { sessionId: 'dead-elsewhere' } }).catch((error: unknown) => error);
      expect((refused as { code?: string }).code, 'a pid recorded on another machine means nothing here').toBe('session-busy');
    } finally {
      await pool.end();
      await b.harness.close?.();
    }
  });

  it.skipIf(POSTGRES_SKIP !== '')(`harnesses of different agents (agentId) on one store neither share a session nor wait on each other's lease${POSTGRES_SKIP}`, async () => {
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    let open!: () => void;
    const a = replica({ entered, open: new Promise<void>((resolve) => (open = resolve)) }, 0, 'agent-a');
    const b = replica({ open: Promise.resolve() }, 0, 'agent-b');
    try {
      const first = a.agent.generate({ prompt: 'one', options: { sessionId: 'same-name' } });
      await inside; // agent-a holds its session "same-name"
      expect((await b.agent.generate({ prompt: 'two', options: { sessionId: 'same-name' } })).text, "agent-b's same-name is its own: not busy").toBe('done');
      open();
      expect((await first).text).toBe('done');
      expect((await a.harness.journal.turns('same-name')).length).toBe(1);
      expect((await b.harness.journal.turns('same-name')).length).toBe(1);
      expect((await a.harness.journal.messages('same-name')).find((m) => m.kind === 'user')?.message.content).toBe('one');
    } finally {
      await a.harness.close?.();
      await b.harness.close?.();
    }
  });

  it.skipIf(POSTGRES_SKIP !== '')(`a replica whose lease is taken over mid-turn stops the turn (lease-lost) and writes nothing more; the next holder finishes it once${POSTGRES_SKIP}`, async () => {
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    const ran: string[] = [];
    let phase = 'first replica';
    // One script across both replicas: the turn's next model call is its next step, whoever makes it.
    const model = scriptedModel([{ toolCalls: [{ id: 'l', name: 'long_job', input: {} }] }, { toolCalls: [{ id: 'r', name: 'report', input: {} }] }, { text: 'reported' }]);
    const tools = [
      // Another replica takes the session over, as it would once this one's lease lapsed.
      leaseTakingTool(takeSessionLease((sql, values) => pool.query(sql, values), 'taken', 'another-replica'), () => ran.push(`long_job in ${phase}`)),
      tool({ name: 'report', description: 'reports', inputSchema: z.object({}), capabilityScopes: [], kind: 'edit', effect: 'unsafe', execute: async () => void ran.push(`report in ${phase}`) }),
    ];
    const replicaOf = () => {
      const harness = createEngineHarness({ model: fromLanguageModel(model), store: url, sessionLease: { waitMs: 0, ttlMs: scaled(600) } });
      return { harness, agent: new HarnessAgent({ harness, permissionMode: 'allow-all', tools }) };
    };
    const a = replicaOf();
    const b = replicaOf();
    try {
      const stopped = await a.agent.generate({ prompt: 'run the job, then report', options: { sessionId: 'taken' } }).catch((error: unknown) => error);
      expect(AcxError.isInstance(stopped) && stopped.code, String(stopped)).toBe('lease-lost');
      expect((stopped as Error).message).toMatch(/lease on session taken lapsed unrenewed/);
      expect(ran, 'the stopped turn did not go on to its next tool').toEqual(['long_job in first replica']);
      // Nothing more written: no cancelled status or results over what the new holder writes.
      expect((await a.harness.journal.turns('taken')).map((turn) => turn.status)).toEqual(['running']);
      expect((await pool.query("SELECT count(*)::int AS n FROM acx_tool_calls WHERE result LIKE '%Cancelled%'")).rows[0].n).toBe(0);
      expect((await pool.query("SELECT holder FROM acx_session_leases WHERE session_id = 'taken'")).rows, "the new holder's lease is not released").toEqual([{ holder: 'another-replica' }]);

      // The other replica gives the session up unanswered (as if it died); the next call finishes the turn.
      await pool.query("DELETE FROM acx_session_leases WHERE session_id = 'taken'");
      phase = 'second replica';
      const recovered = await b.agent.continueGenerate({ session: await b.agent.createSession({ sessionId: 'taken' }) });
      expect(recovered.text).toBe('reported');
      expect(ran, 'long_job stands from the journal and is not run again').toEqual(['long_job in first replica', 'report in second replica']);
    } finally {
      await pool.end();
      await a.harness.close?.();
      await b.harness.close?.();
    }
  });
});
