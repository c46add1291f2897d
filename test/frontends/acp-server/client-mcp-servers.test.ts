// `acx acp` and the MCP servers an editor hands over in session/new (issue 26, item 12): one acx
// cannot use (an SSE server that does not answer, a stdio command that does not start) is told to the user
// in the session — a `notice` where the client advertised `session.notices`, else an agent
// message — not only on stderr; the session still opens with every other tool. Real `acx acp`
// child processes driven by the ACP SDK's client.
import net from 'node:net';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { expect, it } from 'vitest';
import { replyText, updatesOf } from '../../fixtures/acp-server/client.ts';
import { useAcpTestBed } from '../../fixtures/acp-server/test-bed.ts';

const STDIO_SERVER = path.resolve(import.meta.dirname, '../../fixtures/mcp/stdio-server.ts');
const bed = useAcpTestBed('acx-acp-client-mcp-');

/** A session with one working stdio server, one SSE server nothing listens for and one command that does not exist. */
async function openWith(clientCapabilities: acp.ClientCapabilities) {
  const closed = await closedPort();
  const acx = bed.start();
  await acx.initialize(clientCapabilities);
  const missing = path.join(bed.home, 'no-such-mcp-server');
  const { sessionId } = await acx.agent.request(acp.methods.agent.session.new, {
    cwd: bed.home,
    mcpServers: [
      { name: 'notes tools', command: process.execPath, args: [STDIO_SERVER], env: [] },
      { type: 'sse', name: 'legacy events', url: `http://127.0.0.1:${closed}/sse`, headers: [] },
      { name: 'broken', command: missing, args: [], env: [] },
    ],
  });
  return { acx, sessionId, missing };
}

/** A loopback port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const NO_CAPABILITIES: acp.ClientCapabilities = { fs: { readTextFile: false, writeTextFile: false }, terminal: false };

it('tells the user in an agent message which client MCP servers are not used, and why', async () => {
  const { acx: client, sessionId, missing } = await openWith(NO_CAPABILITIES);
  const told = await client.waitForUpdate((n) => n.sessionId === sessionId && n.update.sessionUpdate === 'agent_message_chunk');
  const text = replyText([told.update]);
  expect(text).toMatch(/^2 MCP servers from the editor are not available in this session:\n/);
  expect(text).toMatch(/- "legacy events": failed to start or initialize: SSE error: .*ECONNREFUSED/);
  expect(text).toMatch(/- "broken": .+/);
  expect(text).toContain(missing);
  expect(text).not.toContain('notes tools');
  // After the response that names the session (an editor drops updates for a session it does not know yet).
  const lines = client.stdout().split('\n');
  const answered = lines.findIndex((l) => l.includes(`"sessionId":"${sessionId}"`) && l.includes('"result"'));
  expect(lines.findIndex((l) => l.includes('not available in this session'))).toBeGreaterThan(answered);

  // The session works with the server that did start.
  const first = bed.model.requests.length;
  bed.model.enqueue({ text: 'Ready.' });
  expect((await client.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'Hi.' }] })).stopReason).toBe('end_turn');
  expect(bed.model.requests[first]!.view.tools).toContain('notes_tools__echo');
  expect(updatesOf(client, sessionId).filter((u) => u.sessionUpdate === 'notice')).toEqual([]);
});

it('sends one warning notice per server to a client that shows notices', async () => {
  const { acx: client, sessionId, missing } = await openWith({ ...NO_CAPABILITIES, session: { notices: {} } });
  // The last notice, or the agent message a client without notices gets (which must not come).
  await client.waitForUpdate(
    (n) => n.sessionId === sessionId && ((n.update.sessionUpdate === 'notice' && n.update.title.includes('broken')) || n.update.sessionUpdate === 'agent_message_chunk'),
  );
  const notices = updatesOf(client, sessionId).flatMap((u) => (u.sessionUpdate === 'notice' ? [u] : []));
  expect(notices.map(({ severity, title }) => ({ severity, title }))).toEqual([
    { severity: 'warning', title: 'MCP server "legacy events" is not available in this session' },
    { severity: 'warning', title: 'MCP server "broken" is not available in this session' },
  ]);
  expect(notices[0]!.description).toMatch(/^failed to start or initialize: SSE error: .*ECONNREFUSED/);
  expect(notices[1]!.description).toContain(missing);
  expect(updatesOf(client, sessionId).some((u) => u.sessionUpdate === 'agent_message_chunk')).toBe(false);
});
