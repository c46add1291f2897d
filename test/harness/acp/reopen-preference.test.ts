// Reopening a kept session on an ACP agent (issue 15, "As a client"): when the agent offers both
// session/resume and session/load, acx asks for session/resume (nothing is replayed); an agent
// offering only session/load is reopened with it. The fake agent reports which one it was asked.
// NOTE: imports test/acp/fake-profile.ts; once that file moves here, the import is './fake-profile.ts'.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createACP } from '../../../src/harness/acp/create.ts';
import { createLocalSandbox } from '../../../src/harness/acp/sandbox.ts';
import { HarnessAgent } from '../../../src/harness/harness-agent.ts';
import { createMemoryLogger } from '../../../src/util/logger.ts';
import { fakeProfile, tempCache } from '../../acp/fake-profile.ts';

const cache = tempCache();
const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const close of closers) await close().catch(() => {});
});

/** A harness on a fake agent that keeps its sessions under `root`; `env` chooses what the agent offers. */
function open(root: string, env: Record<string, string>) {
  const logger = createMemoryLogger('info');
  const harness = createACP(fakeProfile(cache, { sandbox: createLocalSandbox({ sessionsRoot: root }), logger, env }));
  closers.push(() => harness.close!());
  return { agent: new HarnessAgent({ harness }), logger };
}

/** Runs a turn in a kept session, detaches, and reopens it in a second harness; returns what the agent saw. */
async function reopen(env: Record<string, string>): Promise<{ reopenedBy: string | null; log: string }> {
  const root = mkdtempSync(join(tmpdir(), 'acx-acp-reopen-'));
  const first = open(root, env);
  const session = await first.agent.createSession({ sessionId: 'kept' });
  await first.agent.generate({ session, prompt: '[[hello]]' });
  await session.detach();

  const second = open(root, env);
  const reopened = await second.agent.createSession({ sessionId: 'kept' });
  try {
    const state = JSON.parse((await second.agent.generate({ session: reopened, prompt: '[[state]]' })).text) as { reopenedBy: string | null };
    return { reopenedBy: state.reopenedBy, log: second.logger.lines.join('\n') };
  } finally {
    await reopened.destroy();
  }
}

describe('reopening a kept ACP session', () => {
  it('asks for session/resume when the agent offers both resume and load', async () => {
    const { reopenedBy, log } = await reopen({ FAKE_RESUME: '1' });
    expect(reopenedBy).toBe('session/resume');
    expect(log).toMatch(/INFO acp session resumed .*via=session\/resume/);
  });

  it('uses session/load when that is all the agent offers', async () => {
    const { reopenedBy, log } = await reopen({ FAKE_LATE_REPLAY: '1' });
    expect(reopenedBy).toBe('session/load');
    expect(log).toMatch(/INFO acp session resumed .*via=session\/load/);
  });
});
