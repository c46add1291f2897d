import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Journal } from '../../src/store/journal.ts';

/**
 * Issue 33 §1: a hook's decision is journaled before its call runs, so a turn resumed after a crash
 * never asks the hook (or the tool guardrail) again about a call already decided. A real agent
 * process (fixtures/agents/hooks-crash-agent.ts) is SIGKILLed between the decision and the tool run,
 * restarted, and every hook invocation and tool run is counted across both processes.
 */
const AGENT = join(import.meta.dirname, '../fixtures/agents/hooks-crash-agent.ts');

function runAgent(home: string, effects: string, crash: string): Promise<{ status: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', AGENT, home, effects, crash]);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve) => child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr })));
}

const lines = (effects: string, file: string) => (existsSync(join(effects, file)) ? readFileSync(join(effects, file), 'utf8').split('\n').filter(Boolean) : []);

function effectsOf(effects: string) {
  return { hook: lines(effects, 'hook.log').sort(), guardrail: lines(effects, 'guardrail.log').sort(), lookup: lines(effects, 'lookup.log'), deploy: lines(effects, 'deploy.log') };
}

function journaled(home: string) {
  const journal = new Journal(join(home, 'journal.db'));
  try {
    const turn = journal.turns('hooks-crash')[0]!;
    const tool = journal.messages('hooks-crash').find((m) => m.kind === 'tool')!.message.content as Array<{ toolCallId: string; output: unknown }>;
    return { status: turn.status, results: Object.fromEntries(tool.map((part) => [part.toolCallId, JSON.stringify(part.output)])) };
  } finally {
    journal.close();
  }
}

describe('hooks across a crash (e2e, real processes)', { timeout: 240_000 }, () => {
  it.concurrent('a clean run asks the hook and the guardrail once per call; lookup runs rewritten, deploy runs on the hook’s allow', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-hooks-crash-'));
    const effects = mkdtempSync(join(tmpdir(), 'acx-hooks-effects-'));
    const run = await runAgent(home, effects, 'none');
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ text: 'all done', finishReason: 'stop', modelCalls: 2 });
    expect(effectsOf(effects)).toEqual({ hook: ['c1', 'c2'], guardrail: ['c1', 'c2'], lookup: ['q-rewritten'], deploy: ['api'] });
  });

  it.concurrent('killed between the journaled decisions and the tool runs: the restarted turn reads them, asks nothing again, and runs both as decided', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-hooks-crash-'));
    const effects = mkdtempSync(join(tmpdir(), 'acx-hooks-effects-'));
    const killed = await runAgent(home, effects, 'call-decided');
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    expect(effectsOf(effects)).toEqual({ hook: ['c1', 'c2'], guardrail: ['c1', 'c2'], lookup: [], deploy: [] });
    const resumed = await runAgent(home, effects, 'none');
    expect(resumed.status, resumed.stderr).toBe(0);
    // 'stop', not a pause for deploy's approval: the hook's journaled allow still stands for it.
    expect(JSON.parse(resumed.stdout)).toEqual({ text: 'all done', finishReason: 'stop', modelCalls: 1 });
    expect(effectsOf(effects)).toEqual({ hook: ['c1', 'c2'], guardrail: ['c1', 'c2'], lookup: ['q-rewritten'], deploy: ['api'] });
    expect(journaled(home)).toEqual({ status: 'done', results: { c1: expect.stringContaining('lookup q-rewritten ok'), c2: expect.stringContaining('deploy api ok') } });
  });

  it.concurrent('killed once the unsafe call started: it is not run again, and no hook is asked again', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-hooks-crash-'));
    const effects = mkdtempSync(join(tmpdir(), 'acx-hooks-effects-'));
    const killed = await runAgent(home, effects, 'tool-started:c2');
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    const resumed = await runAgent(home, effects, 'none');
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout).text).toBe('all done');
    const seen = effectsOf(effects);
    expect(seen.hook).toEqual(['c1', 'c2']);
    expect(seen.guardrail).toEqual(['c1', 'c2']);
    expect(seen.deploy, 'killed after its started mark, before it ran: never run again').toEqual([]);
    // lookup (read-only) may or may not have run before the kill; whenever it runs, it runs rewritten.
    expect(seen.lookup.length).toBeGreaterThan(0);
    expect(new Set(seen.lookup)).toEqual(new Set(['q-rewritten']));
    expect(journaled(home).results.c2).toContain('Whether it took effect is unknown');
  });
});
