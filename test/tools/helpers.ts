import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { removeTree } from '../../src/util/remove-tree.ts';
import type { ToolContext } from '../../src/tools/tool.ts';

const created: string[] = [];

/** A fresh temporary directory, removed by `removeTempDirs` (call it in afterAll). */
export function tempDir(prefix = 'acx-tools-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  created.push(dir);
  return dir;
}

export function removeTempDirs(): void {
  // What a test's command left unreadable must not fail the clean-up of an ordinary user.
  for (const dir of created.splice(0)) removeTree(dir);
}

export function toolContext(overrides: Partial<ToolContext> = {}): ToolContext & { logger: ReturnType<typeof createMemoryLogger> } {
  const logger = createMemoryLogger();
  return {
    toolCallId: 'call-1',
    sessionId: 'session-1',
    idempotencyKey: 'session-1:call-1',
    abortSignal: new AbortController().signal,
    logger,
    ...overrides,
  } as ToolContext & { logger: ReturnType<typeof createMemoryLogger> };
}

/** Whether a process with this pid still exists (and is not a zombie). */
export { processRunning as processAlive } from '../../src/util/process-exists.ts';
