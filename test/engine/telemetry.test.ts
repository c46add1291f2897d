import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SpanStatusCode } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { byName, parentOf, tracing } from '../support/tracing.ts';
import { z } from 'zod';
import { createEngineHarness } from '../../src/harness/engine-harness.ts';
import { HarnessAgent } from '../../src/harness/harness-agent.ts';
import { fromLanguageModel } from '../../src/model/providers.ts';
import { tool } from '../../src/tools/tool.ts';
import { scriptedModel } from '../support/scripted-model.ts';

const home = () => mkdtempSync(join(tmpdir(), 'acx-otel-'));

const lookup = tool({
  name: 'lookup',
  description: 'Looks a word up',
  inputSchema: z.object({ word: z.string() }),
  capabilityScopes: [],
  kind: 'read',
  effect: 'read-only',
  execute: ({ word }: { word: string }) => {
    if (word === 'missing') throw new Error('no such word');
    return `definition of ${word}`;
  },
});

describe('OpenTelemetry spans', () => {
  it('traces a turn, its steps, each model call and each tool run, nested, with AI SDK names and attributes', async () => {
    const { tracer, spans } = tracing();
    const model = scriptedModel([{ toolCalls: [{ name: 'lookup', input: { word: 'acx' } }] }, { text: 'acx is a harness' }]);
    const harness = createEngineHarness({ model: fromLanguageModel(model), home: home(), telemetry: { tracer, functionId: 'docs-bot', metadata: { tenant: 'a' } } });
    const agent = new HarnessAgent({ harness, tools: [lookup] });
    const session = await agent.createSession({ sessionId: 's1' });
    const result = await agent.generate({ session, prompt: 'what is acx?' });

    const all = spans();
    const [turn] = byName(all, 'ai.generateText');
    expect(byName(all, 'ai.generateText')).toHaveLength(1);
    expect(turn!.attributes).toMatchObject({
      'ai.operationId': 'ai.generateText',
      'operation.name': 'ai.generateText docs-bot',
      'ai.telemetry.functionId': 'docs-bot',
      'ai.telemetry.metadata.tenant': 'a',
      'acx.session.id': 's1',
      'acx.turn.id': result.turnId,
      'ai.response.text': 'acx is a harness',
      'ai.response.finishReason': 'stop',
    });
    expect(String(turn!.attributes['ai.prompt'])).toContain('what is acx?');

    const steps = byName(all, 'acx.step');
    expect(steps.map((step) => step.attributes['acx.step.number'])).toEqual([1, 2]);
    for (const step of steps) expect(parentOf(step)).toBe(turn!.spanContext().spanId);

    const calls = byName(all, 'ai.generateText.doGenerate');
    expect(calls).toHaveLength(2);
    expect(calls.map((call) => parentOf(call))).toEqual(steps.map((step) => step.spanContext().spanId));
    expect(calls[0]!.attributes['ai.response.finishReason']).toBe('tool-calls');
    expect(calls[1]!.attributes['ai.response.text']).toBe('acx is a harness');

    const [run] = byName(all, 'ai.toolCall');
    expect(run!.attributes).toMatchObject({ 'ai.toolCall.name': 'lookup', 'ai.toolCall.args': '{"word":"acx"}', 'ai.toolCall.result': '"definition of acx"' });
    expect(parentOf(run!)).toBe(steps[0]!.spanContext().spanId);
    // Every span belongs to the turn's trace.
    expect(new Set(all.map((span) => span.spanContext().traceId)).size).toBe(1);
  });

  it('names a streamed turn ai.streamText and its model calls doStream', async () => {
    const { tracer, spans } = tracing();
    const model = scriptedModel([{ text: 'streamed' }]);
    const agent = new HarnessAgent({ harness: createEngineHarness({ model: fromLanguageModel(model), home: home(), telemetry: { tracer } }) });
    const stream = agent.stream({ prompt: 'hi' });
    expect(await stream.text).toBe('streamed');
    expect(spans().map((span) => span.name).sort()).toEqual(['acx.step', 'ai.streamText', 'ai.streamText.doStream']);
  });

  it('marks a failed tool run as an error and records no inputs or outputs when told not to', async () => {
    const { tracer, spans } = tracing();
    const model = scriptedModel([{ toolCalls: [{ name: 'lookup', input: { word: 'missing' } }] }, { text: 'not found' }]);
    const harness = createEngineHarness({ model: fromLanguageModel(model), home: home(), telemetry: { tracer, recordInputs: false, recordOutputs: false } });
    await new HarnessAgent({ harness, tools: [lookup] }).generate({ prompt: 'look up missing' });
    const all = spans();
    const [run] = byName(all, 'ai.toolCall');
    expect(run!.status.code).toBe(SpanStatusCode.ERROR);
    expect(run!.status.message).toMatch(/no such word/);
    for (const span of all) {
      for (const key of ['ai.prompt', 'ai.response.text', 'ai.toolCall.args', 'ai.toolCall.result', 'ai.response.toolCalls']) expect(span.attributes).not.toHaveProperty(key);
    }
  });

  it('ends the turn span as an error when the model call fails', async () => {
    const { tracer, spans } = tracing();
    const model = scriptedModel(() => {
      throw new Error('model exploded');
    });
    const harness = createEngineHarness({ model: fromLanguageModel(model), home: home(), retries: 0, telemetry: { tracer } });
    await expect(new HarnessAgent({ harness }).generate({ prompt: 'hi' })).rejects.toThrow();
    const all = spans();
    for (const name of ['ai.generateText', 'acx.step', 'ai.generateText.doGenerate']) {
      const [span] = byName(all, name);
      expect(span, name).toBeDefined();
      expect(span!.status.code, name).toBe(SpanStatusCode.ERROR);
    }
  });
});
