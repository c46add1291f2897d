import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Tool, ToolContext } from '../../src/tools/tool.ts';
import { silentLogger } from '../../src/util/logger.ts';

export const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/mcp');

/** A stdio server entry that runs a fixture under the same (pinned) Node that runs the tests. */
export function fixtureCommand(file: string): { command: string; args: string[] } {
  return { command: process.execPath, args: [path.join(FIXTURES, file)] };
}

export function context(overrides: Partial<ToolContext> = {}): ToolContext {
  return {
    toolCallId: 'call-1',
    sessionId: 'session-1',
    idempotencyKey: 'key-1',
    abortSignal: new AbortController().signal,
    logger: silentLogger,
    ...overrides,
  };
}

export function byName(tools: readonly Tool[], name: string): Tool {
  const found = tools.find((t) => t.name === name);
  if (!found) throw new Error(`no tool ${name} in ${tools.map((t) => t.name).join(', ')}`);
  return found;
}
