// `printf '<initialize>\n' | acx acp DIR`: stdin ends in the same read as initialize, so the
// connection closes before (or while) the agent is prepared in the background. The process must
// still exit, and no MCP drop-in server it started may outlive it. A real child process whose
// agent has an MCP drop-in that leaves its pid behind and does not end with its stdin.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { NOTES_KEEPER, startAcxAcp } from '../../fixtures/acp-server/client.ts';
import { processAlive } from '../../tools/helpers.ts';
import { scaled } from '../../support/time-scale.ts';

const LINGERING_MCP_SERVER = path.resolve(import.meta.dirname, '../../fixtures/mcp/lingering-server.ts');

let home: string;
let agentDir: string;
let pidFile: string;
beforeAll(() => {
  home = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'acx-acp-eof-')));
  agentDir = path.join(home, 'agent');
  fs.cpSync(NOTES_KEEPER, agentDir, { recursive: true });
  pidFile = path.join(home, 'mcp.pid');
  fs.mkdirSync(path.join(agentDir, 'mcp'), { recursive: true });
  const command = { command: '/bin/sh', args: ['-c', `echo $$ > '${pidFile}'; exec '${process.execPath}' '${LINGERING_MCP_SERVER}'`] };
  fs.writeFileSync(path.join(agentDir, 'mcp', 'pidserver.json'), JSON.stringify(command));
});
afterAll(() => {
  // A server leaked by a failing run would otherwise outlive the test.
  if (fs.existsSync(pidFile) && processAlive(mcpPid())) process.kill(mcpPid());
  fs.rmSync(home, { recursive: true, force: true });
});

const mcpPid = (): number => Number(fs.readFileSync(pidFile, 'utf8').trim());

it('exits with code 0 when stdin ends with initialize, leaving no MCP drop-in server running', { timeout: scaled(60_000) }, async () => {
  const acx = startAcxAcp({ home, agentDir, modelBaseURL: 'http://127.0.0.1:9/v1' });
  const exited = new Promise<number | null>((resolve) => acx.child.once('exit', (code) => resolve(code)));
  const initialize = { jsonrpc: '2.0', id: 1, method: acp.methods.agent.initialize, params: { protocolVersion: acp.PROTOCOL_VERSION } };
  acx.child.stdin!.end(`${JSON.stringify(initialize)}\n`);
  expect(await exited).toBe(0);
  expect(acx.stdout()).toContain('"id":1,"result"');
  // Preparation either never started (no pid file) or was closed with the process.
  if (fs.existsSync(pidFile)) expect(processAlive(mcpPid()), 'the MCP drop-in server outlived acx acp').toBe(false);
});
