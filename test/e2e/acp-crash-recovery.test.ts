import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempCache } from '../harness/acp/fake-profile.ts';
import { type CaseStore, type ChildRun, crashStores, effectsOf, runDriver } from '../support/crash-kit.ts';

/**
 * SIGKILLs a real acx process driving an ACP turn on the fake ACP agent at every durability
 * boundary of the turn and inside its host tools, starts a new process on the same session, and
 * checks what a user would: the turn finished ("all done"), each host tool's effect ran as often
 * as its evidence allows — never twice for an unsafe one — and the journal shows the turn done.
 * The turn (test/fixtures/acp/crash-driver.ts): the agent calls send(a) [unsafe], lookup(q)
 * [read-only], send(b) [unsafe], save(k) [idempotent], then replies. The new process reopens the
 * agent's session (session/resume), tells it the turn was interrupted, and the agent — naive on
 * purpose — makes every call again; acx answers each from its journal:
 *  - a call that finished is answered with its recorded result and does not run again;
 *  - an unsafe call that started with no recorded result is not run again (its outcome is unknown,
 *    and the agent is told so), whether its effect happened before the kill or not;
 *  - a read-only or idempotent call that started with no recorded result runs again, an idempotent
 *    one under its first idempotency key.
 */
const DRIVER = join(import.meta.dirname, '../fixtures/acp/crash-driver.ts');
// One ACP cache per bootstrap identity: the cases run concurrently, and the 'no-resume' agent's
// recipe differs (its env), so in a shared cache its install would replace the implementation
// under the other cases' launches (spawn … fake-acp ENOENT).
const caches = { resume: tempCache(), 'no-resume': tempCache() } as Record<string, string>;

// PostgreSQL runs the same code on another store: a few boundaries of each kind are enough there.
const onPostgres = (at: number | string) => [2, 3, 5, 10, 'inside:send:after:1'].includes(at);
const STORES = crashStores('acp_crash').map(([name, skip, make]) => [name, skip, make, name === 'postgres' ? onPostgres : undefined] as const);

const drive = (home: string, effects: string, crash: string, store: CaseStore, resume = 'resume'): Promise<ChildRun> => runDriver(DRIVER, [home, effects, caches[resume]!, crash, resume], store.env);

/** The calls the agent was told were not run again because their outcome is unknown, from its reply. */
function notRunAgain(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => /was not run again: .*whether it took effect is unknown/.test(line))
    .map((line) => line.split(':')[0]!);
}

async function journaledTurns(store: CaseStore) {
  const journal = await store.open();
  try {
    return (await journal.turns('crash-session')).map((turn) => ({ status: turn.status, finalText: turn.finalText, error: turn.error }));
  } finally {
    await journal.close();
  }
}

const CHECKPOINTS = [
  'turn-started',
  'host-call-started send',
  'host-call-finished send',
  'host-call-started lookup',
  'host-call-finished lookup',
  'host-call-started send',
  'host-call-finished send',
  'host-call-started save',
  'host-call-finished save',
  'turn-ended',
];
const once = { send: ['a', 'b'], lookup: ['q'], save: ['k'], unknown: [] as string[] };
/** What a run killed at checkpoint `at` (1-based, CHECKPOINTS) leaves once a new process finished the turn. */
const expectations: Array<{ at: number; send: string[]; lookup: string[]; save: string[]; unknown: string[] }> = [
  { at: 1, ...once },
  { at: 2, ...once, send: ['b'], unknown: ['send a'] },
  { at: 3, ...once },
  { at: 4, ...once },
  { at: 5, ...once },
  { at: 6, ...once, send: ['a'], unknown: ['send b'] },
  { at: 7, ...once },
  { at: 8, ...once },
  { at: 9, ...once },
  { at: 10, ...once },
];
const inside = [
  { crash: 'inside:send:after:1', title: 'an unsafe tool after its effect: not run again, and the agent is told its outcome is unknown', ...once, unknown: ['send a'] },
  { crash: 'inside:send:before:1', title: 'an unsafe tool before its effect: still not run again (acx cannot know)', ...once, send: ['b'], unknown: ['send a'] },
  { crash: 'inside:lookup:after:1', title: 'a read-only tool: it runs again', ...once, lookup: ['q', 'q'] },
  { crash: 'inside:save:after:1', title: 'an idempotent tool: it runs again under the same idempotency key', ...once, save: ['k', 'k'] },
];

// Each case runs two acx processes and their agents; on a loaded 2-core machine that takes a while.
describe.each(STORES)('ACP crash recovery (e2e, real processes) on %s', { timeout: 300_000 }, (_name, skip, make, only = () => true) => {
  const test = skip ? it.skip : it.concurrent;

  test(`a clean run passes every checkpoint in order and runs each tool once${skip}`, async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-acp-crash-'));
    const effects = mkdtempSync(join(tmpdir(), 'acx-acp-effects-'));
    const store = make(home);
    const run = await drive(home, effects, 'none', store);
    expect(run.status, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout.trim()) as { text: string; checkpoints: string[] };
    expect(out.checkpoints).toEqual(CHECKPOINTS);
    expect(out.text.split('\n')[0]).toBe('all done');
    expect(effectsOf(effects)).toEqual({ send: ['a', 'b'], lookup: ['q'], save: ['k'], upserts: 1 });
    expect(await journaledTurns(store)).toEqual([{ status: 'done', finalText: out.text, error: null }]);
  });

  /** Kills a run as `crash` says, lets a new process finish the turn, and checks what each tool did and what the journal shows. */
  async function killAndFinish(crash: string, expected: { send: string[]; lookup: string[]; save: string[]; unknown: string[] }) {
    const home = mkdtempSync(join(tmpdir(), 'acx-acp-crash-'));
    const effects = mkdtempSync(join(tmpdir(), 'acx-acp-effects-'));
    const store = make(home);
    const killed = await drive(home, effects, crash, store);
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    await store.lapse();
    const resumed = await drive(home, effects, 'none', store);
    expect(resumed.status, resumed.stderr + resumed.stdout).toBe(0);
    const { text } = JSON.parse(resumed.stdout.trim()) as { text: string };
    expect(text.split('\n')[0]).toBe('all done');
    expect(effectsOf(effects)).toEqual({ send: expected.send, lookup: expected.lookup, save: expected.save, upserts: 1 });
    expect(notRunAgain(text)).toEqual(expected.unknown);
    expect(await journaledTurns(store)).toEqual([{ status: 'done', finalText: text, error: null }]);
  }

  for (const expected of expectations.filter((e) => only(e.at))) {
    test(`killed at checkpoint ${expected.at} (${CHECKPOINTS[expected.at - 1]}): a new process finishes the turn, no unsafe effect twice${skip}`, () => killAndFinish(`checkpoint:${expected.at}`, expected));
  }

  for (const expected of inside.filter((e) => only(e.crash))) {
    test(`killed inside ${expected.title}${skip}`, () => killAndFinish(expected.crash, expected));
  }

  test(`an agent that cannot reopen its session: the turn ends failed with a clear error, nothing runs again${skip}`, async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-acp-crash-'));
    const effects = mkdtempSync(join(tmpdir(), 'acx-acp-effects-'));
    const store = make(home);
    const killed = await drive(home, effects, 'checkpoint:3', store, 'no-resume');
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    await store.lapse();
    const next = await drive(home, effects, 'none', store, 'no-resume');
    expect(next.status, next.stderr).toBe(2);
    const { error } = JSON.parse(next.stdout.trim()) as { error: { code: string; message: string } };
    expect(error.code).toBe('acp-turn-lost');
    expect(error.message).toMatch(/did not finish, and fake-acp could not reopen its session .* It is recorded as failed\.$/);
    expect(effectsOf(effects)).toEqual({ send: ['a'], lookup: [], save: [], upserts: 0 });
    const [turn] = await journaledTurns(store);
    expect(turn).toMatchObject({ status: 'failed', error: expect.stringMatching(/^not finished: fake-acp could not reopen its session/) });
    // The session takes the next message as a new turn.
    const again = await drive(home, effects, 'none', store, 'no-resume');
    expect(again.status, again.stderr + again.stdout).toBe(0);
    expect((await journaledTurns(store)).map((t) => t.status)).toEqual(['failed', 'done']);
  });
});
