// Issue 9 item 7: `acx sessions [agent]` and `acx sessions show <id>` show what the agent did,
// read from the journal the engine writes (and wake mode's inbox beside it). The sessions are
// made the way a user makes them: a replayed `acx run`, a wake that could not start (its event
// stays pending), and a turn a killed process left unfinished.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { QUICKSTART_PROMPT } from '../../scripts/quickstart.ts';
import { createEngineHarness } from '../../src/harness/engine-harness.ts';
import { HarnessAgent } from '../../src/harness/harness-agent.ts';
import { fromLanguageModel } from '../../src/model/providers.ts';
import { Journal } from '../../src/store/journal.ts';
import { scriptedModel } from '../support/scripted-model.ts';
import { cleanEnv, ROOT, runAcx, STACK_FRAME, tempDir } from '../support/cli.ts';
import { scaled } from '../support/time-scale.ts';

const AGENT = join(ROOT, 'examples/notes-keeper');
const CASSETTE = join(AGENT, 'cassettes/quickstart.json');
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const SHOWN_TIME = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ';

let home: string;
beforeAll(async () => {
  home = tempDir('acx-sessions-');
  const run = await runAcx(['run', AGENT, QUICKSTART_PROMPT, '--replay', CASSETTE, '--session', 'release-chat'], { home });
  expect(run.status, run.stderr).toBe(0);
  // A wake whose agent cannot start (no key): the event is recorded and stays pending.
  const wake = await runAcx(['wake', AGENT, '--session', 'room-1', '--event', 'evt-1', '--sender', 'alice', 'Is the build green?'], {
    home,
    env: cleanEnv({ ACX_MODEL: 'openai:m' }),
  });
  expect(wake.status).toBe(1);
  expect(wake.stderr, 'wake opens SQLite stores; the CLI never prints its ExperimentalWarning').not.toContain('ExperimentalWarning');
  // A process killed mid-turn leaves the turn running in the journal, its user message written.
  const journal = new Journal(join(home, 'agents/notes-keeper/journal.db'));
  journal.ensureSession('crashed');
  journal.startTurn('turn-crashed', 'crashed');
  journal.appendMessage('crashed', 'turn-crashed', 'user', { role: 'user', content: 'Summarize the release.' });
  journal.close();
}, scaled(180_000));

describe('acx sessions (e2e)', { timeout: scaled(120_000) }, () => {
  it('--json lists each session with its turns, unfinished turn and pending wake events', async () => {
    const listed = await runAcx(['sessions', AGENT, '--json'], { home });
    expect(listed.status, listed.stderr).toBe(0);
    const { sessions } = JSON.parse(listed.stdout) as { sessions: Array<Record<string, unknown>> };
    const byId = Object.fromEntries(sessions.map(({ createdAt, lastActivityAt, ...rest }) => {
      expect(createdAt).toMatch(ISO);
      expect(lastActivityAt).toMatch(ISO);
      return [rest.id, rest];
    }));
    expect(byId).toEqual({
      'release-chat': { agent: 'notes-keeper', id: 'release-chat', turns: 1, unfinishedTurn: false, pendingEvents: 0 },
      'room-1': { agent: 'notes-keeper', id: 'room-1', turns: 0, unfinishedTurn: false, pendingEvents: 1 },
      crashed: { agent: 'notes-keeper', id: 'crashed', turns: 1, unfinishedTurn: true, pendingEvents: 0 },
    });
  });

  it('as a table, every agent in the state home when none is named', async () => {
    const listed = await runAcx(['sessions'], { home });
    expect(listed.status, listed.stderr).toBe(0);
    const lines = listed.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^SESSION +AGENT +CREATED +LAST ACTIVITY +TURNS +UNFINISHED +PENDING EVENTS$/);
    expect(lines.slice(1).sort()).toEqual([
      expect.stringMatching(new RegExp(`^crashed +notes-keeper +${SHOWN_TIME} +${SHOWN_TIME} +1 +yes +0$`)),
      expect.stringMatching(new RegExp(`^release-chat +notes-keeper +${SHOWN_TIME} +${SHOWN_TIME} +1 +no +0$`)),
      expect.stringMatching(new RegExp(`^room-1 +notes-keeper +${SHOWN_TIME} +${SHOWN_TIME} +0 +no +1$`)),
    ]);
  });

  it('show prints the transcript: what was said, each tool call and its result', async () => {
    const shown = await runAcx(['sessions', 'show', 'release-chat'], { home });
    expect(shown.status, shown.stderr).toBe(0);
    const text = shown.stdout.replace(new RegExp(SHOWN_TIME, 'g'), 'T');
    expect(text).toBe(
      [
        'Session release-chat (agent notes-keeper)',
        'created T, last activity T; 1 turn, none unfinished; 0 pending wake events',
        '',
        '── turn 1: done, 2 steps, started T',
        `user> ${QUICKSTART_PROMPT}`,
        '  → memory_write {"key":"release/freeze","value":"The release freeze starts on 12 December."}',
        '  → memory_search {"query":"deploy"}',
        '  ← memory_write: Saved "release/freeze".',
        '  ← memory_search: Memories matching "deploy": team/deploy-policy: We deploy on Tuesdays and Thursdays before 15:00 UTC; never on Fridays.',
        'agent> Noted: the release freeze starts on 12 December. Deploys run on Tuesdays and Thursdays before 15:00 UTC, so the last deploy window before the freeze is Thursday 10 December, before 15:00 UTC.',
        '',
      ].join('\n'),
    );
  });

  it('show names the unfinished turn and the wake events still waiting for an answer', async () => {
    const crashed = await runAcx(['sessions', 'show', 'crashed', AGENT], { home });
    expect(crashed.stdout.replace(new RegExp(SHOWN_TIME, 'g'), 'T')).toBe(
      ['Session crashed (agent notes-keeper)', 'created T, last activity T; 1 turn, one unfinished; 0 pending wake events', '', '── turn 1: running, 0 steps, started T', 'user> Summarize the release.', ''].join('\n'),
    );
    const room = await runAcx(['sessions', 'show', 'room-1'], { home });
    expect(room.stdout.replace(new RegExp(SHOWN_TIME, 'g'), 'T')).toBe(
      [
        'Session room-1 (agent notes-keeper)',
        'created T, last activity T; 0 turns, none unfinished; 1 pending wake event',
        '',
        'wake events not answered:',
        '  evt-1 (pending) from alice: Is the build green?',
        '',
      ].join('\n'),
    );
  });

  it('show --json carries the turns, the stored messages and the events as the stores hold them', async () => {
    const shown = await runAcx(['sessions', 'show', 'release-chat', '--json'], { home });
    const detail = JSON.parse(shown.stdout) as {
      agent: string;
      turnRecords: Array<{ status: string; steps: number }>;
      messages: Array<{ kind: string; message: { role: string } }>;
      events: unknown[];
    };
    expect(detail.agent).toBe('notes-keeper');
    expect(detail.turnRecords.map((t) => [t.status, t.steps])).toEqual([['done', 2]]);
    expect(detail.messages.map((m) => `${m.kind}:${m.message.role}`)).toEqual(['user:user', 'assistant:assistant', 'tool:tool', 'assistant:assistant']);
    expect(detail.events).toEqual([]);
  });

  it('an unknown session is a clear error (and JSON under --json), not a stack', async () => {
    const missing = await runAcx(['sessions', 'show', 'nope'], { home });
    expect(missing.status).toBe(1);
    expect(missing.stderr).toBe(`acx: No session "nope" in ${home}.\n  → List the sessions with \`acx sessions\` (add the agent, and --home if you ran it with one).\n`);
    const json = await runAcx(['sessions', 'show', 'nope', '--json'], { home });
    expect(json.status).toBe(1);
    expect(JSON.parse(json.stdout)).toEqual({
      error: { code: 'session-not-found', message: `No session "nope" in ${home}.`, hint: 'List the sessions with `acx sessions` (add the agent, and --home if you ran it with one).' },
    });
    expect(json.stderr).not.toMatch(STACK_FRAME);
  });

  it('a state home with nothing in it says so', async () => {
    const empty = tempDir('acx-sessions-empty-');
    const listed = await runAcx(['sessions'], { home: empty });
    expect(listed.status).toBe(0);
    expect(listed.stdout).toBe(`No sessions in ${empty}.\n`);
  });

  it("a library app's sessions (createEngineHarness({ home })) are listed, shown and cleaned up by the CLI", async () => {
    const library = tempDir('acx-sessions-library-');
    const model = scriptedModel([{ text: 'Hello from the library.' }]);
    const harness = createEngineHarness({ model: fromLanguageModel(model), home: library });
    const agent = new HarnessAgent({ harness });
    const session = await agent.createSession({ sessionId: 'lib-1' });
    expect((await agent.generate({ session, prompt: 'Say hello.' })).text).toBe('Hello from the library.');
    await harness.close?.();

    const listed = JSON.parse((await runAcx(['sessions', '--json'], { home: library })).stdout) as { sessions: Array<{ agent: string; id: string; turns: number }> };
    expect(listed.sessions.map(({ agent: name, id, turns }) => ({ name, id, turns }))).toEqual([{ name: 'library', id: 'lib-1', turns: 1 }]);
    const shown = await runAcx(['sessions', 'show', 'lib-1'], { home: library });
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^Session lib-1 \(agent library\)/);
    expect(shown.stdout).toContain('Hello from the library.');
    const cleaned = await runAcx(['cleanup', '--session', 'lib-1'], { home: library });
    expect(cleaned.status, cleaned.stderr).toBe(0);
    expect(cleaned.stdout).toMatch(/^removed lib-1 \(2 messages, 0 wake events\)$/m);
    expect((await runAcx(['sessions'], { home: library })).stdout).toBe(`No sessions in ${library}.\n`);
    // With neither an agent nor a library journal, cleanup asks which agent.
    const nothing = await runAcx(['cleanup', '--session', 'x'], { home: tempDir('acx-sessions-empty-') });
    expect(nothing.status).toBe(2);
    expect(nothing.stderr).toMatch(/^acx: name the agent whose sessions to clean/);
  });
});
