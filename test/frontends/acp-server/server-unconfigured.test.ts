// Issue 9 item 4: `acx acp` started without an API key answers `initialize` (an editor would
// otherwise show the agent loading forever), advertises an auth method naming the variable to
// set, and fails session/new and session/prompt with a JSON-RPC error that says what to set.
// A real child process in an environment with no key, driven by the ACP SDK's client.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AcxAcp, startAcxAcp } from '../../fixtures/acp-server/client.ts';
import { scaled } from '../../support/time-scale.ts';

const MESSAGE =
  'Authentication required: No API key for openai: OPENAI_API_KEY is not set. Set OPENAI_API_KEY in the environment your editor starts `acx acp` with ' +
  '(e.g. the "env" of its agent server settings), then restart the agent.';

let home: string;
let acx: AcxAcp;
beforeAll(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'acx-acp-nokey-'));
  // No key at all: the fixture's test key is blanked and nothing else provides one.
  acx = startAcxAcp({ home, modelBaseURL: 'http://127.0.0.1:9/v1', env: { OPENAI_API_KEY: '' } });
});
afterAll(async () => {
  expect(await acx.close(), 'the client hanging up ends the server cleanly').toBe(0);
  fs.rmSync(home, { recursive: true, force: true });
});

describe('acx acp with no API key', { timeout: scaled(60_000) }, () => {
  it('answers initialize, advertising an auth method that names the variable to set', async () => {
    const init = await acx.initialize();
    expect(init.protocolVersion).toBe(acp.PROTOCOL_VERSION);
    expect(init.agentInfo?.name).toBe('acx');
    expect(init.agentCapabilities?.loadSession).toBe(false);
    expect(init.authMethods).toEqual([
      {
        id: 'acx-env-OPENAI_API_KEY',
        name: 'Set OPENAI_API_KEY',
        description:
          'acx reads the key from OPENAI_API_KEY. Set it in the environment your editor starts `acx acp` with (e.g. the "env" of its agent server settings), then restart the agent.',
        _meta: { 'acx/env': 'OPENAI_API_KEY' },
      },
    ]);
    expect(acx.stderr()).toMatch(/^WARNING acp not ready reason="No API key for openai: OPENAI_API_KEY is not set\." /m);
  });

  it('fails session/new, session/prompt and authenticate with a JSON-RPC error saying what to set', async () => {
    const expected = { code: -32000, message: MESSAGE, data: { variables: ['OPENAI_API_KEY'] } };
    await expect(acx.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] })).rejects.toMatchObject(expected);
    await expect(
      acx.agent.request(acp.methods.agent.session.prompt, { sessionId: 'any', prompt: [{ type: 'text', text: 'hi' }] }),
    ).rejects.toMatchObject(expected);
    await expect(acx.agent.request(acp.methods.agent.authenticate, { methodId: 'acx-env-OPENAI_API_KEY' })).rejects.toMatchObject(expected);
    expect(acx.stdout().split('\n').filter(Boolean).every((line) => JSON.parse(line).jsonrpc === '2.0'), 'stdout carries JSON-RPC only').toBe(true);
  });
});
