// Issue 11 item 7 on the ACP harness, against the fake ACP agent: what ACP v1 allows works
// (stop() sends session/cancel and ends the turn; detach() returns a resume state that reopens the
// session; compact() runs an advertised /compact; an agent's own compaction streams as a part),
// and what it has no portable API for — pausing a turn at a safe point, manual
// compaction, paused turns answerable from another process — throws
// HarnessCapabilityUnsupportedError naming the harness, instead of quietly doing nothing.
import { afterAll, describe, expect, it } from 'vitest';
import { HarnessAgent } from '../../../src/harness/harness-agent.ts';
import { createACP } from '../../../src/harness/acp/create.ts';
import { AcxError, HarnessCapabilityUnsupportedError } from '../../../src/core/errors.ts';
import type { HarnessStreamPart } from '../../../src/engine/events.ts';
import { fakeProfile, tempCache } from './fake-profile.ts';

const cache = tempCache();
const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of closers) await c().catch(() => {});
});

function agentFor(env: Record<string, string> = {}): HarnessAgent {
  const harness = createACP(fakeProfile(cache, { env }));
  closers.push(() => harness.close!());
  return new HarnessAgent({ harness });
}

async function caught(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: Error) => e,
  );
}

describe('the session lifecycle on the ACP harness', () => {
  it('stop() cancels the running turn (session/cancel) and the session takes the next prompt', async () => {
    const agent = agentFor();
    const session = await agent.createSession();
    const stream = agent.stream({ session, prompt: '[[hang]]' });
    for await (const part of stream.harnessStream) if (part.type === 'text-delta') await session.stop();
    const error = await caught(stream.result);
    expect(AcxError.isInstance(error) && error.code).toBe('aborted');
    expect((await agent.generate({ session, prompt: '[[hello]]' })).text).toBe('Hello from the fake agent.');
    await session.destroy();
  });

  it('suspendTurn(), compact() and listSuspended() throw HarnessCapabilityUnsupportedError naming the harness', async () => {
    const agent = agentFor();
    const session = await agent.createSession();
    const attempts: Array<[string, () => Promise<unknown>]> = [
      ['suspendTurn', () => session.suspendTurn()],
      ['compact', () => session.compact()],
      ['listSuspended', async () => agent.listSuspended()],
    ];
    const messages: Record<string, string> = {};
    for (const [name, attempt] of attempts) {
      const error = await caught(attempt());
      expect(HarnessCapabilityUnsupportedError.isInstance(error), `${name}: ${error.message}`).toBe(true);
      messages[name] = error.message;
    }
    expect(messages).toEqual({
      suspendTurn: 'acp:fake-acp cannot pause a turn at a safe point and resume it later.',
      compact: 'fake-acp advertises no /compact command, and standard ACP v1 has no portable API for manual compaction.',
      listSuspended: 'acp:fake-acp keeps a paused turn only in the process that runs it; it cannot be listed or answered from elsewhere.',
    });
    await session.destroy();
  });

  it("the agent's own compaction (ACP compaction_update, offered by advertising session.compaction) streams as a compaction part", async () => {
    const agent = agentFor();
    const session = await agent.createSession();
    const parts: HarnessStreamPart[] = [];
    for await (const part of agent.stream({ session, prompt: '[[compact]]' }).harnessStream) parts.push(part);
    expect(parts.filter((p) => p.type === 'compaction')).toEqual([
      { type: 'compaction', trigger: 'agent', summary: 'We fixed the parser; tests pass.', tokensBefore: 150000 },
    ]);
    await session.destroy();
  });

  it('compact() runs the agent\'s own /compact where it advertises one, and returns the compaction it reported', async () => {
    const agent = agentFor({ FAKE_COMMANDS: 'compact,review' });
    const session = await agent.createSession();
    expect(await session.compact(), 'before any turn').toEqual({ compacted: false, reason: 'no turn has run in this session yet' });
    await agent.generate({ session, prompt: '[[hello]]' });
    expect(await session.compact()).toEqual({ compacted: true, trigger: 'manual', summary: 'We fixed the parser; tests pass.', tokensBefore: 150000 });
    await session.destroy();
  });

  it('detach() returns a resume state; createSession({ resumeFrom }) reopens the same session', async () => {
    const agent = agentFor();
    const session = await agent.createSession({ sessionId: 'acp-detach' });
    await agent.generate({ session, prompt: '[[hello]]' });
    const state = await session.detach();
    expect(state).toEqual({ type: 'acx-session', version: 1, harnessId: 'acp:fake-acp', agentId: 'agent', sessionId: 'acp-detach' });
    const again = await agent.createSession({ resumeFrom: state });
    expect(again.id).toBe('acp-detach');
    expect((await agent.generate({ session: again, prompt: '[[hello]]' })).text).toBe('Hello from the fake agent.');
    await again.destroy();
  });
});
