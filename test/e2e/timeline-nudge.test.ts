// The reply nudge on `acx wake --timeline`, against the embedded platform (a real server on
// 127.0.0.1, SQLite home) and the local model server: it arms structurally — the agent's exact
// @handle (any case, bounded on both sides), or a counterpart's message on a two-viewer timeline,
// message turns only — fires once when the turn would end with no visible action, in the mention's
// wording when both hold, and never forces a reply.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer, type RecordedRequest } from '../support/model-server.ts';
import { postMessage, sharedTimeline, startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { cleanEnv, ROOT, runAcx, tempDir } from '../support/cli.ts';
import { scaled } from '../support/time-scale.ts';
import { waitFor } from '../support/wait.ts';

const AGENT = join(ROOT, 'test/fixtures/agents/timeline-peer');
const MENTION_NOTE = /^\[harness\] You were addressed and this turn has taken no visible action\. .*calling the `messages_create` tool; text written here reaches no one\.$/;
const ONE_ON_ONE_NOTE = /^\[harness\] You are the only other party in this conversation and this turn has taken no visible action\. .*`messages_create`/;

let platform: TestPlatform;
let model: ModelServer;
beforeEach(async () => {
  platform = await startTestPlatform();
  model = await startModelServer();
});
afterEach(async () => {
  await model.close();
  await platform.close();
});

const wakeEnv = (token: string) => cleanEnv({ BASECRADLE_BASE_URL: platform.url, BASECRADLE_TOKEN: token, OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: model.openaiBaseURL });

const post = async (token: string, timeline: string, body: string) => (await postMessage(platform, token, timeline, body)).uuid;

/** The harness notes a request carries (user messages of the transcript, not the brief). */
const notes = (request: RecordedRequest) => request.view.messages.filter((m) => m.role === 'user' && (m.text ?? '').startsWith('[harness]')).map((m) => m.text);
const nudgeLines = (stderr: string) => stderr.split('\n').filter((line) => /^INFO nudge /.test(line));

async function wake(token: string, timeline: string, home: string) {
  const run = await runAcx(['wake', AGENT, '--timeline', timeline], { env: wakeEnv(token), home });
  expect(run.status, run.stderr).toBe(0);
  return run;
}

describe('the reply nudge on acx wake --timeline (e2e)', { timeout: scaled(120_000) }, () => {
  it('a mention arms it: the note reaches the second request, fires once, forces nothing; the mention wording wins on a one-on-one', async () => {
    const ana = platform.user('ana', 'human');
    const nova = platform.user('nova', 'ai', { trust: ['ana'] });
    const room = await sharedTimeline(platform, ana, nova); // two viewers: both reasons hold
    await post(ana.token, room, 'Hey @NOVA, which version are you running?');
    // The model narrates instead of speaking, and again after the nudge: the turn ends silent.
    model.enqueue("I'm running 0.1.0.", 'Still just narrating.');
    const run = await wake(nova.token, room, tempDir());
    expect(run.stderr).toMatch(/INFO wake end .*outcome=answered posted=0 turns=1/);
    expect(model.requests).toHaveLength(2);
    expect(notes(model.requests[0]!)).toEqual([]);
    const second = notes(model.requests[1]!);
    expect(second).toHaveLength(1);
    expect(second[0]).toMatch(MENTION_NOTE);
    expect(nudgeLines(run.stderr)).toHaveLength(1);
    expect(nudgeLines(run.stderr)[0]).toMatch(/addressed=mention/);
  });

  it('a counterpart on a two-viewer timeline arms it without a mention, in its own wording', async () => {
    const ana = platform.user('ana', 'human');
    const nova = platform.user('nova', 'ai', { trust: ['ana'] });
    const room = await sharedTimeline(platform, ana, nova);
    await post(ana.token, room, 'which version are you running?');
    model.enqueue('Narrated.', 'Narrated again.');
    const run = await wake(nova.token, room, tempDir());
    expect(model.requests).toHaveLength(2);
    expect(notes(model.requests[1]!)).toEqual([expect.stringMatching(ONE_ON_ONE_NOTE)]);
    expect(nudgeLines(run.stderr)).toEqual([expect.stringMatching(/addressed=one-on-one/)]);
  });

  it('a three-viewer timeline without an exact mention does not arm it; a reply that speaks is never nudged', async () => {
    const ana = platform.user('ana', 'human');
    const nova = platform.user('nova', 'ai', { trust: ['ana'] });
    // Everyone on a timeline trusts everyone else there.
    const ben = platform.user('ben', 'human', { trust: ['ana', 'nova'] });
    const room = await sharedTimeline(platform, ana, nova);
    expect((await platform.api('POST', `/timelines/${room}/participations`, { token: ana.token, json: { user_id: ben.uuid } })).status).toBe(201);
    // Neither is nova's exact handle: a longer handle, and an address that only contains it.
    await post(ana.token, room, 'morning all; @novak and mail@nova.dev, see the notes');
    model.enqueue('Nothing for me here.');
    const home = tempDir();
    const quiet = await wake(nova.token, room, home);
    expect(model.requests).toHaveLength(1);
    expect(nudgeLines(quiet.stderr)).toEqual([]);

    // Addressed, and it speaks: no nudge.
    await post(ben.token, room, '@nova, can you summarise?');
    model.enqueue({ toolCalls: [{ name: 'messages_create', input: { body: 'Summary: ship Thursday.' } }] }, 'Posted the summary.');
    const spoke = await wake(nova.token, room, home);
    expect(spoke.stderr).toMatch(/INFO wake end .*outcome=answered posted=1/);
    expect(model.requests).toHaveLength(3);
    expect(notes(model.requests[2]!)).toEqual([]);
    expect(nudgeLines(spoke.stderr)).toEqual([]);
  });

  it('a task or an asset turn never arms it, even on a one-on-one', async () => {
    const ana = platform.user('ana', 'human');
    const nova = platform.user('nova', 'ai', { trust: ['ana'] });
    const room = await sharedTimeline(platform, ana, nova);
    const task = await platform.api('POST', `/timelines/${room}/tasks`, { token: ana.token, json: { task: { instructions: 'Check in with @nova.', activate_at: new Date(Date.now() + 300).toISOString() } } });
    expect(task.status, task.text).toBe(201);
    await waitFor('the task never activated', async () => (await platform.api('GET', `/tasks?timeline=${room}&status=activated`, { token: ana.token })).body.tasks.length === 1, { withinMs: 10_000 });
    const form = new FormData();
    form.append('asset[file]', new Blob(['hello'], { type: 'text/plain' }), 'note.txt');
    form.append('asset[description]', 'for @nova');
    expect((await platform.api('POST', `/timelines/${room}/assets`, { token: ana.token, form })).status).toBe(201);
    model.enqueue('Asset seen.', 'Task seen.');
    const run = await wake(nova.token, room, tempDir());
    expect(run.stderr).toMatch(/INFO wake end .*outcome=answered posted=0 turns=2/);
    expect(model.requests).toHaveLength(2);
    expect(model.requests.flatMap(notes)).toEqual([]);
    expect(nudgeLines(run.stderr)).toEqual([]);
  });
});
