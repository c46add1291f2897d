// Item 3, speech: final-text mode (the final text is the reply) and tool mode (speaking is a tool
// call; the final text is unspoken narration, logged in full; an addressed turn that took no
// visible action gets exactly one nudge naming the tool).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { tool } from '../../src/tools/tool.ts';
import type { ModelServer, RecordedRequest } from '../support/model-server.ts';
import { briefIn, linesOf, openaiModel, rig, startModelServer } from './helpers.ts';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

function sayTool(options: { visible?: boolean } = {}) {
  const said: string[] = [];
  const say = tool({
    name: 'say',
    description: 'Post a message to the conversation. The only way anyone hears you.',
    inputSchema: z.object({ text: z.string() }),
    capabilityScopes: [],
    kind: 'edit',
    effect: 'unsafe',
    visible: options.visible ?? true,
    execute: ({ text }) => {
      said.push(text);
      return 'posted';
    },
  });
  return { say, said };
}

const nudgesIn = (request: RecordedRequest) =>
  request.view.messages.filter((m) => m.role === 'user' && /You were addressed/.test(m.text) && !m.text.includes('<acx-brief>'));

async function toolModeRig() {
  const { say, said } = sayTool();
  const r = rig(await openaiModel(server), { agent: { tools: [say], speech: { mode: 'tool', tool: 'say' } } });
  return { ...r, said };
}

describe('final-text mode (the default)', () => {
  it('the final text is the reply and nothing is logged as unspoken', async () => {
    server.enqueue('The answer is 42.');
    const { agent, logger } = rig(await openaiModel(server));
    const result = await agent.generate({ prompt: 'What is the answer?', addressed: true });
    expect(result.text).toBe('The answer is 42.');
    expect(result.unspoken).toBeUndefined();
    expect(linesOf(logger.lines, 'INFO', 'unspoken')).toEqual([]);
    expect(server.requests).toHaveLength(1);
  });
});

describe('tool mode (channel agents)', () => {
  it('an addressed turn with no visible action gets exactly one nudge naming the tool; narration stays unspoken', async () => {
    // The narration is long on purpose: the unspoken line is never truncated.
    const narration = `I am running version 0.67.0. ${'This is my private reasoning. '.repeat(100)}End of note.`;
    server.setFallback('I think I answered already.');
    server.enqueue('I am running 0.67.0.');
    server.enqueue(narration);
    const { agent, logger, said } = await toolModeRig();
    const result = await agent.generate({ prompt: '@agent which version are you running?', addressed: true });

    expect(result.text, 'nothing is spoken by final text in tool mode').toBe('');
    expect(result.unspoken).toBe(narration);
    expect(said).toEqual([]);
    expect(server.requests, 'one nudge, then the turn may end in silence').toHaveLength(2);
    expect(nudgesIn(server.requests[0]!)).toHaveLength(0);
    const nudges = nudgesIn(server.requests[1]!);
    expect(nudges).toHaveLength(1);
    expect(nudges[0]!.text).toMatch(/`say`/);
    expect(nudges[0]!.text).toMatch(/reaches no one/);

    const unspoken = linesOf(logger.lines, 'INFO', 'unspoken');
    expect(unspoken).toHaveLength(1);
    expect(unspoken[0]).toContain(`chars=${narration.length}`);
    expect(unspoken[0], 'the unspoken line carries the narration in full').toContain(narration);
    expect(linesOf(logger.lines, 'INFO', 'nudge')).toHaveLength(1);
  });

  it('an addressed turn that speaks through the tool gets no nudge', async () => {
    server.enqueue({ toolCalls: [{ name: 'say', input: { text: 'Version 0.67.0.' } }] }, 'Answered the version question.');
    const { agent, said } = await toolModeRig();
    const result = await agent.generate({ prompt: '@agent version?', addressed: true });
    expect(said).toEqual(['Version 0.67.0.']);
    expect(result.text).toBe('');
    expect(result.unspoken).toBe('Answered the version question.');
    expect(server.requests).toHaveLength(2);
    expect(server.requests.flatMap(nudgesIn)).toEqual([]);
  });

  it('a call to the speaking tool is speech even when the tool does not declare itself visible (an MCP tool cannot)', async () => {
    server.enqueue({ toolCalls: [{ name: 'say', input: { text: 'Version 0.67.0.' } }] }, 'Answered.');
    const { say, said } = sayTool({ visible: false });
    const { agent } = rig(await openaiModel(server), { agent: { tools: [say], speech: { mode: 'tool', tool: 'say' } } });
    await agent.generate({ prompt: '@agent version?', addressed: true });
    expect(said).toEqual(['Version 0.67.0.']);
    expect(server.requests, 'no nudge after speaking: it would invite a second post').toHaveLength(2);
    expect(server.requests.flatMap(nudgesIn)).toEqual([]);
  });

  it('a turn that was not addressed ends in silence with no nudge', async () => {
    server.enqueue('A closing line. Nothing needed from me.');
    const { agent, logger } = await toolModeRig();
    const result = await agent.generate({ prompt: 'thanks all, signing off', addressed: false });
    expect(result.text).toBe('');
    expect(result.unspoken).toBe('A closing line. Nothing needed from me.');
    expect(server.requests).toHaveLength(1);
    expect(linesOf(logger.lines, 'INFO', 'nudge')).toEqual([]);
    expect(linesOf(logger.lines, 'INFO', 'unspoken')[0]).toContain('text="A closing line. Nothing needed from me."');
  });

  it('the unspoken line stays one line and is scrubbed of credential shapes', async () => {
    const key = 'sk-proj-' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6';
    server.enqueue(`Line one.\nI saw the key ${key} in the file.\nLine three.`);
    const { agent, logger } = await toolModeRig();
    await agent.generate({ prompt: 'check the config' });
    const unspoken = linesOf(logger.lines, 'INFO', 'unspoken');
    expect(unspoken).toHaveLength(1);
    expect(unspoken[0]).toContain('Line one. I saw the key');
    expect(unspoken[0]).toContain('Line three.');
    expect(unspoken[0]).not.toContain(key);
  });

  it('the low-steps guidance names the speaking tool', async () => {
    server.enqueue('quiet');
    const { say } = sayTool();
    const { agent } = rig(await openaiModel(server), {
      harness: { maxSteps: 2 },
      agent: { tools: [say], speech: { mode: 'tool', tool: 'say' } },
    });
    await agent.generate({ prompt: 'hello' });
    expect(briefIn(server.requests[0]!)).toMatch(/calling the `say` tool/);
  });

  it('naming a speaking tool that is not registered is a configuration error', async () => {
    const { agent } = rig(await openaiModel(server), { agent: { speech: { mode: 'tool', tool: 'messages' } } });
    await expect(agent.createSession()).rejects.toThrow(/"messages", which is not registered/);
  });
});

describe('unspoken mode (no speaking tool: only tool calls act)', () => {
  it('the final text reaches no one, is logged as unspoken, and no nudge names a tool', async () => {
    server.enqueue('Filed the report; nothing to say.');
    const { agent, logger } = rig(await openaiModel(server), { agent: { speech: { mode: 'unspoken' } } });
    const result = await agent.generate({ prompt: '@agent file the report', addressed: true });
    expect(result.text).toBe('');
    expect(result.unspoken).toBe('Filed the report; nothing to say.');
    expect(server.requests).toHaveLength(1);
    expect(briefIn(server.requests[0]!)).toMatch(/Text you write reaches no one; only your tool calls act/);
    expect(linesOf(logger.lines, 'INFO', 'unspoken')).toHaveLength(1);
    expect(linesOf(logger.lines, 'INFO', 'nudge')).toEqual([]);
  });
});
