// `acx acp` starts each of the agent's MCP drop-in servers once: the prepared agent owns its MCP
// connections, and nothing else in the server may start them again (a second copy of a server
// is a second set of side effects and a second process to clean up).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { NOTES_KEEPER, startAcxAcp } from '../../fixtures/acp-server/client.ts';
import { scaled } from '../../support/time-scale.ts';

const STDIO_SERVER = path.resolve(import.meta.dirname, '../../fixtures/mcp/stdio-server.ts');

let home: string;
let agentDir: string;
let pidFile: string;

beforeAll(() => {
  home = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'acx-acp-mcp-')));
  agentDir = path.join(home, 'agent');
  fs.cpSync(NOTES_KEEPER, agentDir, { recursive: true });
  pidFile = path.join(home, 'started.pids');
  fs.mkdirSync(path.join(agentDir, 'mcp'), { recursive: true });
  // Each start of the server appends its pid: the file's line count is how often it was started.
  const command = { command: '/bin/sh', args: ['-c', `echo $$ >> '${pidFile}'; exec '${process.execPath}' '${STDIO_SERVER}'`] };
  fs.writeFileSync(path.join(agentDir, 'mcp', 'echo.json'), JSON.stringify(command));
});

afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

it('starts each MCP drop-in server of the agent once', { timeout: scaled(60_000) }, async () => {
  const acx = startAcxAcp({ home, agentDir, modelBaseURL: 'http://127.0.0.1:9/v1' });
  await acx.initialize();
  await acx.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] });
  expect(await acx.close()).toBe(0);
  expect(fs.readFileSync(pidFile, 'utf8').trim().split('\n')).toHaveLength(1);
  expect(acx.stderr().match(/INFO mcp server connected server=echo /g)).toHaveLength(1);
});
