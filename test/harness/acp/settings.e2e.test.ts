// The createACP settings the seed lists, each end to end: createACP → HarnessAgent → a real fake
// ACP agent process (test/fixtures/acp/fake-agent.ts), which reports what it was given (its
// launch environment, session/new and session/prompt params, authenticate calls). settings.test.ts
// checks their validation; this checks that each one reaches the agent as the seed describes.
import net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { HarnessAgent } from '../../../src/harness/harness-agent.ts';
import { createACP } from '../../../src/harness/acp/create.ts';
import { createLocalSandbox } from '../../../src/harness/acp/sandbox.ts';
import type { ACPSettings } from '../../../src/harness/acp/settings.ts';
import { HarnessCapabilityUnsupportedError } from '../../../src/core/errors.ts';
import { collect, echo, fakeProfile, tempCache } from './fake-profile.ts';

const cache = tempCache();
const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of closers) await c().catch(() => {});
});

function agentFor(overrides: Partial<ACPSettings> = {}, agentSettings: Partial<ConstructorParameters<typeof HarnessAgent>[0]> = {}) {
  const harness = createACP(fakeProfile(cache, overrides));
  closers.push(() => harness.close!());
  return new HarnessAgent({ harness, ...agentSettings });
}

/** One turn's reply parsed as the JSON the fake agent's `state` / `env` commands print. */
async function ask(agent: HarnessAgent, command: string): Promise<Record<string, any>> {
  const session = await agent.createSession();
  try {
    return JSON.parse((await agent.generate({ session, prompt: `[[${command}]]` })).text);
  } finally {
    await session.destroy();
  }
}

/** A loopback port nothing listens on right now. */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('createACP settings reach the agent end to end', () => {
  it("launch-env-json: the instructions are written into the named JSON variable, merged with what the profile set", async () => {
    const agent = agentFor(
      { env: { CODEX_CONFIG: JSON.stringify({ model: 'kept' }) }, instructionMapping: { type: 'launch-env-json', variable: 'CODEX_CONFIG', path: ['developer_instructions'] } },
      { instructions: 'Answer in haiku.' },
    );
    const { env } = await ask(agent, 'env');
    expect(JSON.parse(env.CODEX_CONFIG)).toEqual({ model: 'kept', developer_instructions: 'Answer in haiku.' });
    // Mapped, so not prepended to the prompt as well.
    const state = await ask(agent, 'state');
    expect(JSON.stringify(state.prompts)).not.toContain('haiku');
  });

  it('session-model modelMapping: the model goes out as session/set_model with the mapping path', async () => {
    const state = await ask(agentFor({ model: 'fake-large', modelMapping: { type: 'session-model', path: 'modelId' } }), 'state');
    expect(state.model).toBe('fake-large');
  });

  it('outputSchemaMapping: the output JSON Schema is written below session/prompt _meta at the mapped path', async () => {
    const output = { type: 'object', properties: { promptMeta: { type: 'array' } }, required: ['promptMeta'] } as const;
    const agent = agentFor({ outputSchemaMapping: { type: 'session-prompt-meta', path: ['acx', 'outputSchema'] } }, { output });
    const session = await agent.createSession();
    const result = await agent.generate({ session, prompt: '[[state]]' });
    const state = JSON.parse(result.text);
    expect(state.promptMeta[0].acx.outputSchema).toMatchObject({ type: 'object', required: ['promptMeta'] });
    expect(result.output).toMatchObject({ promptMeta: expect.any(Array) });
    await session.destroy();
  });

  it('askUserQuestions with answer: the agent\'s request is answered by the profile\'s callback', async () => {
    const seen: unknown[] = [];
    const agent = agentFor({ askUserQuestions: { method: '_fake/ask_user', answer: async (params) => (seen.push(params), { answers: ['red'] }) } });
    const session = await agent.createSession();
    expect((await agent.generate({ session, prompt: '[[ask:Which colour?]]' })).text).toBe('answer={"answers":["red"]}');
    expect(seen).toEqual([expect.objectContaining({ questions: [{ question: 'Which colour?' }] })]);
    await session.destroy();
  });

  it('askUserQuestions without answer: the question is an askUserQuestions stream part, the turn pauses, continueGenerate answers it', async () => {
    const agent = agentFor({ askUserQuestions: { method: '_fake/ask_user' } });
    const session = await agent.createSession();
    const first = agent.stream({ session, prompt: '[[ask:Which colour?]]' });
    const parts = await collect(first.harnessStream);
    const paused = await first.result;
    expect(paused.finishReason).toBe('tool-calls');
    const call = paused.pendingToolCalls[0]!;
    expect(call).toMatchObject({ toolName: 'askUserQuestions', input: expect.objectContaining({ questions: [{ question: 'Which colour?' }] }) });
    expect(parts.find((p) => p.type === 'tool-call' && p.toolCallId === call.toolCallId)).toMatchObject({ toolName: 'askUserQuestions' });

    const done = await agent.continueGenerate({ session, toolResults: [{ toolCallId: call.toolCallId, output: { answers: ['blue'] } }] });
    expect(done.turnId).toBe(paused.turnId);
    expect(done.text).toBe('answer={"answers":["blue"]}'); // the supplied result is the ACP response
    expect(await session.hasUnfinishedTurn()).toBe(false);
    await session.destroy();
  });

  it('credentialForwarding: each credential the agent gets passes through the callback, with its variable name', async () => {
    const calls: string[] = [];
    const agent = agentFor({
      credentialEnv: ['FAKE_API_KEY'],
      hostEnv: { FAKE_API_KEY: 'sk-real-value' },
      credentialForwarding: async (value, name) => {
        calls.push(`${name}=${value}`);
        return `wrapped:${value.length}`;
      },
    });
    const { env } = await ask(agent, 'env');
    expect(env.FAKE_API_KEY).toBe('wrapped:13');
    expect(calls).toEqual(['FAKE_API_KEY=sk-real-value']);
  });

  it('mcpServers: the profile\'s servers are passed through to session/new after acx\'s own', async () => {
    const agent = agentFor(
      {
        mcpServers: {
          docs: { command: 'docs-mcp', args: ['--stdio'], env: { DOCS_ROOT: '/srv/docs' } },
          search: { type: 'http', url: 'http://127.0.0.1:9/mcp', headers: { 'x-team': 'acx' } },
        },
      },
      { tools: [echo] },
    );
    const { mcpServers } = await ask(agent, 'state');
    expect(mcpServers.map((s: { name: string }) => s.name)).toEqual(['acx', 'docs', 'search']);
    expect(mcpServers[1]).toEqual({ name: 'docs', command: 'docs-mcp', args: ['--stdio'], env: [{ name: 'DOCS_ROOT', value: '/srv/docs' }] });
    expect(mcpServers[2]).toEqual({ type: 'http', name: 'search', url: 'http://127.0.0.1:9/mcp', headers: [{ name: 'x-team', value: 'acx' }] });
  });

  it('port: the host-tool bridge listens on the chosen exposed port, and the agent reaches it there', async () => {
    const [first, chosen] = [await freePort(), await freePort()];
    const agent = agentFor({ port: chosen, hostToolMcpTransport: 'http', sandbox: createLocalSandbox({ ports: [first, chosen] }) }, { tools: [echo] });
    const { mcpServers } = await ask(agent, 'state');
    expect(new URL(mcpServers[0].url).port).toBe(String(chosen));
    const session = await agent.createSession();
    expect((await agent.generate({ session, prompt: '[[mcp:echo {"text":"hi"}]]' })).text).toBe('tools=echo result=echo:hi isError=false');
    await session.destroy();
  });

  it('startupTimeoutMs: an agent that does not answer initialize in time fails with acp-startup-timeout', async () => {
    const agent = agentFor({ startupTimeoutMs: 300, env: { FAKE_SLOW_INIT_MS: '20000' } });
    await expect(agent.createSession()).rejects.toMatchObject({ code: 'acp-startup-timeout', message: expect.stringMatching(/did not answer initialize within 300 ms/) });
  });

  it('authentication.methodId: authenticate is called with the method (and meta) after initialize; an unadvertised one is refused', async () => {
    const state = await ask(agentFor({ authentication: { methodId: 'api-key', meta: { source: 'acx' } } }), 'state');
    expect(state.authenticated).toEqual([{ methodId: 'api-key', _meta: { source: 'acx' } }]);
    expect((await ask(agentFor(), 'state')).authenticated).toEqual([]);
    await expect(agentFor({ authentication: { methodId: 'oauth' } }).createSession()).rejects.toBeInstanceOf(HarnessCapabilityUnsupportedError);
  });
});
