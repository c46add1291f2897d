// `acx acp` prompt queueing (issue 26, item 13): a session/prompt sent while a turn runs waits and
// runs after it, as Zed expects (it sends the next prompt right after a cancel, before the
// cancelled turn has answered), instead of being refused; a cancel ends the running turn and the
// prompts waiting at that moment. A real `acx acp` child process driven by the ACP SDK's client.
import * as acp from '@agentclientprotocol/sdk';
import { expect, it } from 'vitest';
import { type AcxAcp, replyText, updatesOf } from '../../fixtures/acp-server/client.ts';
import { useAcpTestBed } from '../../fixtures/acp-server/test-bed.ts';

const bed = useAcpTestBed('acx-acp-queue-');

async function open(): Promise<{ acx: AcxAcp; sessionId: string; from: number }> {
  const from = bed.model.requests.length;
  const acx = bed.start();
  await acx.initialize();
  const { sessionId } = await acx.agent.request(acp.methods.agent.session.new, { cwd: bed.home, mcpServers: [] });
  return { acx, sessionId, from };
}

const prompt = (acx: AcxAcp, sessionId: string, text: string) =>
  acx.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });

/** A model answer held back until the test lets it go. */
function held(text: string) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  return { answer: { text, pauseUntil: gate }, release };
}

/** Resolves once acx has queued `count` prompts in all (its INFO line), or the prompt given has settled (refused). */
async function queued(acx: AcxAcp, count: number, sent: Promise<unknown>): Promise<void> {
  let settled = false;
  void sent.then(
    () => (settled = true),
    () => (settled = true),
  );
  while (!settled && (acx.stderr().match(/INFO acp prompt queued/g) ?? []).length < count) await new Promise((resolve) => setTimeout(resolve, 20));
}

/** The model's requests since `from`, by the last user message each carried (not acx's brief). */
const asked = (from: number) => bed.model.requests.slice(from).map((r) => r.view.messages.filter((m) => m.role === 'user' && !m.text.startsWith('<acx-brief>')).at(-1)?.text);

it('runs a prompt sent during a turn after that turn, with its reply in the history', async () => {
  const { acx, sessionId, from } = await open();
  const first = held('The freeze starts on 12 December.');
  bed.model.enqueue(first.answer, { text: 'Mia owns it.' });
  const one = prompt(acx, sessionId, 'When is the freeze?');
  let two: Promise<acp.PromptResponse>;
  try {
    await acx.waitForUpdate((n) => n.sessionId === sessionId && n.update.sessionUpdate === 'agent_message_chunk');
    two = prompt(acx, sessionId, 'Who owns it?');
    // Taken and waiting: the model has not been asked the second question while the first turn runs.
    await queued(acx, 1, two);
    expect(asked(from)).toEqual(['When is the freeze?']);
  } finally {
    first.release();
  }
  expect((await one).stopReason).toBe('end_turn');
  expect((await two).stopReason).toBe('end_turn');
  expect(asked(from)).toEqual(['When is the freeze?', 'Who owns it?']);
  // The second turn saw the first one's reply, and its reply came after all of the first's.
  expect(bed.model.requests[from + 1]!.view.messages.map((m) => m.text)).toContain('The freeze starts on 12 December.');
  expect(replyText(updatesOf(acx, sessionId))).toBe('The freeze starts on 12 December.Mia owns it.');
});

it('a cancel ends the running turn and the prompts waiting then; a prompt sent after the cancel runs', async () => {
  const { acx, sessionId, from } = await open();
  const first = held('Working on it');
  bed.model.enqueue(first.answer);
  const running = prompt(acx, sessionId, 'Start the long job.');
  let after: Promise<acp.PromptResponse>;
  try {
    await acx.waitForUpdate((n) => n.sessionId === sessionId && n.update.sessionUpdate === 'agent_message_chunk');
    const waiting = prompt(acx, sessionId, 'And then the other job.');
    await queued(acx, 1, waiting);
    await acx.agent.notify(acp.methods.agent.session.cancel, { sessionId });
    // Zed's "cancel, then send": the new prompt arrives before the cancelled turn has answered.
    bed.model.enqueue({ text: 'Here is the short answer.' });
    after = prompt(acx, sessionId, 'Just answer briefly.');
    // The waiting prompt is answered at once, while the cancelled turn is still winding down.
    expect((await waiting).stopReason).toBe('cancelled');
  } finally {
    first.release();
  }
  expect((await running).stopReason).toBe('cancelled');
  expect((await after).stopReason).toBe('end_turn');
  expect(asked(from)).toEqual(['Start the long job.', 'Just answer briefly.']);
  expect(replyText(updatesOf(acx, sessionId))).toContain('Here is the short answer.');
});
