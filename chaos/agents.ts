// The chaos fleet's two agents and the scripted model that plays them. Both are timeline peers
// (test/support/timeline-agents.ts): `nova` answers through the platform tools alone; `lex` first
// performs a side effect through its MCP drop-in (chaos/effect-server.ts appends to the effect
// file), then answers. Every human message carries a tag (`#C123`); a reply quotes it, and so
// does the effect line, which is how the checker counts replies and effects per message.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ResponderResult, TurnContext } from '../test/support/model-server.ts';
import { batchLines, tagOf, timelineAgentDir } from '../test/support/timeline-agents.ts';

export const TALKER = 'nova';
export const EFFECTOR = 'lex';
export const AGENTS = [TALKER, EFFECTOR] as const;
/** The MCP tool as acx names it to the model: `<server>__<tool>`. */
const EFFECT_TOOL = 'effects__append';

/** The agents' directories under `home`; lex's drop-in points at the effect file and the control dir. */
export function writeAgents(home: string, effectFile: string, controlDir: string): Record<string, string> {
  const dirs = Object.fromEntries(AGENTS.map((handle) => [handle, timelineAgentDir(home, handle)]));
  const mcp = join(dirs[EFFECTOR]!, 'mcp');
  mkdirSync(mcp, { recursive: true });
  const dropIn = {
    command: process.execPath,
    args: ['--disable-warning=ExperimentalWarning', join(import.meta.dirname, 'effect-server.ts')],
    env: { CHAOS_EFFECT_FILE: effectFile, CHAOS_CONTROL_DIR: controlDir },
    kind: 'edit',
    effect: 'unsafe',
  };
  writeFileSync(join(mcp, 'effects.json'), `${JSON.stringify(dropIn, null, 2)}\n`);
  // acx refuses a drop-in that others could have written.
  chmodSync(join(mcp, 'effects.json'), 0o644);
  return dirs;
}

/** The message a human posts to an agent, with its tag. */
export const humanMessage = (agent: string, tag: string): string => (agent === EFFECTOR ? `@${agent} please record ${tag}` : `@${agent} please ack ${tag}`);

/** The reply that answers a tag, as the scripted model writes it. */
export const replyFor = (agent: string, tag: string): string => (agent === EFFECTOR ? `recorded ${tag}` : `ack ${tag}`);

/** lex's reply when its effect tool's result was a failure (the MCP server died mid-call): it says so. */
export const failedReplyFor = (tag: string): string => `could not record ${tag}`;

/** What effect-server.ts answers a call that appended its line. */
const appended = (tag: string): string => `appended ${tag}`;

/**
 * The model for both agents (the request's model id is the agent's handle). For the newest
 * batch: nova posts one reply per tag that mentions it; lex first calls the effect tool once per
 * such tag, and once those results are back posts one reply per tag: `recorded` when the tool
 * said it appended the line, `could not record` when its result was anything else (a call the
 * harness reported as failed). After its replies the turn ends. A compaction's request gets a
 * summary. Counting this turn's assistant messages (not its tool results) keeps a turn that was
 * recovered from its journal on the step it had reached.
 */
export function chaosReplies(context: TurnContext): ResponderResult {
  const me = context.request.view.model;
  const messages = context.request.view.messages;
  // A request offering no tools is the engine compacting a long session (a timeline turn always
  // has messages_create): it gets a summary, as a real model writes one, so long sessions compact.
  if (context.request.view.tools.length === 0) return `${me} answered every tagged message above, each once, as it came.`;
  const at = messages.findLastIndex((message) => message.role === 'user' && batchLines(message.text).length > 0);
  if (at < 0) return 'nothing to answer';
  const steps = messages.slice(at + 1).filter((message) => message.role === 'assistant').length;
  const tags = batchLines(messages[at]!.text)
    .filter((line) => new RegExp(`(^|\\s)@${me}\\b`, 'i').test(line.body))
    .map((line) => tagOf(line.body))
    .filter((tag): tag is string => tag !== undefined);
  if (tags.length === 0) return 'nothing here is for me';
  const reply = (body: (tag: string) => string = (tag) => replyFor(me, tag)): ResponderResult => ({ toolCalls: tags.map((tag) => ({ name: 'messages_create', input: { body: body(tag) } })) });
  if (me === EFFECTOR) {
    if (steps === 0) return { toolCalls: tags.map((tag) => ({ name: EFFECT_TOOL, input: { line: tag } })) };
    if (steps > 1) return 'done';
    const outputs = messages
      .slice(at + 1)
      .flatMap((message) => message.toolResults ?? [])
      .map((result) => result.output);
    return reply((tag) => (outputs.some((output) => output.includes(appended(tag))) ? replyFor(me, tag) : failedReplyFor(tag)));
  }
  return steps === 0 ? reply() : 'done';
}
