// Shared set-up for the engine's end-to-end tests: a real model server on loopback, the real AI
// SDK providers resolved through acx's model seam, a temp home for the journal, a memory logger.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { createEngineHarness, type EngineHarnessOptions } from '../../src/harness/engine-harness.ts';
import { HarnessAgent, type HarnessAgentSettings } from '../../src/harness/harness-agent.ts';
import { resolveModel, type ModelSurface, type ResolvedModel } from '../../src/model/providers.ts';
import { Journal, type StoredMessage } from '../../src/store/journal.ts';
import { tool, type Tool } from '../../src/tools/tool.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import type { ModelServer, RecordedRequest, ViewMessage } from '../support/model-server.ts';

export { respondByTurn, startModelServer } from '../support/model-server.ts';

/** A distinctive fake key, so a test can scan every log line for it. */
export const OPENAI_KEY = 'sk-test-OPENAIKEY-7f3a9c2e41d08b6a5c';
export const ANTHROPIC_KEY = 'sk-ant-test-ANTHROPICKEY-19b7e4d2a0c3f5';
export const BRIEF = '<acx-brief>';

export const tmpHome = (): string => mkdtempSync(join(tmpdir(), 'acx-engine-'));

export function openaiModel(server: ModelServer, surface?: ModelSurface, modelId = 'm'): Promise<ResolvedModel> {
  return resolveModel({
    spec: `openai:${modelId}`,
    env: { OPENAI_API_KEY: OPENAI_KEY, OPENAI_BASE_URL: server.openaiBaseURL },
    ...(surface ? { surface } : {}),
  });
}

export function anthropicModel(server: ModelServer, modelId = 'claude-test'): Promise<ResolvedModel> {
  return resolveModel({
    spec: `anthropic:${modelId}`,
    env: { ANTHROPIC_API_KEY: ANTHROPIC_KEY, ANTHROPIC_BASE_URL: server.anthropicBaseURL },
  });
}

export interface Rig {
  home: string;
  logger: ReturnType<typeof createMemoryLogger>;
  harness: ReturnType<typeof createEngineHarness>;
  agent: HarnessAgent;
  /** Opens the journal file afresh (what a user inspecting the database would see). */
  readJournal<T>(fn: (journal: Journal) => T): T;
}

export function rig(
  model: ResolvedModel,
  options: {
    home?: string;
    harness?: Partial<EngineHarnessOptions>;
    agent?: Partial<HarnessAgentSettings>;
    logLevel?: 'debug' | 'info';
  } = {},
): Rig {
  const home = options.home ?? tmpHome();
  const logger = createMemoryLogger(options.logLevel ?? 'debug');
  const harness = createEngineHarness({ model, home, logger, retryBaseMs: 1, ...options.harness });
  const agent = new HarnessAgent({ harness, ...options.agent });
  return {
    home,
    logger,
    harness,
    agent,
    readJournal(fn) {
      const journal = new Journal(join(home, 'journal.db'));
      try {
        return fn(journal);
      } finally {
        journal.close();
      }
    },
  };
}

/** The volatile brief the engine spliced into a request (the last user message starting `<acx-brief>`). */
export function briefIn(request: RecordedRequest): string {
  const briefs = request.view.messages.filter((m) => m.role === 'user' && m.text.includes(BRIEF));
  const last = briefs.at(-1);
  if (!last) return '';
  return last.text.slice(last.text.indexOf(BRIEF));
}

/** Every tool result the request hands the model, across all messages. */
export function toolResultsIn(request: RecordedRequest): NonNullable<ViewMessage['toolResults']> {
  return request.view.messages.flatMap((m) => m.toolResults ?? []);
}

/** True when the request already carries tool output (the model is past its first step). */
export function hasToolOutput(request: RecordedRequest): boolean {
  return toolResultsIn(request).length > 0;
}

/** Tool-call / tool-result pairing in a stored transcript: every call answered, no stray result. */
export function pairing(messages: readonly StoredMessage[]): { called: string[]; answered: string[] } {
  const called: string[] = [];
  const answered: string[] = [];
  for (const { message } of messages) {
    if (!Array.isArray(message.content)) continue;
    for (const part of message.content as Array<{ type: string; toolCallId?: string }>) {
      if (part.type === 'tool-call') called.push(part.toolCallId!);
      if (part.type === 'tool-result') answered.push(part.toolCallId!);
    }
  }
  return { called: called.sort(), answered: answered.sort() };
}

/** A read-only echo tool that records what it was called with. */
export function echoTool(name = 'echo'): Tool<{ text: string }> & { seen: string[] } {
  const seen: string[] = [];
  const t = tool({
    name,
    description: 'Echo text back',
    inputSchema: z.object({ text: z.string() }),
    capabilityScopes: [],
    kind: 'read',
    effect: 'read-only',
    execute: ({ text }) => {
      seen.push(text);
      return `echo: ${text}`;
    },
  });
  return Object.assign(t, { seen });
}

/** Lines of a memory logger that start with `LEVEL event`. */
export function linesOf(lines: readonly string[], level: 'DEBUG' | 'INFO' | 'WARNING' | 'ERROR', event: string): string[] {
  return lines.filter((line) => line.startsWith(`${level} ${event} `) || line === `${level} ${event}`);
}

/** Waits (event-loop turns, no timing threshold) until `predicate` holds. */
export async function until(predicate: () => boolean): Promise<void> {
  while (!predicate()) await new Promise((resolve) => setImmediate(resolve));
}
