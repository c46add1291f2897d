// `acx acp` thinking level (issue 26, item 13): where the session's model takes a reasoning effort,
// a `thought_level` config option offers it (default, low, medium, high); the choice is the model
// call's reasoning effort from the next turn on, kept for session/resume. A model acx knows no
// levels for gets no such option. Real `acx acp` child processes driven by the ACP SDK's client,
// the model answered by the local model server (OpenAI Responses wire).
import * as acp from '@agentclientprotocol/sdk';
import { expect, it } from 'vitest';
import type { AcxAcp } from '../../fixtures/acp-server/client.ts';
import { useAcpTestBed } from '../../fixtures/acp-server/test-bed.ts';

const bed = useAcpTestBed('acx-acp-thinking-');

async function start(args: string[], env: Record<string, string> = {}): Promise<AcxAcp> {
  const acx = bed.start({ args, env });
  await acx.initialize();
  return acx;
}

const prompt = (acx: AcxAcp, sessionId: string, text: string) =>
  acx.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });

const option = (options: readonly acp.SessionConfigOption[] | null | undefined, id: string) => options?.find((o) => o.id === id);

/** The reasoning effort the last model call asked for (OpenAI Responses: `reasoning.effort`). */
const lastEffort = () => (bed.model.requests.at(-1)!.body as { reasoning?: { effort?: string } }).reasoning?.effort;

it('offers a thinking level for a reasoning model and applies the choice to the next turn and after a resume', async () => {
  const acx = await start(['--model', 'openai:gpt-5.4-mini']);
  const session = await acx.agent.request(acp.methods.agent.session.new, { cwd: bed.home, mcpServers: [] });
  const effort = option(session.configOptions, 'effort');
  expect(effort).toMatchObject({ type: 'select', category: 'thought_level', name: 'Thinking', currentValue: 'default' });
  expect(effort?.type === 'select' ? effort.options.map((o) => ('value' in o ? o.value : '')) : []).toEqual(['default', 'low', 'medium', 'high']);

  bed.model.enqueue({ text: 'Hi.' }, { text: 'Thought hard.' });
  await prompt(acx, session.sessionId, 'Hello.');
  expect(lastEffort()).toBeUndefined(); // the provider's default

  const answer = await acx.agent.request(acp.methods.agent.session.setConfigOption, { sessionId: session.sessionId, configId: 'effort', value: 'high' });
  expect(option(answer.configOptions, 'effort')).toMatchObject({ currentValue: 'high' });
  await prompt(acx, session.sessionId, 'Think about it.');
  expect(lastEffort()).toBe('high');
  await acx.close();

  const next = await start(['--model', 'openai:gpt-5.4-mini']);
  const resumed = await next.agent.request(acp.methods.agent.session.resume, { sessionId: session.sessionId, cwd: bed.home });
  expect(option(resumed.configOptions, 'effort')).toMatchObject({ currentValue: 'high' });
  bed.model.enqueue({ text: 'Still thinking hard.' });
  await prompt(next, session.sessionId, 'Again.');
  expect(lastEffort()).toBe('high');
});

it('offers none for a model without known levels, refuses one set anyway, and shows it once the model has them', async () => {
  const acx = await start([], { ACX_MODELS: 'openai:gpt-5.4-mini' }); // ACX_MODEL=openai:test
  const { sessionId, configOptions } = await acx.agent.request(acp.methods.agent.session.new, { cwd: bed.home, mcpServers: [] });
  expect(configOptions?.map((o) => o.id)).toEqual(['mode', 'model']);
  await expect(acx.agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: 'effort', value: 'high' })).rejects.toMatchObject({
    code: -32602,
    message: expect.stringContaining('openai:test has no thinking levels'),
  });
  const switched = await acx.agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: 'model', value: 'openai:gpt-5.4-mini' });
  expect(switched.configOptions.map((o) => o.id)).toEqual(['mode', 'model', 'effort']);
  await expect(acx.agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: 'effort', value: 'enormous' })).rejects.toMatchObject({
    code: -32602,
    message: expect.stringContaining('default, low, medium or high'),
  });
  await acx.agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: 'effort', value: 'low' });
  bed.model.enqueue({ text: 'Quick.' });
  await prompt(acx, sessionId, 'Quickly.');
  expect(bed.model.requests.at(-1)!.view.model).toBe('gpt-5.4-mini');
  expect(lastEffort()).toBe('low');
});
