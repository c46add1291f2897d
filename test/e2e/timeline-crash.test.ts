// SIGKILL a timeline wake at every durability boundary of a turn that posts a message and
// schedules a task (and right after each platform create, before the journal knows of it),
// restart it, and count what the platform holds: exactly one message and one task each time.
// Then a turn that makes two creates of each kind (two messages side by side in one step, a task
// in each of the next two steps), killed around each create: each create's Idempotency-Key has
// its own ordinal, so the recovering wake re-issues the first under its old key and the second
// under its own, and the platform ends with exactly two of each.
// Twice: with the channel state in the wake's channel.db, and on PostgreSQL (ACX_STORE), where a
// killed wake's claims are taken over once their lease lapses (the test lapses it at once).
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdempotencyKey } from '../../src/channel/idempotency.ts';
import { openDatabase } from '../../src/store/database.ts';
import { mapConcurrently } from '../support/concurrently.ts';
import { lapseClaims } from '../support/lease-taker.ts';
import { sharedTimeline, startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { POSTGRES_SKIP, postgresForSuite } from '../support/postgres.ts';
import { scaled } from '../support/time-scale.ts';

const WAKE = join(import.meta.dirname, '../fixtures/agents/timeline-crash.ts');
let platform: TestPlatform;
let ana: { token: string; uuid: string };
let nova: { token: string; uuid: string };
beforeAll(async () => {
  platform = await startTestPlatform();
  ana = platform.user('ana', 'human');
  nova = platform.user('nova', 'ai', { trust: ['ana'] });
});
afterAll(() => platform.close());
const postgres = postgresForSuite();

/** The PostgreSQL channel state's URL while its cases run (null: channel.db). */
let storeUrl: string | null = null;
/** On it, a connection that lapses a killed wake's claims. */
let store: pg.Pool | undefined;

/** The fixture's scripted turn (see test/fixtures/agents/timeline-crash.ts). */
type Script = 'message-task' | 'two-of-a-kind';

async function wake(home: string, timeline: string, crash: string, script: Script = 'message-task'): Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }> {
  const env = { ...process.env, ...(storeUrl ? { ACX_STORE: storeUrl } : {}) };
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', WAKE, home, platform.url, nova.token, timeline, crash, script], { env });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const run = await new Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  // A killed wake's claims are free once its lease lapses (SQLite sees the pid gone at once):
  // lapsed here and now, rather than a short lease a live wake on a loaded machine could lose.
  if (storeUrl && run.signal === 'SIGKILL') await lapseClaims((sql, values) => store!.query(sql, values), 'nova', timeline);
  return run;
}

async function freshRoom(): Promise<string> {
  const timeline = await sharedTimeline(platform, ana as never, nova as never);
  await platform.api('POST', `/timelines/${timeline}/messages`, { token: ana.token, json: { message: { body: '@nova the release is Thursday' } } });
  return timeline;
}

async function countOn(timeline: string): Promise<{ messages: number; tasks: number }> {
  const messages = (await platform.api('GET', `/messages?timeline=${timeline}`, { token: ana.token })).body.messages as Array<{ user: { handle: string } }>;
  const tasks = (await platform.api('GET', `/tasks?timeline=${timeline}`, { token: ana.token })).body.tasks as unknown[];
  return { messages: messages.filter((m) => m.user.handle === 'nova').length, tasks: tasks.length };
}

/** The Idempotency-Keys the platform recorded nova's creates on the timeline under, by kind. */
function keysOn(timeline: string): Record<string, string[]> {
  const db = openDatabase(join(platform.home, 'platform.db'));
  try {
    const rows = db.prepare('SELECT kind, key FROM idempotency_keys WHERE timeline_uuid = ? AND user_uuid = ? ORDER BY kind, key').all(timeline, nova.uuid) as Array<{ kind: string; key: string }>;
    const byKind: Record<string, string[]> = {};
    for (const row of rows) (byKind[row.kind] ??= []).push(row.key);
    return byKind;
  } finally {
    db.close();
  }
}

/** The oldest message on the timeline: the anchor of the batch the wake answers. */
async function anchorOf(timeline: string): Promise<string> {
  const messages = (await platform.api('GET', `/messages?timeline=${timeline}`, { token: ana.token })).body.messages as Array<{ content: { uuid: string } }>;
  return messages.at(-1)!.content.uuid;
}

const stores: Array<[name: string, skip: string]> = [
  ['channel.db', ''],
  ['postgres', POSTGRES_SKIP],
];

/** A describe block's channel state: a fresh PostgreSQL database (and a pool to lapse claims on), or null for channel.db. */
function useStore(database: string | null): void {
  beforeAll(() => {
    storeUrl = database ? postgres.database(database) : null;
    store = storeUrl ? new pg.Pool({ connectionString: storeUrl, max: 2 }) : undefined;
  });
  afterAll(async () => {
    await store?.end();
    store = undefined;
  });
}

describe.each(stores)('a timeline wake killed at every boundary, its state on %s (e2e)', { timeout: scaled(300_000) }, (name, skip) => {
  let boundaries: string[] = [];
  useStore(name === 'postgres' && skip === '' ? 'timeline_crash' : null);

  it.skipIf(skip !== '')(`uninterrupted: one message, one task, and the checkpoints it passes${skip}`, async () => {
    const timeline = await freshRoom();
    const run = await wake(mkdtempSync(join(tmpdir(), 'acx-tl-crash-')), timeline, 'none');
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ outcome: 'answered', posted: 1 });
    expect(await countOn(timeline)).toEqual({ messages: 1, tasks: 1 });
    boundaries = run.stderr.split('\n').filter((line) => /^\d+ /.test(line));
    if (storeUrl) {
      // The wake kept its claim on the server, not in a channel.db.
      const check = new pg.Client({ connectionString: storeUrl });
      await check.connect();
      const { rows } = await check.query<{ phase: string }>("SELECT phase FROM acx_channel_claims WHERE agent_id = 'nova' AND timeline = $1", [timeline]);
      await check.end();
      expect(rows.map((row) => row.phase)).toEqual(['done']);
    }
    expect(boundaries.length).toBeGreaterThanOrEqual(10);
  });

  it.skipIf(skip !== '')(`killed at each checkpoint, or right after a create the journal has not recorded, then woken again: exactly one of each${skip}`, async () => {
    const cases = [...boundaries.map((line) => `checkpoint:${line.split(' ')[0]}`), 'inside:messages_create', 'inside:tasks_create'];
    const failures: string[] = [];
    // Each case on its own timeline and home, a few side by side: most of a case is waiting on its processes.
    await mapConcurrently(cases, 3, async (crash) => {
      const timeline = await freshRoom();
      const home = mkdtempSync(join(tmpdir(), 'acx-tl-crash-'));
      const killed = await wake(home, timeline, crash);
      if (killed.signal !== 'SIGKILL') failures.push(`${crash}: was not killed (${killed.code})`);
      const again = await wake(home, timeline, 'none');
      if (again.code !== 0) failures.push(`${crash}: the next wake failed: ${again.stderr.slice(-400)}`);
      const counts = await countOn(timeline);
      if (counts.messages !== 1 || counts.tasks !== 1) failures.push(`${crash} (${boundaries.find((b) => `checkpoint:${b.split(' ')[0]}` === crash) ?? crash}): ${counts.messages} messages, ${counts.tasks} tasks`);
      // And a third wake finds nothing new.
      const third = await wake(home, timeline, 'none');
      if (!third.stdout.includes('"nothing-new"')) failures.push(`${crash}: a third wake did not find nothing new: ${third.stdout}`);
    });
    expect(failures.sort()).toEqual([]);
  });

  it.skipIf(skip !== '')(`an item whose first try and two resumes all died is set aside: logged and recorded, nothing posted in the agent's voice, the next message answered${skip}`, async () => {
    const timeline = await freshRoom();
    const home = mkdtempSync(join(tmpdir(), 'acx-tl-stall-'));
    // Each dies at its first durability checkpoint: the turn started, then twice resumed, never finished.
    for (let attempt = 1; attempt <= 3; attempt++) expect((await wake(home, timeline, 'checkpoint:1')).signal).toBe('SIGKILL');
    const fourth = await wake(home, timeline, 'none');
    expect(fourth.code, fourth.stderr).toBe(0);
    expect(JSON.parse(fourth.stdout)).toEqual({ outcome: 'answered', posted: 0 });
    // The harness never speaks for the agent: nothing from nova on the timeline.
    const said = (await platform.api('GET', `/messages?timeline=${timeline}`, { token: ana.token })).body.messages as Array<{ user: { handle: string } }>;
    expect(said.filter((m) => m.user.handle === 'nova')).toEqual([]);
    expect(await countOn(timeline)).toEqual({ messages: 0, tasks: 0 });
    // Logged, and recorded with the items' claims.
    expect(fourth.stderr).toMatch(/^ERROR items abandoned timeline=\S+ kind=message items=\S+ reason=stalled resumes=2 note="nothing was posted: the harness never speaks for the agent"$/m);
    if (!storeUrl) {
      const db = openDatabase(join(home, 'channel.db'));
      const claims = db.prepare('SELECT phase, reason FROM claims WHERE timeline = ?').all(timeline);
      db.close();
      expect(claims).toEqual([{ phase: 'abandoned', reason: 'set aside after 2 failed resumes' }]);
    }
    // The abandoned turn no longer holds the session back: a new message is answered as usual.
    await platform.api('POST', `/timelines/${timeline}/messages`, { token: ana.token, json: { message: { body: '@nova and now?' } } });
    const next = await wake(home, timeline, 'none');
    expect(next.code, next.stderr).toBe(0);
    expect(JSON.parse(next.stdout)).toEqual({ outcome: 'answered', posted: 1 });
    expect(await countOn(timeline)).toEqual({ messages: 1, tasks: 1 });
    expect((await wake(home, timeline, 'none')).stdout).toContain('"nothing-new"');
  });
});

describe.each(stores)('a turn that makes two creates of each kind, killed around each create, its state on %s (e2e)', { timeout: scaled(300_000) }, (name, skip) => {
  let boundaries: string[] = [];
  useStore(name === 'postgres' && skip === '' ? 'timeline_crash_two' : null);

  it.skipIf(skip !== '')(`uninterrupted: two messages and two tasks, each under its own key (ordinals 1 and 2 per kind)${skip}`, async () => {
    const timeline = await freshRoom();
    const run = await wake(mkdtempSync(join(tmpdir(), 'acx-tl-crash-')), timeline, 'none', 'two-of-a-kind');
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ outcome: 'answered', posted: 2 });
    expect(await countOn(timeline)).toEqual({ messages: 2, tasks: 2 });
    // FACTS.md: uuid5 over timeline:anchor:kind:ordinal, the ordinal counting that kind's creates only.
    const anchor = await anchorOf(timeline);
    const key = (kind: 'message' | 'task', ordinal: number) => createIdempotencyKey({ timeline, anchor, kind, ordinal })!;
    expect(keysOn(timeline)).toEqual({ message: [key('message', 1), key('message', 2)].sort(), task: [key('task', 1), key('task', 2)].sort() });
    // Where a kill can fall between one create and the next: as each create starts, and as it finishes.
    boundaries = run.stderr.split('\n').filter((line) => / tool-(started|finished)$/.test(line));
    expect(boundaries).toHaveLength(8);
  });

  it.skipIf(skip !== '')(`killed right after the first create of a kind is acknowledged, or as any create starts or finishes, then woken again: exactly two of each${skip}`, async () => {
    const cases = ['inside:messages_create', 'inside:tasks_create', ...boundaries.map((line) => `checkpoint:${line.split(' ')[0]}`)];
    const failures: string[] = [];
    for (const crash of cases) {
      const timeline = await freshRoom();
      const home = mkdtempSync(join(tmpdir(), 'acx-tl-crash-'));
      const killed = await wake(home, timeline, crash, 'two-of-a-kind');
      if (killed.signal !== 'SIGKILL') failures.push(`${crash}: was not killed (${killed.code})`);
      const again = await wake(home, timeline, 'none', 'two-of-a-kind');
      if (again.code !== 0) failures.push(`${crash}: the next wake failed: ${again.stderr.slice(-400)}`);
      const counts = await countOn(timeline);
      if (counts.messages !== 2 || counts.tasks !== 2) failures.push(`${crash} (${boundaries.find((b) => `checkpoint:${b.split(' ')[0]}` === crash) ?? crash}): ${counts.messages} messages, ${counts.tasks} tasks`);
    }
    expect(failures).toEqual([]);
  });
});
