import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngineHarness } from '../../src/harness/engine-harness.ts';
import { HarnessAgent } from '../../src/harness/harness-agent.ts';
import { connectMcpServers, type McpConnection } from '../../src/mcp/client.ts';
import { resolveModel } from '../../src/model/providers.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { fixtureCommand } from './helpers.ts';
import { scaled } from '../support/time-scale.ts';

/**
 * An image an MCP tool returns reaches a vision model as an image input, and is described in
 * text to a model that reads text only — through the real engine and the real OpenAI wire.
 */
let server: ModelServer | undefined;
let mcp: McpConnection | undefined;
afterEach(async () => {
  await mcp?.close();
  await server?.close();
});

async function runScreenshotTurn(vision: boolean) {
  server = await startModelServer({
    script: [{ toolCalls: [{ name: 'fixture__screenshot', input: {} }] }, 'I see the page.'],
  });
  mcp = await connectMcpServers([
    { name: 'fixture', source: 'test', transport: 'stdio', env: {}, scopes: [], kind: 'read', effect: 'read-only', disabled: false, ...fixtureCommand('stdio-server.ts') } as never,
  ]);
  const model = await resolveModel({
    spec: 'openai:vision-test',
    env: { OPENAI_API_KEY: 'k', OPENAI_BASE_URL: server.openaiBaseURL },
    vision,
  });
  const logger = createMemoryLogger('info');
  const agent = new HarnessAgent({
    harness: createEngineHarness({ model, home: mkdtempSync(join(tmpdir(), 'acx-images-')), logger }),
    tools: mcp.tools,
    permissionMode: 'allow-all',
  });
  const result = await agent.generate({ prompt: 'Look at the page' });
  expect(result.text).toBe('I see the page.');
  return { body: JSON.stringify(server.requests[1]!.body), log: logger.lines.join('\n') };
}

describe('images from MCP tools', { timeout: scaled(60_000) }, () => {
  it('reach a vision model as image input', async () => {
    const { body, log } = await runScreenshotTurn(true);
    expect(body).toMatch(/"type":"input_image"/);
    expect(log).not.toMatch(/image described/);
    expect(body).toMatch(/data:image\/png;base64,/);
  });

  it('are described to a text-only model instead', async () => {
    const { body, log } = await runScreenshotTurn(false);
    expect(body).not.toMatch(/input_image/);
    expect(log, 'the swap is logged').toMatch(/INFO image described tool=fixture__screenshot media_type=image\/png reason="the model reads text only"/);
    expect(body).toMatch(/image image\/png, \d+ bytes: this model reads text only/);
    expect(body).toMatch(/here is the page/);
  });
});
