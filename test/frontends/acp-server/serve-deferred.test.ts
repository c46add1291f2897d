// `acx acp` answers initialize before it prepares the agent (test/e2e/lazy-loading.test.ts checks
// what is loaded by then). A problem found while preparing therefore reaches the editor through
// the session methods: real child processes whose memory provider module does not exist, or
// whose skill's SKILL.md is broken until the test fixes it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AcxAcp, NOTES_KEEPER, startAcxAcp } from '../../fixtures/acp-server/client.ts';
import { scaled } from '../../support/time-scale.ts';

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

describe('acx acp when preparing the agent fails after initialize', { timeout: scaled(60_000) }, () => {
  it('answered initialize, then refuses session/new with what to fix, and keeps serving', async () => {
    const init = await acx.initialize();
    expect(init.agentInfo?.name).toBe('acx');
    const refusal = { code: -32603, message: expect.stringMatching(/memory provider module .*no-such-provider\.mjs .*does not exist\. Check the path/) };
    await expect(acx.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] })).rejects.toMatchObject(refusal);
    // Tried again, the same answer: the module still does not exist.
    await expect(acx.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] })).rejects.toMatchObject(refusal);
    expect(acx.stderr()).toMatch(/^WARNING acp not ready reason="The memory provider module /m);
    expect(acx.stderr()).not.toMatch(/\n\s+at /); // no stack trace for a user's mistake
  });
});

describe('acx acp when a skill is broken', { timeout: scaled(60_000) }, () => {
  let skillHome: string;
  let skillAcx: AcxAcp;
  let skillMd: string;
  beforeAll(() => {
    skillHome = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'acx-acp-skill-')));
    const agentDir = path.join(skillHome, 'agent');
    fs.cpSync(NOTES_KEEPER, agentDir, { recursive: true });
    skillMd = path.join(agentDir, 'skills/release-notes/SKILL.md');
    fs.renameSync(skillMd, `${skillMd}.good`);
    fs.writeFileSync(skillMd, 'no frontmatter here\n');
    skillAcx = startAcxAcp({ home: skillHome, agentDir, modelBaseURL: 'http://127.0.0.1:9/v1' });
  });
  afterAll(async () => {
    expect(await skillAcx.close(), 'the client hanging up ends the server cleanly').toBe(0);
    fs.rmSync(skillHome, { recursive: true, force: true });
  });

  it('refuses session/new with the skill\'s own error and hint, then prepares the agent once the file is fixed', async () => {
    await skillAcx.initialize();
    const refused = skillAcx.agent.request(acp.methods.agent.session.new, { cwd: skillHome, mcpServers: [] });
    await expect(refused).rejects.toMatchObject({
      code: -32603,
      message: 'Internal error: skills/release-notes/SKILL.md must start with YAML frontmatter (--- name/description ---) start SKILL.md with ---, name: and description: lines, then --- (see https://agentskills.io)',
    });
    expect(skillAcx.stderr()).not.toMatch(/\n\s+at /); // no stack trace for a user's mistake
    // Fixed while acx acp runs: the next session/new prepares the agent again, and succeeds.
    fs.renameSync(`${skillMd}.good`, skillMd);
    const created = await skillAcx.agent.request(acp.methods.agent.session.new, { cwd: skillHome, mcpServers: [] });
    expect(created.sessionId).toEqual(expect.any(String));
    expect(skillAcx.stderr()).toMatch(/^INFO acp ready agent=notes-keeper /m);
  });
});
