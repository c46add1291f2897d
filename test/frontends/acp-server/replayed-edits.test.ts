// `acx acp` session/load replays each fs_write with the diff it showed live (issue 26, item 13):
// the old text is what the file held just before the write (kept in the journal with the call),
// the new text the call's content, so a reopened session shows its edits as they were made, a
// fork's too. Real `acx acp` child processes on one --home, driven by the ACP SDK's client.
import fs from 'node:fs';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import type { ForkSessionResponse } from '@agentclientprotocol/sdk/unstable';
import { expect, it } from 'vitest';
import { type AcxAcp, updatesOf } from '../../fixtures/acp-server/client.ts';
import { useAcpTestBed } from '../../fixtures/acp-server/test-bed.ts';

const AGENT = path.resolve(import.meta.dirname, '../../fixtures/acp-server/project-agent');
const bed = useAcpTestBed('acx-acp-replayed-edits-');

async function start(): Promise<AcxAcp> {
  const acx = bed.start({ agentDir: AGENT });
  await acx.initialize();
  return acx;
}

const prompt = (acx: AcxAcp, sessionId: string, text: string) =>
  acx.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });

type Diff = Extract<acp.ToolCallContent, { type: 'diff' }>;
const diffsIn = (updates: readonly acp.SessionUpdate[], toolCallId: string): Diff[] =>
  updates.flatMap((u) =>
    (u.sessionUpdate === 'tool_call' || u.sessionUpdate === 'tool_call_update') && u.toolCallId === toolCallId && u.status === 'completed'
      ? (u.content ?? []).filter((c): c is Diff => c.type === 'diff')
      : [],
  );

it('replays every fs_write with the diff it had live, in a reopened session and in a fork', async () => {
  const project = path.join(bed.home, 'project');
  fs.mkdirSync(project);
  const readme = path.join(project, 'README.md');
  fs.writeFileSync(readme, 'old readme\n');
  const first = await start();
  const { sessionId } = await first.agent.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] });
  bed.model.enqueue(
    {
      toolCalls: [
        { id: 'w1', name: 'fs_write', input: { path: 'README.md', content: 'new readme\n' } },
        { id: 'w2', name: 'fs_write', input: { path: 'notes/new.md', content: 'fresh\n' } },
      ],
    },
    { text: 'Wrote both.' },
    // A model that reuses a call id in a later turn: each write keeps its own diff.
    { toolCalls: [{ id: 'w1', name: 'fs_write', input: { path: 'README.md', content: 'newer readme\n' } }] },
    { text: 'Rewrote it.' },
  );
  await prompt(first, sessionId, 'Write the readme and a note.');
  await prompt(first, sessionId, 'Rewrite the readme.');
  const live = { w1: diffsIn(updatesOf(first, sessionId), 'w1'), w2: diffsIn(updatesOf(first, sessionId), 'w2') };
  expect(live.w1).toEqual([
    { type: 'diff', path: readme, oldText: 'old readme\n', newText: 'new readme\n' },
    { type: 'diff', path: readme, oldText: 'new readme\n', newText: 'newer readme\n' },
  ]);
  expect(live.w2).toEqual([{ type: 'diff', path: path.join(project, 'notes/new.md'), oldText: null, newText: 'fresh\n' }]);
  await first.close();

  const second = await start();
  await second.agent.request(acp.methods.agent.session.load, { sessionId, cwd: project, mcpServers: [] });
  const replay = updatesOf(second, sessionId);
  expect(diffsIn(replay, 'w1')).toEqual(live.w1);
  expect(diffsIn(replay, 'w2')).toEqual(live.w2);
  // The replayed call still carries its result after the diff, as the live one did.
  const replayedCall = replay.find((u) => u.sessionUpdate === 'tool_call' && u.toolCallId === 'w2');
  expect(replayedCall).toMatchObject({ status: 'completed', content: [{ type: 'diff' }, { type: 'content', content: { type: 'text', text: 'Wrote 6 bytes to notes/new.md.' } }] });

  const forked = await second.agent.request<ForkSessionResponse>('session/fork', { sessionId, cwd: project, mcpServers: [] });
  second.updates.length = 0;
  await second.agent.request(acp.methods.agent.session.load, { sessionId: forked.sessionId, cwd: project, mcpServers: [] });
  expect(diffsIn(updatesOf(second, forked.sessionId), 'w1')).toEqual(live.w1);
});
