// Timeline agents for whole-stack platform tests and the platform benchmark: an agent directory
// per platform handle (its own id, so its own journal and channel state; its model id is the
// handle, so one local model server can tell the agents' requests apart), and a scripted model
// that answers what a timeline wake shows it.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ResponderResult } from './model-server.ts';
import type { TurnContext } from './model-server.ts';

/** Writes `<home>/agents/<handle>/agent.json`: a peer whose model is `openai:<handle>`. */
export function timelineAgentDir(home: string, handle: string): string {
  const dir = join(home, 'agents', handle);
  mkdirSync(dir, { recursive: true });
  const definition = {
    id: `peer-${handle}`,
    name: `Peer ${handle}`,
    version: '0.1.0',
    description: 'A peer on platform timelines: it acknowledges each message that mentions it.',
    model: `openai:${handle}`,
    maxSteps: 6,
    permissionMode: 'allow-edits',
    tools: [],
  };
  writeFileSync(join(dir, 'agent.json'), `${JSON.stringify(definition, null, 2)}\n`);
  return dir;
}

/** The lines of a timeline wake's batch (`[time] @author: body`), without the earlier context. */
export function batchLines(prompt: string): Array<{ author: string; body: string }> {
  const start = /new messages? on this timeline:\n/.exec(prompt);
  if (!start) return [];
  const rest = prompt.slice(start.index + start[0].length);
  const end = rest.indexOf('\n\nReply only');
  return (end >= 0 ? rest.slice(0, end) : rest)
    .split('\n')
    .map((line) => /^\[[^\]]+\] @([\w-]+): (.*)$/.exec(line))
    .filter((match): match is RegExpExecArray => match !== null)
    .map((match) => ({ author: match[1]!, body: match[2]! }));
}

/** The message's tag (`#T3-7`, `#L12`): what a reply quotes so a test can count replies per message. */
export const tagOf = (body: string): string | undefined => /#[A-Z]+[\d-]+/.exec(body)?.[0];

/**
 * The burst's model: the agent (the request's model id is its handle) acknowledges, through one
 * messages_create each, every message of the batch that mentions it, quoting its tag; anything
 * else gets a final text only (unspoken on a timeline). Once it has answered, it ends the turn.
 */
export function burstReplies(context: TurnContext): ResponderResult {
  const me = context.request.view.model;
  const messages = context.request.view.messages;
  // The wake's batch is the last user message that holds one (the brief follows it as its own);
  // once the model has answered it in this turn (its tool results came back), the turn ends.
  const at = messages.findLastIndex((message) => message.role === 'user' && batchLines(message.text).length > 0);
  if (at < 0 || messages.slice(at + 1).some((message) => message.role === 'assistant')) return 'acknowledged';
  const calls = batchLines(messages[at]!.text)
    .filter((line) => new RegExp(`(^|\\s)@${me}\\b`, 'i').test(line.body))
    .map((line) => ({ name: 'messages_create', input: { body: `ack ${tagOf(line.body) ?? '(untagged)'}` } }));
  return calls.length > 0 ? { toolCalls: calls } : 'nothing here is for me';
}

/**
 * A self-triggering loop's model: the agent answers every batch with one message, so two such
 * agents on a timeline wake each other forever (until the breaker stops them). A batch with a
 * `#STOP` line is not answered, unless the person (ana) wrote one: then the agent says it is back.
 */
export function loopReplies(context: TurnContext): ResponderResult {
  const messages = context.request.view.messages;
  const at = messages.findLastIndex((message) => message.role === 'user' && batchLines(message.text).length > 0);
  if (at < 0 || messages.slice(at + 1).some((message) => message.role === 'assistant')) return 'said it';
  const lines = batchLines(messages[at]!.text);
  const say = (body: string): ResponderResult => ({ toolCalls: [{ name: 'messages_create', input: { body } }] });
  const stops = lines.filter((line) => line.body.includes('#STOP'));
  if (stops.length > 0) return stops.some((line) => line.author === 'ana') ? say('back #STOP') : 'quiet now';
  return say(`and another thing (${lines.length} read)`);
}
