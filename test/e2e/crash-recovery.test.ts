import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Journal } from '../../src/store/journal.ts';

/**
 * SIGKILLs a real agent process at every durability boundary of a turn and inside tools,
 * restarts it, and counts side effects: a tool with side effects never runs twice, and the
 * journal is always well-formed.
 */
const AGENT = join(import.meta.dirname, '../fixtures/agents/crash-agent.ts');

interface AgentRun {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function runAgent(home: string, effects: string, crash: string): Promise<AgentRun> {
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', AGENT, home, effects, crash]);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve) => child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr })));
}

function lines(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

function assertWellFormed(home: string) {
  const journal = new Journal(join(home, 'journal.db'));
  try {
    const messages = journal.messages('crash-session');
    const called = new Set<string>();
    const answered = new Set<string>();
    for (const { message } of messages) {
      if (!Array.isArray(message.content)) continue;
      for (const part of message.content as Array<{ type: string; toolCallId?: string }>) {
        if (part.type === 'tool-call') called.add(part.toolCallId!);
        if (part.type === 'tool-result') answered.add(part.toolCallId!);
      }
    }
    expect([...called].sort()).toEqual([...answered].sort());
    const turns = journal.turns('crash-session');
    expect(turns).toHaveLength(1);
    expect(turns[0]!.status).toBe('done');
    return messages;
  } finally {
    journal.close();
  }
}

// turn-started, 2 × (model-call, assistant-persisted, 2 × tool-started, 2 × tool-finished,
// step-settled), model-call, assistant-persisted, turn-ended
const total = 18;

// Each case spawns two real processes; on a loaded 2-core machine that can take a while.
describe('crash recovery (e2e, real processes)', { timeout: 240_000 }, () => {
  it.concurrent('a clean run calls each tool once and finishes', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-crash-'));
    const effects = mkdtempSync(join(tmpdir(), 'acx-effects-'));
    const run = await runAgent(home, effects, 'none');
    const clean = { run, home, effects };
    expect(clean.run.status, clean.run.stderr).toBe(0);
    const out = JSON.parse(clean.run.stdout.trim()) as { text: string; checkpoints: number };
    expect(out.text).toBe('all done');
    expect(out.checkpoints).toBe(total);
    expect(lines(join(clean.effects, 'send.log'))).toEqual(['a', 'b']);
  });

  for (let at = 1; at <= total; at++) {
    it.concurrent(`killed at checkpoint ${at}: resumes to the same answer with zero duplicated side effects`, async () => {
      const home = mkdtempSync(join(tmpdir(), 'acx-crash-'));
      const effects = mkdtempSync(join(tmpdir(), 'acx-effects-'));
      const killed = await runAgent(home, effects, `checkpoint:${at}`);
      expect(killed.signal).toBe('SIGKILL');
      const resumed = await runAgent(home, effects, 'none');
      expect(resumed.status, resumed.stderr).toBe(0);
      expect(JSON.parse(resumed.stdout.trim()).text).toBe('all done');
      const sends = lines(join(effects, 'send.log'));
      expect(new Set(sends).size).toBe(sends.length); // a side effect never runs twice
      const messages = assertWellFormed(home);
      if (sends.length < 2) {
        // Killed after the call was marked started but before its effect: never re-run, and said so.
        expect(JSON.stringify(messages)).toMatch(/Whether it took effect is unknown/);
      }
      expect(['a', 'b'].filter((key) => !sends.includes(key)).length).toBeLessThanOrEqual(1);
      expect(readdirSync(effects).filter((f) => f.startsWith('upsert-'))).toHaveLength(1);
    });
  }

  it.concurrent('killed inside an unsafe tool after its effect: not re-run, and the model is told the outcome is unknown', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-crash-'));
    const effects = mkdtempSync(join(tmpdir(), 'acx-effects-'));
    expect((await runAgent(home, effects, 'inside:send:after:1')).signal).toBe('SIGKILL');
    const resumed = await runAgent(home, effects, 'none');
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(lines(join(effects, 'send.log'))).toEqual(['a', 'b']);
    const messages = assertWellFormed(home);
    expect(JSON.stringify(messages)).toMatch(/Whether it took effect is unknown/);
  });

  it.concurrent('killed inside an unsafe tool before its effect: still not re-run (the engine cannot know)', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-crash-'));
    const effects = mkdtempSync(join(tmpdir(), 'acx-effects-'));
    expect((await runAgent(home, effects, 'inside:send:before:1')).signal).toBe('SIGKILL');
    const resumed = await runAgent(home, effects, 'none');
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(lines(join(effects, 'send.log'))).toEqual(['b']);
    assertWellFormed(home);
  });

  it.concurrent('killed inside a read-only tool: it is re-run', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-crash-'));
    const effects = mkdtempSync(join(tmpdir(), 'acx-effects-'));
    expect((await runAgent(home, effects, 'inside:lookup:after:1')).signal).toBe('SIGKILL');
    const resumed = await runAgent(home, effects, 'none');
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(lines(join(effects, 'lookup.log'))).toEqual(['q', 'q']);
    expect(lines(join(effects, 'send.log'))).toEqual(['a', 'b']);
    assertWellFormed(home);
  });

  it.concurrent('killed inside an idempotent tool: it is re-run under the same idempotency key', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-crash-'));
    const effects = mkdtempSync(join(tmpdir(), 'acx-effects-'));
    expect((await runAgent(home, effects, 'inside:save:after:1')).signal).toBe('SIGKILL');
    const resumed = await runAgent(home, effects, 'none');
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(readdirSync(effects).filter((f) => f.startsWith('upsert-'))).toHaveLength(1);
    assertWellFormed(home);
  });
});
