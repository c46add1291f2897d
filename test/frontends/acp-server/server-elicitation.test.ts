// `acx acp` and the MCP servers an editor hands over: the legacy SSE transport is taken (and
// advertised), and an MCP server's question during a tool call (elicitation) goes to the editor:
// as ACP's elicitation/create when it advertises forms, as a permission request when the
// question has no fields, and declined (with a log line saying why) when it cannot show a form.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AcxAcp, optionOfKind, replyText, startAcxAcp, updatesOf } from '../../fixtures/acp-server/client.ts';
import { startSseFixture } from '../../fixtures/mcp/sse-server.ts';
import { startModelServer, type ModelServer } from '../../support/model-server.ts';

const ELICIT_SERVER: acp.McpServer = { name: 'accounts', command: process.execPath, args: [path.resolve('test/fixtures/mcp/elicit-server.ts')], env: [] };

let model: ModelServer;
let sse: Awaited<ReturnType<typeof startSseFixture>>;
const running: Array<{ acx: AcxAcp; home: string }> = [];

beforeAll(async () => {
  model = await startModelServer();
  sse = await startSseFixture();
});

afterAll(async () => {
  for (const { acx, home } of running) {
    expect(await acx.close()).toBe(0);
    fs.rmSync(home, { recursive: true, force: true });
  }
  await sse.close();
  await model.close();
});

async function editor(capabilities: acp.ClientCapabilities) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'acx-acp-elicit-'));
  const acx = startAcxAcp({ home, modelBaseURL: model.openaiBaseURL });
  running.push({ acx, home });
  const init = await acx.initialize(capabilities);
  acx.onPermission = async (params) => optionOfKind(params, 'allow_once');
  const { sessionId } = await acx.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [ELICIT_SERVER, { type: 'sse', name: 'legacy', url: sse.url, headers: [] }] });
  const prompt = (text: string) => acx.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });
  return { acx, init, sessionId, prompt };
}

describe("acx acp: the editor's MCP servers", () => {
  it('advertises and takes the legacy SSE transport; a form elicitation reaches the editor tied to the session and the tool call', async () => {
    const { acx, init, sessionId, prompt } = await editor({ fs: { readTextFile: false, writeTextFile: false }, terminal: false, elicitation: { form: {} } });
    expect(init.agentCapabilities?.mcpCapabilities).toEqual({ http: true, sse: true });
    acx.onElicitation = async () => ({ action: 'accept', content: { name: 'Lin' } });
    model.enqueue({ toolCalls: [{ id: 'call_old', name: 'legacy__echo', input: { text: 'over sse' } }] }, { toolCalls: [{ id: 'call_sign', name: 'accounts__sign_up', input: {} }] }, { text: 'Done.' });
    expect((await prompt('Echo, then sign me up.')).stopReason).toBe('end_turn');
    expect(acx.elicitations).toEqual([
      {
        sessionId,
        toolCallId: 'call_sign',
        mode: 'form',
        message: 'accounts: Which name and plan should the account have?',
        requestedSchema: expect.objectContaining({ type: 'object', required: ['name'] }),
      },
    ]);
    const updates = JSON.stringify(updatesOf(acx, sessionId));
    expect(updates).toContain('echo: over sse');
    expect(updates).toContain('signed up {\\"name\\":\\"Lin\\",\\"plan\\":\\"free\\",\\"subscribe\\":false}');
    expect(replyText(updatesOf(acx, sessionId))).toBe('Done.');
  });

  it('an editor without form elicitation gets a yes/no question as a permission request; a form is declined, saying why', async () => {
    const { acx, sessionId, prompt } = await editor({ fs: { readTextFile: false, writeTextFile: false }, terminal: false });
    model.enqueue({ toolCalls: [{ id: 'call_yes', name: 'accounts__confirm', input: {} }] }, { toolCalls: [{ id: 'call_form', name: 'accounts__sign_up', input: {} }] }, { text: 'Both asked.' });
    expect((await prompt('Confirm, then sign me up.')).stopReason).toBe('end_turn');
    expect(acx.elicitations).toEqual([]);
    const asked = acx.permissions.find((p) => p.toolCall.toolCallId === 'call_yes' && p.toolCall.title?.startsWith('accounts asks'));
    expect(asked?.toolCall.title).toBe('accounts asks: Really archive everything?');
    const updates = JSON.stringify(updatesOf(acx, sessionId));
    expect(updates).toContain('confirm: accept');
    expect(updates).toContain('not signed up: the user chose decline');
    expect(acx.stderr()).toContain(`WARNING mcp elicitation declined session=${sessionId} server=accounts tool=accounts__sign_up reason="the editor does not answer forms (it advertised no form elicitation)"`);
  });
});
