// Reopening a kept session on an ACP agent (issue 15, "As a client"): when the agent offers both
// session/resume and session/load, acx asks for session/resume (nothing is replayed); an agent
// offering only session/load is reopened with it; a reopen slower than the startup window
// (startupTimeoutMs) is given up with a warning. An agent offering neither starts a new session
// with a warning when the session is reopened by id, but is refused when the caller explicitly
// asked for the history back (resumeFrom). The fake agent reports which one it was asked.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createACP } from '../../../src/harness/acp/create.ts';
import { createLocalSandbox } from '../../../src/harness/acp/sandbox.ts';
import { HarnessCapabilityUnsupportedError } from '../../../src/core/errors.ts';
import type { ACPSettings } from '../../../src/harness/acp/settings.ts';
import { HarnessAgent } from '../../../src/harness/harness-agent.ts';
import { createMemoryLogger } from '../../../src/util/logger.ts';
import { fakeProfile, tempCache } from './fake-profile.ts';

const cache = tempCache();
const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const close of closers) await close().catch(() => {});
});

/** A harness on a fake agent that keeps its sessions under `root`; `env` chooses what the agent offers. */
function open(root: string, env: Record<string, string>, overrides: Partial<ACPSettings> = {}) {
  const logger = createMemoryLogger('info');
  const harness = createACP(fakeProfile(cache, { sandbox: createLocalSandbox({ sessionsRoot: root }), logger, env, ...overrides }));
  closers.push(() => harness.close!());
  return { agent: new HarnessAgent({ harness }), logger };
}

/** Runs a turn in a kept session named `kept` and detaches it; returns where it is kept and its state. */
async function keptSession(env: Record<string, string>) {
  const root = mkdtempSync(join(tmpdir(), 'acx-acp-reopen-'));
  const first = open(root, env);
  const session = await first.agent.createSession({ sessionId: 'kept' });
  await first.agent.generate({ session, prompt: '[[hello]]' });
  return { root, state: await session.detach() };
}

/**
 * Runs a turn in a kept session, detaches, and reopens it in a second harness (`second` adds to
 * its agent's env and settings); returns what the agent saw.
 */
async function reopen(env: Record<string, string>, second: { env?: Record<string, string>; settings?: Partial<ACPSettings> } = {}): Promise<{ reopenedBy: string | null; log: string }> {
  const { root } = await keptSession(env);
  const later = open(root, { ...env, ...second.env }, second.settings);
  const reopened = await later.agent.createSession({ sessionId: 'kept' });
  try {
    const state = JSON.parse((await later.agent.generate({ session: reopened, prompt: '[[state]]' })).text) as { reopenedBy: string | null };
    return { reopenedBy: state.reopenedBy, log: later.logger.lines.join('\n') };
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

  it('gives up a reopen that outlasts startupTimeoutMs, says so, and starts a new session', async () => {
    const { reopenedBy, log } = await reopen({ FAKE_RESUME: '1' }, { env: { FAKE_SLOW_RESUME_MS: '60000' }, settings: { startupTimeoutMs: 5000 } });
    expect(reopenedBy).toBeNull();
    expect(log).toMatch(/WARNING acp session not resumed .*did not answer session\/resume within 5000 ms/);
  });

  it('reopened by id on an agent offering neither resume nor load: says why and starts a new session', async () => {
    const { reopenedBy, log } = await reopen({});
    expect(reopenedBy).toBeNull();
    expect(log).toMatch(
      /^WARNING acp session not resumed harness=fake-acp session=kept acpSession=[\w-]+ reason="fake-acp advertises neither session\/resume nor session\/load" note="a new agent session starts without the earlier conversation"$/m,
    );
  });

  it('resumeFrom on an agent offering neither resume nor load: refused, naming the agent and what it lacks', async () => {
    const { root, state } = await keptSession({});
    const later = open(root, {});
    const refused = await later.agent.createSession({ resumeFrom: state }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(HarnessCapabilityUnsupportedError.isInstance(refused)).toBe(true);
    expect((refused as Error).message).toMatch(/^fake-acp \(fake-agent\) advertises neither session\/resume nor session\/load, so its session [\w-]+ cannot be reopened with its conversation\.$/);
    expect(refused).toMatchObject({ hint: 'Open a new session instead (createSession() without resumeFrom), or use an agent that supports session/resume or session/load.' });
    expect(later.logger.lines.join('\n')).not.toMatch(/acp session (not resumed|ready)/);
    // The kept session survives the refusal: reopened by id, it starts afresh (and says so).
    const reopened = await later.agent.createSession({ sessionId: 'kept' });
    await reopened.destroy();
    expect(later.logger.lines.join('\n')).toMatch(/WARNING acp session not resumed harness=fake-acp session=kept /);
  });
});
