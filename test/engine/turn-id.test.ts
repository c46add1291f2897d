// Caller-chosen turn ids make delivering the same message twice safe: a finished turn answers
// from the journal and runs nothing; a failed or interrupted one is continued where it stopped,
// never started again with a second copy of the message.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ModelServer } from '../support/model-server.ts';
import { z } from 'zod';
import { interruptTurn } from '../../src/tools/run.ts';
import { tool } from '../../src/tools/tool.ts';
import { echoTool, linesOf, openaiModel, rig, startModelServer } from './helpers.ts';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

const userMessages = (r: ReturnType<typeof rig>, sessionId: string) =>
  r.readJournal((journal) => journal.messages(sessionId).filter((m) => m.kind === 'user').length);

describe('generate({ turnId })', () => {
  it('a message delivered twice is answered once: the second delivery returns the recorded reply', async () => {
    server.enqueue({ toolCalls: [{ name: 'echo', input: { text: 'once' } }] }, 'Echoed once.');
    const echo = echoTool();
    const r = rig(await openaiModel(server), { agent: { tools: [echo] } });
    const session = await r.agent.createSession({ sessionId: 'inbox' });
    const first = await r.agent.generate({ session, prompt: 'echo once', turnId: 'delivery-1' });
    const again = await r.agent.generate({ session, prompt: 'echo once', turnId: 'delivery-1' });
    expect(first).toMatchObject({ turnId: 'delivery-1', text: 'Echoed once.', resumed: false });
    expect(again).toMatchObject({ turnId: 'delivery-1', text: 'Echoed once.', resumed: true, stepCount: 2 });
    // The recorded answer reports the calls the turn made, as the first delivery did.
    expect(again.toolCalls).toEqual(first.toolCalls);
    expect(again.toolResults).toEqual(first.toolResults);
    expect(server.requests).toHaveLength(2); // no model call for the second delivery
    expect(echo.seen).toEqual(['once']); // and no tool ran again
    expect(userMessages(r, 'inbox')).toBe(1);
  });

  it('a turn that failed is continued by the next delivery, keeping the steps it finished', async () => {
    server.enqueue({ toolCalls: [{ name: 'echo', input: { text: 'side effect' } }] }, { fail: { status: 400 } });
    const echo = echoTool();
    const r = rig(await openaiModel(server), { agent: { tools: [echo] } });
    const session = await r.agent.createSession({ sessionId: 'inbox' });
    await expect(r.agent.generate({ session, prompt: 'do it', turnId: 'delivery-7' })).rejects.toThrow();
    expect(r.readJournal((journal) => journal.turn('delivery-7')?.status)).toBe('failed');

    server.enqueue('Done, the echo already ran.');
    const retried = await r.agent.generate({ session, prompt: 'do it', turnId: 'delivery-7' });
    expect(retried).toMatchObject({ turnId: 'delivery-7', text: 'Done, the echo already ran.', resumed: true });
    // The continued turn reports the whole turn, the call made before the failure included.
    expect(retried.toolCalls).toMatchObject([{ toolName: 'echo', input: { text: 'side effect' } }]);
    expect(retried.toolResults).toMatchObject([{ toolName: 'echo', input: { text: 'side effect' } }]);
    expect(echo.seen).toEqual(['side effect']);
    expect(userMessages(r, 'inbox')).toBe(1);
    expect(r.readJournal((journal) => journal.turn('delivery-7'))).toMatchObject({ status: 'done', error: null, steps: 2 });
  });

  it('a call that interrupts its turn leaves it open: the next delivery runs that call again, and only that call', async () => {
    server.enqueue({ toolCalls: [{ name: 'echo', input: { text: 'beside it' } }, { name: 'post', input: { text: 'hello' } }] }, 'Posted.');
    const echo = echoTool();
    let serviceUp = false;
    const posted: string[] = [];
    const post = tool({
      name: 'post',
      description: 'Post text to a service that may be down',
      inputSchema: z.object({ text: z.string() }),
      capabilityScopes: [],
      kind: 'edit',
      effect: 'idempotent',
      execute: ({ text }) => {
        if (!serviceUp) throw interruptTurn('post: the service could not be reached', new Error('ECONNREFUSED'));
        posted.push(text);
        return 'posted';
      },
    });
    const r = rig(await openaiModel(server), { agent: { tools: [echo, post] } });
    const session = await r.agent.createSession({ sessionId: 'inbox' });
    await expect(r.agent.generate({ session, prompt: 'post it', turnId: 'delivery-9' })).rejects.toMatchObject({ code: 'turn-interrupted' });
    // Stopped as a crash stops it: still running, the interrupted call without a result, its sibling's result kept.
    expect(r.readJournal((journal) => journal.turn('delivery-9')?.status)).toBe('running');
    expect(server.requests).toHaveLength(1);
    expect(linesOf(r.logger.lines, 'WARNING', 'tool').join('\n')).toMatch(/name=post .*outcome=interrupted/);

    serviceUp = true;
    const retried = await r.agent.generate({ session, prompt: 'post it', turnId: 'delivery-9' });
    expect(retried).toMatchObject({ text: 'Posted.', resumed: true });
    expect(posted).toEqual(['hello']);
    expect(echo.seen).toEqual(['beside it']);
    // The model read both results, the re-run call's included, and nothing about the outage.
    const toolMessages = JSON.stringify(server.requests[1]!.body);
    expect(toolMessages).toContain('echo: beside it');
    expect(toolMessages).toContain('posted');
    expect(toolMessages).not.toContain('could not be reached');
    expect(userMessages(r, 'inbox')).toBe(1);
  });

  it('refuses a turn id that belongs to another session', async () => {
    server.enqueue('first');
    const r = rig(await openaiModel(server));
    await r.agent.generate({ session: await r.agent.createSession({ sessionId: 'a' }), prompt: 'hi', turnId: 'shared' });
    await expect(
      r.agent.generate({ session: await r.agent.createSession({ sessionId: 'b' }), prompt: 'hi', turnId: 'shared' }),
    ).rejects.toThrow(/belongs to another session/);
  });
});
