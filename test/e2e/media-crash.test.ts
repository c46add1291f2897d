import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Journal } from '../../src/store/journal.ts';
import { type ModelServer, openaiImage, startModelServer } from '../support/model-server.ts';
import { scaled } from '../support/time-scale.ts';

/**
 * A generation is a non-idempotent effect: a real agent process is SIGKILLed while its
 * generate_image request is at the provider (the image may be made and billed), then restarted.
 * The resumed turn must not ask for the image again, and the model must be told the outcome is
 * unknown. A clean run, for contrast, makes the image once and saves it.
 */
const AGENT = join(import.meta.dirname, '../fixtures/agents/media-crash-agent.ts');
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('crash-png')]);

let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(() => server.close());

function start(home: string, workspace: string): { child: ChildProcess; done: Promise<{ status: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> } {
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', AGENT, home, workspace, server.openaiBaseURL]);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  return { child, done: new Promise((resolve) => child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr }))) };
}

function toolResults(home: string): string[] {
  const journal = new Journal(join(home, 'journal.db'));
  try {
    return journal
      .messages('media-crash')
      .filter(({ message }) => message.role === 'tool' && Array.isArray(message.content))
      .flatMap(({ message }) => (message.content as Array<{ type: string; output: unknown }>).filter((part) => part.type === 'tool-result').map((part) => JSON.stringify(part.output)));
  } finally {
    journal.close();
  }
}

describe('a generation after a crash (e2e, real processes)', { timeout: scaled(120_000) }, () => {
  it('a clean run makes the image once and saves it', async () => {
    server.media.reset();
    const home = mkdtempSync(join(tmpdir(), 'acx-media-crash-'));
    const workspace = mkdtempSync(join(tmpdir(), 'acx-media-ws-'));
    server.media.enqueue(openaiImage(PNG));
    const run = await start(home, workspace).done;
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout).text).toBe('all done');
    expect(server.media.requests).toHaveLength(1);
    expect(readdirSync(workspace)).toEqual(['cat.png']);
    expect(toolResults(home).join('\n')).toContain('saved cat.png');
  });

  it('killed while the image request is at the provider: never asked again, and the model is told the outcome is unknown', async () => {
    server.media.reset();
    const home = mkdtempSync(join(tmpdir(), 'acx-media-crash-'));
    const workspace = mkdtempSync(join(tmpdir(), 'acx-media-ws-'));
    const first = start(home, workspace);
    // The provider receives the request (and would make and bill the image); the process dies before any answer.
    server.media.enqueue(() => {
      first.child.kill('SIGKILL');
      return openaiImage(PNG);
    });
    const killed = await first.done;
    expect(killed.signal).toBe('SIGKILL');
    expect(server.media.requests).toHaveLength(1);

    // Anything the resumed process asked the provider for would get an image: it must ask for none.
    server.media.enqueue(openaiImage(PNG));
    const resumed = await start(home, workspace).done;
    expect(resumed.status, resumed.stderr).toBe(0);
    const out = JSON.parse(resumed.stdout) as { text: string; modelCalls: number };
    expect(out.text).toBe('all done');
    expect(out.modelCalls).toBe(1);
    expect(server.media.requests).toHaveLength(1);
    expect(server.media.queued()).toBe(1);
    expect(existsSync(join(workspace, 'cat.png'))).toBe(false);
    const results = toolResults(home);
    expect(results).toHaveLength(1);
    expect(results[0]).toMatch(/stopped while generate_image was executing\. Whether it took effect is unknown/);
  });
});
