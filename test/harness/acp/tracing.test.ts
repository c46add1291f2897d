import { describe, expect, it } from 'vitest';
import { byName, parentOf, tracing } from '../../support/tracing.ts';
import { createACP } from '../../../src/harness/acp/create.ts';
import { HarnessAgent } from '../../../src/harness/harness-agent.ts';
import { collect, echo, fakeProfile, tempCache } from './fake-profile.ts';

/**
 * An ACP turn traced as the engine traces one (test/engine/telemetry.test.ts), with the AI SDK's
 * span names: the turn, each step the translator infers, and each host tool acx runs for the
 * agent, nested, in one trace. The agent's model calls happen inside the agent: no span for them.
 */
const cache = tempCache();

describe('OpenTelemetry spans on an ACP turn (fake agent)', () => {
  it('traces the turn, its steps and the host tool run, nested, with AI SDK names and attributes', { timeout: 60_000 }, async () => {
    const { tracer, spans } = tracing();
    const harness = createACP(fakeProfile(cache, { telemetry: { tracer, functionId: 'acp-bot', metadata: { tenant: 'a' } }, model: 'fake-large' }));
    const agent = new HarnessAgent({ harness, tools: [echo], permissionMode: 'allow-all' });
    const session = await agent.createSession({ sessionId: 'traced' });
    const stream = agent.stream({ session, prompt: '[[mcp:echo {"text":"hi"}]]' });
    await collect(stream.harnessStream);
    const result = await stream.result;
    await session.destroy();

    const all = spans();
    const turns = byName(all, 'ai.streamText');
    expect(turns).toHaveLength(1);
    const turn = turns[0]!;
    expect(turn.attributes).toMatchObject({
      'ai.operationId': 'ai.streamText',
      'operation.name': 'ai.streamText acp-bot',
      'ai.model.provider': 'acp.fake-acp',
      'ai.model.id': 'fake-large',
      'ai.telemetry.functionId': 'acp-bot',
      'ai.telemetry.metadata.tenant': 'a',
      'acx.session.id': 'traced',
      'acx.turn.id': result.turnId,
      'ai.response.text': 'tools=echo result=echo:hi isError=false',
      'ai.response.finishReason': 'stop',
    });
    expect(String(turn.attributes['ai.prompt'])).toContain('[[mcp:echo');

    const steps = byName(all, 'acx.step');
    expect(steps.map((step) => step.attributes['acx.step.number'])).toEqual([1, 2]);
    for (const step of steps) expect(parentOf(step)).toBe(turn.spanContext().spanId);

    const runs = byName(all, 'ai.toolCall');
    expect(runs).toHaveLength(1);
    expect(runs[0]!.attributes).toMatchObject({ 'ai.toolCall.name': 'echo', 'ai.toolCall.args': '{"text":"hi"}', 'ai.toolCall.result': '"echo:hi"' });
    expect(parentOf(runs[0]!)).toBe(steps[0]!.spanContext().spanId);
    expect(byName(all, 'ai.streamText.doStream')).toEqual([]);
    expect(new Set(all.map((span) => span.spanContext().traceId)).size).toBe(1);
    await harness.close?.();
  });

  it('names a generate() turn ai.generateText', { timeout: 60_000 }, async () => {
    const { tracer, spans } = tracing();
    const traced = createACP(fakeProfile(cache, { telemetry: { tracer } }));
    const agent = new HarnessAgent({ harness: traced });
    const session = await agent.createSession();
    const result = await agent.generate({ session, prompt: '[[hello]]' });
    await session.destroy();
    await traced.close?.();
    expect(byName(spans(), 'ai.generateText').map((span) => span.attributes['acx.turn.id'])).toEqual([result.turnId]);
  });
});
