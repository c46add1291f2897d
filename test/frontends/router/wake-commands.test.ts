// Any harness behind one router: an agent whose wake is another program (here a sh script that
// writes down what it was given, as basecradle-harness-wake would be started) next to an acx agent.
// Real HTTP on 127.0.0.1, router.db on disk, a real process per wake.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RoutedAgent } from '../../../src/frontends/router/router.ts';
import { RECORD_WAKE_SH, shellWakes, type StandInRouter, startStandInRouter } from '../../support/stand-in-router.ts';
import { tempDir } from '../../support/cli.ts';

const TIMELINE = '0190a5f2-0000-7000-8000-0000000000c1';
const NOVA: RoutedAgent = { name: 'nova', dir: '/agents/nova', token: 'bc_uat_nova_token', uuid: '0190a5f2-0000-7000-8000-00000000000a', secret: 'nova-signing-secret-0123' };
const ROUTER_ENV: NodeJS.ProcessEnv = {
  PATH: '/usr/bin:/bin',
  HOME: '/home/op',
  LANG: 'C.UTF-8',
  BASECRADLE_TOKEN_NOVA: 'bc_uat_nova_token',
  JT_TOKEN: 'bc_uat_jt_token',
  BASECRADLE_ROUTER_BASECRADLE_WEBHOOK_SECRET_JT: 'jt-signing-secret-0123',
};

let running: StandInRouter | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

/** jt, woken by the sh stand-in, whose records land in the returned folder. */
function jtAgent(command: (records: string) => string[] = (records) => [RECORD_WAKE_SH, records]): { agent: RoutedAgent; records: string } {
  const records = join(tempDir('acx-router-sh-'), 'wakes');
  mkdirSync(records);
  return { agent: { name: 'jt', command: command(records), token: 'bc_uat_jt_token', uuid: '0190a5f2-0000-7000-8000-00000000000b', secret: 'jt-signing-secret-0123' }, records };
}

const body = (id: string, recipient: string, event: string, resource: { type: string; uuid: string }, timeline = TIMELINE) => ({
  event,
  event_id: id,
  occurred_at: new Date().toISOString(),
  actor_uuid: null,
  recipient_uuid: recipient,
  timeline_uuid: timeline,
  resource,
});

describe('an agent with its own wake command', () => {
  it("is run as the real router runs a harness: <command> --timeline <uuid> [--message|--asset|--event <uuid>], its own token, the delivery id", async () => {
    const jt = jtAgent();
    running = await startStandInRouter({ agents: [jt.agent, NOVA], env: ROUTER_ENV, platformUrl: 'http://platform.test' });
    const uuid = jt.agent.uuid;
    expect((await running.post(body('e-1', uuid, 'message.created', { type: 'message', uuid: 'm-1' }))).status).toBe(202);
    expect((await running.post(body('e-2', uuid, 'asset.created', { type: 'asset', uuid: 'a-1' }))).status).toBe(202);
    expect((await running.post(body('e-3', uuid, 'webhook_event.received', { type: 'webhook_event', uuid: 'w-1' }))).status).toBe(202);
    expect((await running.post(body('e-4', uuid, 'task.activated', { type: 'task', uuid: 't-1' }))).status).toBe(202);
    // nova, an acx agent, beside it on the same router (its key is its own).
    expect((await running.post(body('e-5', NOVA.uuid, 'message.created', { type: 'message', uuid: 'm-2' }), { secret: NOVA.secret })).status).toBe(202);
    await running.router.idle();

    const woken = shellWakes(jt.records);
    expect(woken.map((wake) => wake.argv).sort()).toEqual(
      [
        ['--timeline', TIMELINE, '--message', 'm-1'],
        ['--timeline', TIMELINE, '--asset', 'a-1'],
        ['--timeline', TIMELINE, '--event', 'w-1'],
        ['--timeline', TIMELINE],
      ].sort(),
    );
    for (const wake of woken) {
      expect(wake.env).toEqual({
        PATH: '/usr/bin:/bin',
        HOME: '/home/op',
        LANG: 'C.UTF-8',
        BASECRADLE_BASE_URL: 'http://platform.test',
        BASECRADLE_TOKEN: 'bc_uat_jt_token',
        BASECRADLE_DELIVERY_ID: expect.stringMatching(/^e-[1-4]$/),
      });
    }
    expect(new Set(woken.map((wake) => wake.env.BASECRADLE_DELIVERY_ID)).size).toBe(4);
    expect(running.wakes()).toEqual([expect.objectContaining({ argv: ['wake', '/agents/nova', '--timeline', TIMELINE, '--message', 'm-2'] })]);
    expect(running.wakes()[0]!.env.BASECRADLE_TOKEN).toBe('bc_uat_nova_token');
    expect(running.rows().map((row) => row.state)).toEqual(['done', 'done', 'done', 'done', 'done']);
  });

  it('nothing in a delivery becomes a command: every value is one argument, never shell text', async () => {
    const jt = jtAgent();
    running = await startStandInRouter({ agents: [jt.agent], env: ROUTER_ENV });
    const dir = tempDir('acx-router-injection-');
    const [one, two] = [join(dir, 'one'), join(dir, 'two')];
    const hostile = { type: 'message', uuid: `m-1; touch ${one}` };
    expect((await running.post(body('e-1', jt.agent.uuid, 'message.created', hostile, `$(touch ${two})`))).status).toBe(202);
    await running.router.idle();
    expect(shellWakes(jt.records).map((wake) => wake.argv)).toEqual([['--timeline', `$(touch ${two})`, '--message', `m-1; touch ${one}`]]);
    expect([existsSync(one), existsSync(two)]).toEqual([false, false]);
  });

  it('a command whose first word is acx runs this acx with the rest; a program that cannot start is a failed wake, said why', async () => {
    const ada: RoutedAgent = { name: 'ada', command: ['acx', 'wake', '/agents/ada', '--model', 'openai:gpt-5'], token: 't', uuid: '0190a5f2-0000-7000-8000-00000000000c', secret: 'ada-signing-secret-0123' };
    const gone = jtAgent(() => ['/nonexistent/basecradle-harness-wake']);
    running = await startStandInRouter({ agents: [ada, gone.agent], env: ROUTER_ENV });
    expect((await running.post(body('e-1', ada.uuid, 'message.created', { type: 'message', uuid: 'm-1' }), { secret: ada.secret })).status).toBe(202);
    expect((await running.post(body('e-2', gone.agent.uuid, 'message.created', { type: 'message', uuid: 'm-2' }), { secret: gone.agent.secret })).status).toBe(202);
    await running.router.idle();
    expect(running.wakes().map((wake) => wake.argv)).toEqual([['wake', '/agents/ada', '--model', 'openai:gpt-5', '--timeline', TIMELINE, '--message', 'm-1']]);
    expect(running.logger.lines.filter((line) => line.includes('router wake not started'))).toEqual([
      expect.stringMatching(/^WARNING router wake not started agent=jt program=\/nonexistent\/basecradle-harness-wake error=.*ENOENT/),
    ]);
    expect(running.logger.lines.filter((line) => line.startsWith('ERROR router wake '))).toEqual([expect.stringContaining('agent=jt delivery=e-2 event=message.created')]);
    expect(running.rows()).toEqual([
      { delivery: 'e-1', state: 'done' },
      { delivery: 'e-2', state: 'failed' },
    ]);
  });
});
