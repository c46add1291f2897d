// Item 2, the loop, through the real OpenAI Responses wire: the step budget and its live brief,
// the low-steps guidance, the reserve call with tools withheld, the fallback note, parallel calls.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { tool } from '../../src/tools/tool.ts';
import type { ModelServer } from '../support/model-server.ts';
import { anthropicModel, BRIEF, briefIn, echoTool, hasToolOutput, linesOf, openaiModel, rig, startModelServer, toolResultsIn } from './helpers.ts';
import { scaled } from '../support/time-scale.ts';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

/** A model that keeps calling `echo` unless tools are withheld (tool_choice none). */
const keepCalling = (report = 'Progress: I echoed until the budget ran out. Next: stop echoing.') => (request: { body: any }) =>
  request.body.tool_choice === 'none' ? report : { toolCalls: [{ name: 'echo', input: { text: 'again' } }] };

describe('the step budget', () => {
  it('defaults to 24 and shows "Current Time … / Step N of M" as the last message of every call', async () => {
    server.enqueue(
      { toolCalls: [{ name: 'echo', input: { text: '1' } }] },
      { toolCalls: [{ name: 'echo', input: { text: '2' } }] },
      'finished',
    );
    const { agent } = rig(await openaiModel(server), { agent: { tools: [echoTool()] } });
    const result = await agent.generate({ prompt: 'echo twice' });
    expect(result.text).toBe('finished');
    expect(result.stepCount).toBe(3);
    server.requests.forEach((request, index) => {
      const last = request.view.messages.at(-1)!;
      expect(last.role, `request ${index + 1}: the brief is the last message`).toBe('user');
      expect(last.text.startsWith(BRIEF), `request ${index + 1}: the brief is the last message`).toBe(true);
      expect(briefIn(request)).toMatch(new RegExp(`Current Time: \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC.* / Step ${index + 1} of 24`));
    });
  });

  it('escalates to strategic guidance on exactly the last 5 steps', async () => {
    server.setFallback(keepCalling());
    const { agent } = rig(await openaiModel(server), { harness: { maxSteps: 8 }, agent: { tools: [echoTool()] } });
    await agent.generate({ prompt: 'loop forever' });
    const stepped = server.requests.filter((r) => r.body.tool_choice !== 'none');
    expect(stepped).toHaveLength(8);
    const guided = stepped.map((r) => /Prioritise|Only \d+ step\(s\) remain/.test(briefIn(r)));
    expect(guided, 'guidance on steps 4..8 of 8, none before').toEqual([false, false, false, true, true, true, true, true]);
    expect(briefIn(stepped[7]!)).toMatch(/Step 8 of 8/);
    expect(briefIn(stepped[7]!)).toMatch(/final reply/);
  });

  it('when spent while the model still calls tools: one reserve call with tools withheld (tool_choice none on the wire)', async () => {
    server.setFallback(keepCalling());
    const echo = echoTool();
    const { agent, logger } = rig(await openaiModel(server), { harness: { maxSteps: 3 }, agent: { tools: [echo] } });
    const result = await agent.generate({ prompt: 'loop' });
    expect(server.requests).toHaveLength(4);
    expect(server.requests.slice(0, 3).map((r) => r.body.tool_choice)).toEqual(['auto', 'auto', 'auto']);
    expect(server.requests[3]!.body.tool_choice, 'the reserve call withholds tools').toBe('none');
    expect(briefIn(server.requests[3]!)).toMatch(/step budget of 3 steps .* spent/);
    expect(echo.seen).toHaveLength(3);
    expect(result.text).toBe('Progress: I echoed until the budget ran out. Next: stop echoing.');
    expect(result.finishReason).toBe('length');
    expect(linesOf(logger.lines, 'WARNING', 'step budget exhausted')).toHaveLength(1);
  });

  it('withholds tools on the chat and Anthropic wires too', async () => {
    server.setFallback((request) => {
      const none = request.body.tool_choice === 'none' || request.body.tool_choice?.type === 'none' || (request.wire === 'anthropic-messages' && !request.body.tools);
      return none ? 'report' : { toolCalls: [{ name: 'echo', input: { text: 'x' } }] };
    });
    for (const model of [await openaiModel(server, 'chat'), await anthropicModel(server)]) {
      const before = server.requests.length;
      const { agent } = rig(model, { harness: { maxSteps: 1 }, agent: { tools: [echoTool()] } });
      const result = await agent.generate({ prompt: 'loop' });
      expect(result.text).toBe('report');
      expect(server.requests.length - before).toBe(2);
    }
  });

  it('if even the reserve call fails, the turn ends with a plain fallback note (and a WARNING)', async () => {
    server.setFallback((request) =>
      request.body.tool_choice === 'none' ? { fail: { status: 400, message: 'reserve refused' } } : keepCalling()(request),
    );
    const { agent, logger } = rig(await openaiModel(server), { harness: { maxSteps: 2 }, agent: { tools: [echoTool()] } });
    const result = await agent.generate({ prompt: 'loop' });
    expect(result.text).toMatch(/step budget of 2 steps ran out before a final answer/);
    expect(result.finishReason).toBe('length');
    expect(linesOf(logger.lines, 'WARNING', 'reserve summary failed')).toHaveLength(1);
  });

  it('a configured budget is honoured and a non-positive one is refused', async () => {
    server.setFallback('ok');
    const { agent } = rig(await openaiModel(server), { harness: { maxSteps: 5 } });
    await agent.generate({ prompt: 'hi' });
    expect(briefIn(server.requests[0]!)).toMatch(/Step 1 of 5/);
    const bad = rig(await openaiModel(server), { harness: { maxSteps: 0 } });
    await expect(bad.agent.createSession()).rejects.toThrow(/step budget must be a positive whole number/);
  });
});

describe('parallel tool calls', () => {
  it('runs every call of a step concurrently and hands all results back in the next request', async () => {
    const events: string[] = [];
    let arrived = 0;
    let release!: () => void;
    const barrier = new Promise<void>((resolve) => {
      release = resolve;
    });
    // Fail-safe so a serial engine fails the assertion below instead of hanging the test.
    const failSafe = setTimeout(() => release(), scaled(5_000));
    const slow = tool({
      name: 'slow',
      description: 'A slow lookup',
      inputSchema: z.object({ id: z.string() }),
      capabilityScopes: [],
      kind: 'read',
      effect: 'read-only',
      execute: async ({ id }) => {
        events.push(`start ${id}`);
        if (++arrived === 3) release();
        await barrier;
        events.push(`end ${id}`);
        return `result ${id}`;
      },
    });
    server.enqueue(
      {
        toolCalls: [
          { name: 'slow', input: { id: 'a' } },
          { name: 'slow', input: { id: 'b' } },
          { name: 'slow', input: { id: 'c' } },
        ],
      },
      'all three done',
    );
    const { agent } = rig(await openaiModel(server), { agent: { tools: [slow] } });
    const result = await agent.generate({ prompt: 'look up a, b and c' });
    clearTimeout(failSafe);
    expect(result.text).toBe('all three done');
    expect(events.slice(0, 3).sort(), 'all three calls started before any finished').toEqual(['start a', 'start b', 'start c']);
    expect(server.requests).toHaveLength(2);
    expect(hasToolOutput(server.requests[0]!)).toBe(false);
    expect(toolResultsIn(server.requests[1]!).map((r) => r.output).sort()).toEqual(['result a', 'result b', 'result c']);
    expect(result.toolResults.map((r) => r.output).sort()).toEqual(['result a', 'result b', 'result c']);
  });
});

describe('calls the engine cannot run', () => {
  it('an unknown tool or invalid arguments become error results the model reads; the turn goes on', async () => {
    const echo = echoTool();
    server.enqueue(
      {
        toolCalls: [
          { name: 'nope', input: {} },
          { name: 'echo', input: { text: 42 } },
          { name: 'echo', input: { text: 'fine' } },
        ],
      },
      'recovered',
    );
    const { agent } = rig(await openaiModel(server), { agent: { tools: [echo] } });
    const result = await agent.generate({ prompt: 'try things' });
    expect(result.text).toBe('recovered');
    expect(echo.seen, 'only the valid call ran').toEqual(['fine']);
    const outputs = toolResultsIn(server.requests[1]!).map((r) => r.output);
    expect(outputs).toHaveLength(3);
    expect(outputs[0]).toMatch(/no tool named nope/i);
    expect(outputs[0]).toMatch(/echo/);
    expect(outputs[1]).toMatch(/text/);
    expect(outputs[2]).toBe('echo: fine');
  });
});
