// acx driving acx: acx's own ACP adapter (createACP + HarnessAgent) launches `acx acp` serving
// examples/notes-keeper as the ACP agent, and that inner acx talks to the local model server.
// Nothing is downloaded: an install-command source writes a launcher for this checkout's
// bin/acx.js into $HOME/.local/bin.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createACP } from '../../../src/harness/acp/create.ts';
import { createCredentialRequestTransformation } from '../../../src/harness/acp/credential-proxy.ts';
import type { ACPSettings } from '../../../src/harness/acp/settings.ts';
import { HarnessAgent } from '../../../src/harness/harness-agent.ts';
import { TurnAbortedError } from '../../../src/core/errors.ts';
import type { HarnessStreamPart } from '../../../src/engine/events.ts';
import { startModelServer, type ModelServer } from '../../support/model-server.ts';
import { tempCache } from './fake-profile.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const ACX_BIN = path.join(ROOT, 'bin/acx.js');
const NOTES_KEEPER = path.join(ROOT, 'examples/notes-keeper');

let model: ModelServer;
const cache = tempCache();
const closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  model = await startModelServer();
});
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => {});
  await model.close();
  fs.rmSync(cache, { recursive: true, force: true });
});

function innerAcxProfile(): ACPSettings {
  const launcher = [
    `cat > "$HOME/.local/bin/acx-inner" <<'SH'`,
    '#!/bin/sh',
    // The inner acx keeps its state below the sandbox's isolated HOME.
    `exec '${process.execPath}' '${ACX_BIN}' acp '${NOTES_KEEPER}' --home "$HOME/acx-home" --config-home "$HOME/acx-home" "$@"`,
    'SH',
    'chmod +x "$HOME/.local/bin/acx-inner"',
  ].join('\n');
  return {
    harnessId: 'acx-inner',
    source: { type: 'install-command', command: launcher },
    executable: 'acx-inner',
    args: ['--model', 'openai:test'],
    // The model API is brokered, as every ready profile's is: in the bubblewrap sandbox the
    // broker is the inner acx's only way to the model server.
    forwardEnv: ['OPENAI_BASE_URL'],
    credentialEnv: ['OPENAI_API_KEY'],
    credentialBrokering: ({ env, sandboxEnv }) => [
      createCredentialRequestTransformation({
        matchUrl: env.OPENAI_BASE_URL!,
        matchHeaders: { authorization: `Bearer ${sandboxEnv.OPENAI_API_KEY}` },
        transformHeaders: { authorization: `Bearer ${env.OPENAI_API_KEY}` },
        baseUrlEnv: 'OPENAI_BASE_URL',
      }),
    ],
    env: { ACX_LOG_LEVEL: 'warn' },
    modelMapping: { type: 'session-config-option', path: 'model' },
    // acx's ACP server offers the three permission modes as session modes under their own names.
    permissionModeMapping: {
      'allow-reads': { type: 'session-mode', modeId: 'allow-reads' },
      'allow-edits': { type: 'session-mode', modeId: 'allow-edits' },
      'allow-all': { type: 'session-mode', modeId: 'allow-all' },
    },
    cacheDir: cache,
    progress: null,
    hostEnv: { OPENAI_BASE_URL: model.openaiBaseURL, OPENAI_API_KEY: 'sk-test-inner' },
    cancelGraceMs: 5000,
  };
}

async function collect(stream: AsyncIterable<HarnessStreamPart>): Promise<HarnessStreamPart[]> {
  const parts: HarnessStreamPart[] = [];
  for await (const p of stream) parts.push(p);
  return parts;
}

describe('acx driving acx over ACP', () => {
  it('runs text, tool, permission, cancelled and follow-up turns in one session', async () => {
    const harness = createACP(innerAcxProfile());
    closers.push(() => harness.close!());
    const asked: Array<{ toolName: string; input: unknown }> = [];
    let approve = true;
    const agent = new HarnessAgent({
      harness,
      permissionMode: 'allow-reads',
      onApprovalRequest: async (request) => {
        asked.push({ toolName: request.toolName, input: request.input });
        return { approved: approve };
      },
    });
    const session = await agent.createSession();
    closers.push(() => session.destroy());

    // 1. A text turn.
    model.enqueue({ text: 'Hello, I keep the team notes.' });
    const first = await agent.generate({ session, prompt: 'Who are you?' });
    expect(first.text).toBe('Hello, I keep the team notes.');
    expect(first.finishReason).toBe('stop');
    const firstRequest = model.requests.at(-1)!;
    expect(firstRequest.view.messages.some((m) => m.role === 'user' && m.text.includes('Who are you?'))).toBe(true);

    // 2. A tool call of the inner agent (memory_write): under allow-reads the inner acx asks,
    //    and the question reaches the outer agent's approvals; approved, the write runs.
    model.enqueue(
      { toolCalls: [{ id: 'call_save', name: 'memory_write', input: { key: 'team/lead', value: 'Dana leads the team.' } }] },
      { text: 'Saved: Dana leads the team.' },
    );
    const toolTurn = agent.stream({ session, prompt: 'Remember that Dana leads the team.' });
    const toolParts = await collect(toolTurn.harnessStream);
    const toolResult = await toolTurn.result;
    expect(toolResult.text).toBe('Saved: Dana leads the team.');
    expect(toolResult.finishReason).toBe('stop');
    expect(asked).toHaveLength(1);
    expect(asked[0]!.toolName).toContain('memory_write');
    expect(asked[0]!.input).toMatchObject({ key: 'team/lead' });
    const call = toolParts.find((p) => p.type === 'tool-call' && p.toolCallId === 'call_save') as Record<string, unknown> | undefined;
    expect(call).toMatchObject({ kind: 'edit', providerExecuted: true, input: { key: 'team/lead', value: 'Dana leads the team.' } });
    expect(toolParts.some((p) => p.type === 'tool-approval-request')).toBe(true);
    const result = toolParts.find((p) => p.type === 'tool-result' && p.toolCallId === 'call_save');
    expect(result).toMatchObject({ toolName: 'memory_write', output: 'Saved "team/lead".' });
    // The model behind the inner acx saw the tool's real result, not an error.
    const afterTool = model.requests.at(-1)!.view.messages.flatMap((m) => m.toolResults ?? []).find((r) => r.callId === 'call_save');
    expect(afterTool).toEqual({ callId: 'call_save', output: 'Saved "team/lead".' });

    // 3. A denied permission: the outer approval says no, the inner tool call fails, the model is told.
    approve = false;
    model.enqueue(
      { toolCalls: [{ id: 'call_secret', name: 'memory_write', input: { key: 'secret', value: 'Do not keep this.' } }] },
      { text: 'Understood, not saved.' },
    );
    const deniedTurn = agent.stream({ session, prompt: 'Remember this secret.' });
    const deniedParts = await collect(deniedTurn.harnessStream);
    expect((await deniedTurn.result).text).toBe('Understood, not saved.');
    expect(asked).toHaveLength(2);
    expect(deniedParts.some((p) => (p.type === 'tool-output-denied' || p.type === 'tool-error') && p.toolCallId === 'call_secret')).toBe(true);
    const deniedResult = model.requests.at(-1)!.view.messages.flatMap((m) => m.toolResults ?? []).find((r) => r.callId === 'call_secret');
    expect(deniedResult?.output).toContain('rejected');

    // 4. Cancellation mid-turn: the model call is held open, the outer turn is aborted.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    model.enqueue({ text: 'This reply is never finished.', pauseUntil: held });
    const controller = new AbortController();
    const cancelled = agent.stream({ session, prompt: 'Write a long essay.', abortSignal: controller.signal });
    const seen: HarnessStreamPart[] = [];
    const reading = (async () => {
      for await (const p of cancelled.harnessStream) {
        seen.push(p);
        if (p.type === 'text-delta') controller.abort();
      }
    })();
    await expect(cancelled.result).rejects.toBeInstanceOf(TurnAbortedError);
    await reading.catch(() => {});
    release();
    expect(seen.some((p) => p.type === 'abort')).toBe(true);

    // 5. The session is clean for a second turn afterwards.
    model.enqueue({ text: 'Dana leads the team.' });
    const after = await agent.generate({ session, prompt: 'Who leads the team?' });
    expect(after.text).toBe('Dana leads the team.');
    expect(after.finishReason).toBe('stop');
    expect(model.queued()).toBe(0);
  });
});
