// `acx acp` answers initialize before it prepares the agent (test/e2e/lazy-loading.test.ts checks
// what is loaded by then). A problem found while preparing therefore reaches the editor through
// the session methods: a real child process whose memory provider module does not exist.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AcxAcp, startAcxAcp } from '../../fixtures/acp-server/client.ts';

let home: string;
let acx: AcxAcp;
beforeAll(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'acx-acp-deferred-'));
  acx = startAcxAcp({ home, modelBaseURL: 'http://127.0.0.1:9/v1', env: { ACX_MEMORY_PROVIDER: './no-such-provider.mjs#create' } });
});
afterAll(async () => {
  expect(await acx.close(), 'the client hanging up ends the server cleanly').toBe(0);
  fs.rmSync(home, { recursive: true, force: true });
});

describe('acx acp when preparing the agent fails after initialize', { timeout: 60_000 }, () => {
  it('answered initialize, then refuses session/new with what to fix, and keeps serving', async () => {
    const init = await acx.initialize();
    expect(init.agentInfo?.name).toBe('acx');
    const refusal = { code: -32603, message: expect.stringMatching(/memory provider module .*no-such-provider\.mjs .*does not exist\. Check the path/) };
    await expect(acx.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] })).rejects.toMatchObject(refusal);
    // The same answer again: the failed preparation is not retried into a different state.
    await expect(acx.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] })).rejects.toMatchObject(refusal);
    expect(acx.stderr()).toMatch(/^WARNING acp not ready reason="The memory provider module /m);
    expect(acx.stderr()).not.toMatch(/\n\s+at /); // no stack trace for a user's mistake
  });
});
