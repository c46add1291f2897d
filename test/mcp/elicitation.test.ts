import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ElicitationRequest, ElicitationResult } from '../../src/core/elicitation.ts';
import { createEngineHarness } from '../../src/harness/engine-harness.ts';
import { HarnessAgent } from '../../src/harness/harness-agent.ts';
import { connectMcpServers, type McpConnection } from '../../src/mcp/client.ts';
import { parseMcpServerEntry } from '../../src/mcp/config.ts';
import { fromLanguageModel } from '../../src/model/providers.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { scriptedModel } from '../support/scripted-model.ts';
import { byName, context, fixtureCommand } from './helpers.ts';

/**
 * An MCP server's elicitation/create, round trip: it reaches the library's onElicitation (per
 * call, else the agent's), with the server, the tool call and the form; the answer goes back to
 * the server. With nobody to answer it is declined, and the decline is logged with the reason.
 */
let connection: McpConnection | undefined;
afterEach(async () => {
  await connection?.close();
  connection = undefined;
});

async function connect(logger = createMemoryLogger('debug')) {
  connection = await connectMcpServers([parseMcpServerEntry('accounts', fixtureCommand('elicit-server.ts'), 'test:accounts', process.cwd())], { logger, timeoutMs: 10_000 });
  expect(connection.servers[0]!.status).toBe('ok');
  return { tools: connection.tools, logger };
}

function agentCalling(tools: McpConnection['tools'], options: { onElicitation?: (request: ElicitationRequest) => Promise<ElicitationResult> } = {}) {
  const model = scriptedModel([{ toolCalls: [{ id: 'call-7', name: 'accounts__sign_up', input: {} }] }, { text: 'done' }]);
  const harness = createEngineHarness({ model: fromLanguageModel(model), home: mkdtempSync(join(tmpdir(), 'acx-elicit-')) });
  return new HarnessAgent({ harness, tools, permissionMode: 'allow-all', ...options });
}

describe('MCP elicitation through the library', () => {
  it('reaches onElicitation with the server, the call and the form; the answer goes back, defaults filled in', async () => {
    const { tools } = await connect();
    const asked: ElicitationRequest[] = [];
    const agent = agentCalling(tools);
    const result = await agent.generate({
      prompt: 'sign me up',
      onElicitation: async (request) => {
        asked.push(request);
        return { action: 'accept', content: { name: 'Ada' } };
      },
    });
    expect(asked).toEqual([
      {
        server: 'accounts',
        toolCallId: 'call-7',
        toolName: 'accounts__sign_up',
        message: 'Which name and plan should the account have?',
        requestedSchema: expect.objectContaining({ required: ['name'], properties: expect.objectContaining({ plan: expect.objectContaining({ enum: ['free', 'team', 'enterprise'] }) }) }),
      },
    ]);
    // The server got the answer, with the defaults of the fields the user left out.
    expect(result.steps[0]!.toolResults.map((r) => r.output)).toEqual(['signed up {"name":"Ada","plan":"free","subscribe":false}']);
  });

  it("the agent's onElicitation answers when the call names none; the call's own wins, and its decline reaches the server", async () => {
    const { tools } = await connect();
    const agent = agentCalling(tools, { onElicitation: async () => ({ action: 'accept', content: { name: 'Bo', subscribe: true } }) });
    const byAgent = await agent.generate({ prompt: 'sign me up' });
    expect(byAgent.steps[0]!.toolResults.map((r) => r.output)).toEqual(['signed up {"name":"Bo","subscribe":true,"plan":"free"}']);
    const byCall = await agentCalling(tools, { onElicitation: async () => ({ action: 'accept', content: { name: 'Bo' } }) }).generate({
      prompt: 'sign me up',
      onElicitation: async () => ({ action: 'decline', reason: 'not now' }),
    });
    expect(byCall.steps[0]!.toolResults.map((r) => r.output)).toEqual(['not signed up: the user chose decline']);
  });

  it('with nobody to answer, the server is declined and a WARNING says who asked and why', async () => {
    const { tools, logger } = await connect();
    const result = await agentCalling(tools).generate({ prompt: 'sign me up' });
    expect(result.steps[0]!.toolResults.map((r) => r.output)).toEqual(['not signed up: the user chose decline']);
    expect(logger.lines.filter((line) => line.startsWith('WARNING mcp elicitation declined'))).toEqual([
      'WARNING mcp elicitation declined server=accounts tool=accounts__sign_up reason="nobody can answer in this run (no user is attached: a wake, a worker job, or acx run)"',
    ]);
  });

  it('a question asked outside any call is declined, saying so', async () => {
    const { tools, logger } = await connect();
    await byName(tools, 'accounts__nag').execute!({}, context({ elicit: async () => ({ action: 'accept', content: {} }) }));
    for (let i = 0; i < 400 && !logger.lines.some((line) => line.includes('mcp elicitation declined')); i++) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(logger.lines.filter((line) => line.startsWith('WARNING mcp elicitation declined'))).toEqual([
      'WARNING mcp elicitation declined server=accounts reason="it asked outside any of its tool calls, so no user is waiting on it"',
    ]);
  });

  it("the call's time limit stands still while the user answers", async () => {
    connection = await connectMcpServers([parseMcpServerEntry('accounts', fixtureCommand('elicit-server.ts'), 'test:accounts', process.cwd())], { timeoutMs: 10_000, callTimeoutMs: 5_000 });
    // The call's clock is a timer in this process: faked, so the user can take "a minute" at once.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    try {
      const elicit = async (): Promise<ElicitationResult> => {
        vi.advanceTimersByTime(60_000);
        return { action: 'accept', content: { name: 'Grace', plan: 'team' } };
      };
      expect(await byName(connection.tools, 'accounts__sign_up').execute!({}, context({ elicit }))).toBe('signed up {"name":"Grace","plan":"team","subscribe":false}');
    } finally {
      vi.useRealTimers();
    }
  });
});
