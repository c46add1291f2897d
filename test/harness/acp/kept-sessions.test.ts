// Sessions named by the caller are kept by the local sandbox under a sessions root, so a later
// process can reopen them on the agent. An agent that cannot reopen sessions starts a new one and
// says so; detaching keeps the directory, destroying removes it; no session id can address a path.
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createACP } from '../../../src/harness/acp/create.ts';
import { createLocalSandbox, sessionDirName } from '../../../src/harness/acp/sandbox.ts';
import { HarnessAgent } from '../../../src/harness/harness-agent.ts';
import { createMemoryLogger } from '../../../src/util/logger.ts';
import { fakeProfile, tempCache } from './fake-profile.ts';

const cache = tempCache();
const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const close of closers) await close().catch(() => {});
});

function harnessOn(sessionsRoot: string) {
  const logger = createMemoryLogger('info');
  const harness = createACP(fakeProfile(cache, { sandbox: createLocalSandbox({ sessionsRoot }), logger }));
  closers.push(() => harness.close!());
  return { agent: new HarnessAgent({ harness }), logger };
}

describe('kept ACP sessions', () => {
  it('keeps a named session across processes; an agent without session/load or resume starts afresh and says so', async () => {
    const root = mkdtempSync(join(tmpdir(), 'acx-acp-kept-'));
    const first = harnessOn(root);
    const session = await first.agent.createSession({ sessionId: 'keep-me' });
    expect((await first.agent.generate({ session, prompt: '[[hello]]' })).text).toBe('Hello from the fake agent.');
    await session.detach();
    const record = join(root, 'fake-acp', 'keep-me', 'acp-session.json');
    expect(JSON.parse(readFileSync(record, 'utf8'))).toMatchObject({ harnessId: 'fake-acp', acpSessionId: expect.any(String) });

    const second = harnessOn(root);
    const reopened = await second.agent.createSession({ sessionId: 'keep-me' });
    expect((await second.agent.generate({ session: reopened, prompt: '[[hello]]' })).text).toBe('Hello from the fake agent.');
    expect(second.logger.lines.join('\n')).toMatch(
      /WARNING acp session not resumed .*reason="fake-acp advertises neither session\/resume nor session\/load"/,
    );
    await reopened.destroy();
    expect(existsSync(join(root, 'fake-acp', 'keep-me'))).toBe(false);
  });

  it('an agent that replays the history after answering session/load: none of it is taken for the next reply', async () => {
    const root = mkdtempSync(join(tmpdir(), 'acx-acp-kept-'));
    const open = () => {
      const logger = createMemoryLogger('info');
      const harness = createACP(fakeProfile(cache, { sandbox: createLocalSandbox({ sessionsRoot: root }), logger, env: { FAKE_LATE_REPLAY: '1' } }));
      closers.push(() => harness.close!());
      return { agent: new HarnessAgent({ harness }), logger };
    };
    const first = open();
    const session = await first.agent.createSession({ sessionId: 'late' });
    await first.agent.generate({ session, prompt: '[[hello]]' });
    await session.detach();

    const second = open();
    const reopened = await second.agent.createSession({ sessionId: 'late' });
    expect(second.logger.lines.join('\n')).toMatch(/INFO acp session resumed .*via=session\/load/);
    const result = await second.agent.generate({ session: reopened, prompt: '[[slow-hello]]' });
    expect(result.text).toBe('Hello from the fake agent.');
    await reopened.destroy();
  });

  it('turns any session id into one safe directory name', () => {
    expect(sessionDirName('chat-1')).toBe('chat-1');
    for (const hostile of ['..', '../escape', 'a/b', '/etc', '.hidden', 'x'.repeat(200), 'a\\b', '']) {
      const name = sessionDirName(hostile);
      expect(name, hostile).toMatch(/^id-[0-9a-f]{32}$/);
    }
    expect(sessionDirName('../escape')).not.toBe(sessionDirName('..'));
  });
});
