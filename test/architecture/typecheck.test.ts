// The project type-checks (`npm run typecheck`): strict TypeScript over src/, test/, bench/ and
// chaos/, and the chat app's page. The suite runs the sources without checking their types, so
// without this a type error in a test or a fixture lands unseen (one did, in a fixture).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

/** Runs tsc under this Node; resolves with its exit code and what it printed. */
function tsc(...args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [TSC, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

describe('types', () => {
  // A whole-project check takes about half a minute of CPU; the limit only stops a hung compiler.
  it('the project type-checks with no error', { timeout: 600_000 }, async () => {
    const [project, page] = await Promise.all([tsc('--noEmit', '-p', '.'), tsc('-p', 'test/support/chat-app/page', '--noEmit')]);
    expect(project.output.trim(), 'tsc --noEmit -p .').toBe('');
    expect(project.code).toBe(0);
    expect(page.output.trim(), 'tsc -p test/support/chat-app/page').toBe('');
    expect(page.code).toBe(0);
  });
});
