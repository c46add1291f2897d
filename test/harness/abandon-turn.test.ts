// Issue 30 item 3: session.abandonTurn() gives up a turn that waits (for an approval, a host's
// result) and leaves a session that answers the next message: every call the abandoned turn left
// open gets a result saying so, so the transcript the model reads next is whole. Through the real
// OpenAI Responses wire, checked from what the model was sent and from the journal.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deployTool } from '../support/deploy-tool.ts';
import type { ModelServer } from '../support/model-server.ts';
import { echoTool, openaiModel, pairing, rig, startModelServer, tmpHome, toolResultsIn } from '../engine/helpers.ts';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

describe('session.abandonTurn()', () => {
  it('a turn waiting for approval: abandoned, its call answered as not run, and the next message is answered', async () => {
    server.enqueue({ toolCalls: [{ id: 'call_dep', name: 'deploy', input: { service: 'api' } }] }, 'Hello again.');
    const marker = join(tmpHome(), 'marker');
    const r = rig(await openaiModel(server), { agent: { tools: [deployTool(marker)] } });
    const session = await r.agent.createSession({ sessionId: 'ops' });
    const paused = await r.agent.generate({ session, prompt: 'deploy api' });
    expect(paused.suspendedBy).toBe('approval');
    expect(await session.unfinishedTurn()).toMatchObject({ turnId: paused.turnId, suspendedBy: 'approval' });

    expect(await session.abandonTurn(paused.turnId, 'the user cancelled')).toBe(true);
    expect(await session.hasUnfinishedTurn()).toBe(false);
    expect(await session.unfinishedTurn()).toBeUndefined();

    const next = await r.agent.generate({ session, prompt: 'hello' });
    expect(next.text).toBe('Hello again.');
    expect(toolResultsIn(server.requests[1]!)).toEqual([
      { callId: 'call_dep', output: expect.stringContaining('Not run: the turn was abandoned (the user cancelled).') },
    ]);
    expect(existsSync(marker), 'the abandoned call never ran').toBe(false);
    const journal = r.readJournal((j) => ({ turns: j.turns('ops').map((t) => [t.status, t.error]), messages: j.messages('ops') }));
    expect(journal.turns).toEqual([
      ['cancelled', 'abandoned: the user cancelled'],
      ['done', null],
    ]);
    expect(pairing(journal.messages)).toEqual({ called: ['call_dep'], answered: ['call_dep'] });
    expect(await session.abandonTurn(paused.turnId, 'again'), 'a turn already ended is not abandoned twice').toBe(false);
  });

  it('a step of two calls, one run and one waiting: the result that exists is kept, the waiting call is answered as not run', async () => {
    server.enqueue(
      {
        toolCalls: [
          { id: 'call_echo', name: 'echo', input: { text: 'x' } },
          { id: 'call_dep', name: 'deploy', input: { service: 'web' } },
        ],
      },
      'Fine.',
    );
    const marker = join(tmpHome(), 'marker');
    const echo = echoTool();
    const r = rig(await openaiModel(server), { agent: { tools: [echo, deployTool(marker)] } });
    const session = await r.agent.createSession({ sessionId: 'two' });
    const paused = await r.agent.generate({ session, prompt: 'echo then deploy' });
    expect(paused.pendingApprovals.map((a) => a.toolCallId)).toEqual(['call_dep']);

    await session.abandonTurn(paused.turnId, 'set aside');
    const next = await r.agent.generate({ session, prompt: 'next' });
    expect(next.text).toBe('Fine.');
    expect(toolResultsIn(server.requests[1]!)).toEqual([
      { callId: 'call_echo', output: 'echo: x' },
      { callId: 'call_dep', output: expect.stringContaining('Not run: the turn was abandoned (set aside).') },
    ]);
    expect(echo.seen).toEqual(['x']);
    expect(existsSync(marker)).toBe(false);
  });
});
