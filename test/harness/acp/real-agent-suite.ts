// One end-to-end suite for real ACP agents installed by the adapter's own bootstrap (cached in
// ACX_CACHE_DIR, default ~/.cache/acx) and pointed at the local scripted model server.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ACPHarness } from '../../../src/harness/acp/create.ts';
import type { ACPSettings } from '../../../src/harness/acp/settings.ts';
import { HarnessAgent } from '../../../src/harness/harness-agent.ts';
import type { HarnessStreamPart } from '../../../src/engine/events.ts';
import type { PermissionMode } from '../../../src/tools/permission.ts';
import { tool } from '../../../src/tools/tool.ts';
import { startModelServer } from '../../support/model-server.ts';
import type { ModelServer, RecordedRequest, ResponderResult } from '../../support/model-server.ts';
import { scaled } from '../../support/time-scale.ts';

export const REAL_KEY = 'sk-real-e2e-secret-0123456789';

export interface RealAgentOptions {
  name: string;
  /** The harness on the model server; `extra` settings (a journal) are laid over the profile's. */
  harness: (server: ModelServer, extra?: Partial<ACPSettings>) => ACPHarness | Promise<ACPHarness>;
  permissionMode: PermissionMode;
  /** A native tool call that makes the agent ask the client for permission (omit when the agent cannot ask). */
  permissionCall?: { name: string; input: unknown };
  /** Where the real key is expected on upstream requests. */
  keyHeader: (r: RecordedRequest) => string | undefined;
}

/** Function tool names, including Responses API `namespace` tools (Codex sends MCP tools as `mcp__<server>` namespaces). */
export function toolNamesOf(r: RecordedRequest): string[] {
  const names = [...r.view.tools];
  for (const t of (r.body?.tools ?? []) as Array<{ type?: string; name?: string; tools?: Array<{ name?: string }> }>) {
    if (t.type === 'namespace' && t.name) for (const inner of t.tools ?? []) names.push(`${t.name}__${inner.name}`);
  }
  return names;
}

const MARKERS = ['[slow]', '[echo]', '[permission]', '[pong]'] as const;

/**
 * The test marker the request is about: the last one in its last user message. After a cancel
 * some agents fold the cancelled prompt and the next one into one user message.
 */
function markerOf(r: RecordedRequest): (typeof MARKERS)[number] | undefined {
  const users = r.view.messages.filter((m) => m.role === 'user');
  const said = users[users.length - 1]?.text ?? '';
  let found: (typeof MARKERS)[number] | undefined;
  for (const marker of MARKERS) if (said.includes(marker) && (!found || said.lastIndexOf(marker) > said.lastIndexOf(found))) found = marker;
  return found;
}

/**
 * The agent's own step for the prompt, as opposed to a side request it makes about the prompt
 * (Claude Code titles a session with a tool-less request that quotes the prompt).
 */
function isAgentStep(r: RecordedRequest): boolean {
  return toolNamesOf(r).length > 0;
}

/** Waits for `promise`, failing with `message` if it has not settled after `ms`. */
async function withDeadline<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)));
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

export function describeRealAgent(options: RealAgentOptions): void {
  describe(`${options.name} over ACP (real agent, local model server)`, () => {
    let server: ModelServer;
    let harness: ACPHarness;
    // Every held [slow] response (an agent may send more than one request for a prompt).
    const holds: Array<() => void> = [];
    let holding = true;
    /** Called when the server starts holding the agent's own step. */
    let onHold: (() => void) | undefined;
    /** Lets every held response go, and holds no later one (until `holding` is set again). */
    const release = () => {
      holding = false;
      for (const letGo of holds.splice(0)) letGo();
    };
    const calls: string[] = [];
    const echo = tool({
      name: 'echo',
      description: 'Echoes the given text back. Use it when asked to echo.',
      inputSchema: z.object({ text: z.string() }),
      capabilityScopes: [],
      kind: 'read',
      effect: 'read-only',
      execute: ({ text }: { text: string }) => {
        calls.push(text);
        return `ECHOED(${text})`;
      },
    });

    beforeAll(async () => {
      server = await startModelServer({
        fallback: (r): ResponderResult => {
          const marker = markerOf(r);
          const last = r.view.messages[r.view.messages.length - 1];
          const gotToolResult = last?.role === 'tool';
          if (marker === '[slow]') {
            // Only the agent's own step is held (a real model thinking); side requests answer at once.
            if (!isAgentStep(r) || !holding) return { text: 'A slow thought' };
            const pauseUntil = new Promise<void>((resolve) => holds.push(resolve));
            onHold?.();
            return { text: 'thinking slowly...', pauseUntil };
          }
          if (marker === '[echo]') {
            if (gotToolResult) return { text: `Tool said: ${last.toolResults?.[0]?.output ?? ''}` };
            const name = toolNamesOf(r).find((t) => t.endsWith('echo'));
            if (!name) return { text: `no echo tool among ${toolNamesOf(r).join(',')}` };
            return { toolCalls: [{ name, input: { text: 'hello host' } }] };
          }
          if (marker === '[permission]' && options.permissionCall) {
            if (gotToolResult) return { text: 'permission flow finished' };
            return { toolCalls: [options.permissionCall] };
          }
          return { text: 'PONG from the model server' };
        },
      });
      harness = await options.harness(server);
      await harness.bootstrap();
    }, scaled(600_000));

    afterAll(async () => {
      release();
      await harness?.close?.();
      await server?.close();
    });

    it('runs a text turn, brokers the real key, and runs a second turn calling a host tool over MCP', async () => {
      const agent = new HarnessAgent({ harness, permissionMode: options.permissionMode, tools: [echo], instructions: 'Always answer in English.' });
      const session = await agent.createSession();
      try {
        const first = await agent.generate({ session, prompt: 'Reply with pong. [pong]' });
        expect(first.text).toContain('PONG from the model server');
        expect(first.finishReason).toBe('stop');
        const upstream = server.requests[server.requests.length - 1]!;
        expect(options.keyHeader(upstream)).toContain(REAL_KEY);
        expect(JSON.stringify(upstream.body)).toContain('Always answer in English.');

        const stream = agent.stream({ session, prompt: 'Use the echo tool. [echo]' });
        const parts: HarnessStreamPart[] = [];
        for await (const p of stream.harnessStream) parts.push(p);
        const second = await stream.result;
        expect(calls).toEqual(["hello host"]);
        expect(second.text).toContain('ECHOED(hello host)');
        expect(parts.find((p) => p.type === 'tool-call')).toMatchObject({ toolName: 'echo' });
      } finally {
        await session.destroy();
      }
    }, scaled(180_000));

    if (options.permissionCall) {
      it('turns the agent\'s permission request into an acx approval', async () => {
        const asked: string[] = [];
        const agent = new HarnessAgent({
          harness,
          permissionMode: options.permissionMode,
          onApprovalRequest: async (request) => {
            asked.push(request.toolName);
            return { approved: true };
          },
        });
        const session = await agent.createSession();
        try {
          const result = await agent.generate({ session, prompt: 'Do it. [permission]' });
          expect(asked.length).toBeGreaterThan(0);
          expect(result.text).toContain('permission flow finished');
        } finally {
          await session.destroy();
        }
      }, scaled(180_000));
    }

    if (options.permissionCall) {
      // Two harnesses on one journal stand for two processes: they share nothing else.
      it('without a handler the permission request pauses the turn; another harness on the same journal lists it and answers it', async () => {
        const journal = join(mkdtempSync(join(tmpdir(), 'acx-real-approval-')), 'journal.db');
        const holder = await options.harness(server, { journal });
        const answerer = await options.harness(server, { journal });
        const a = new HarnessAgent({ harness: holder, permissionMode: options.permissionMode });
        const b = new HarnessAgent({ harness: answerer, permissionMode: options.permissionMode });
        const session = await a.createSession();
        try {
          const paused = await a.generate({ session, prompt: 'Do it. [permission]' });
          expect(paused).toMatchObject({ suspendedBy: 'approval', rawFinishReason: 'tool-approval' });
          expect(paused.pendingApprovals).toHaveLength(1);
          const listed = await b.listSuspended();
          expect(listed.map((entry) => entry.state.continuation)).toEqual([{ turnId: paused.turnId, suspendedBy: 'approval', pendingApprovals: paused.pendingApprovals, pendingToolCalls: [] }]);
          const elsewhere = await b.createSession({ continueFrom: listed[0]!.state });
          const done = await b.continueGenerate({ session: elsewhere, approvals: [{ approvalId: paused.pendingApprovals[0]!.approvalId, approved: true }] });
          expect(done.turnId).toBe(paused.turnId);
          expect(done.text).toContain('permission flow finished');
          expect(await b.listSuspended()).toEqual([]);
          await elsewhere.detach();
        } finally {
          await session.destroy();
          await holder.close?.();
          await answerer.close?.();
        }
      }, 300_000);
    }

    // The order is fixed by events, not by timing: the abort is sent once the agent's own step is
    // in flight (held by the server), and that step's reply stays held until the turn has ended,
    // so the turn can only end because the agent honoured session/cancel. (An agent that ignores
    // it is stopped by acx after cancelGraceMs, and then the next turn fails.)
    it('cancels mid-turn and the next turn is clean', { timeout: scaled(120_000) }, async () => {
      const agent = new HarnessAgent({ harness, permissionMode: options.permissionMode });
      const session = await agent.createSession();
      try {
        const controller = new AbortController();
        holding = true;
        // Agents make requests of their own (titles, quota checks) around the step; those are
        // answered at once, and a cancel that lands before the step started tests something else.
        const stepHeld = new Promise<void>((resolve) => (onHold = resolve));
        const turn = agent.generate({ session, prompt: 'Think slowly. [slow]', abortSignal: controller.signal });
        // A turn that ends on its own before its step was held fails here, with its own outcome.
        const endedEarly = turn.then((result) => Promise.reject(new Error(`the [slow] turn ended before its step was held: ${result.text}`)));
        endedEarly.catch(() => {}); // observed only through the race below
        await withDeadline(Promise.race([stepHeld, endedEarly]), scaled(60_000), 'the agent never sent its step for the [slow] prompt to the model server in time');
        controller.abort();
        try {
          await expect(turn).rejects.toMatchObject({ code: 'aborted' });
        } finally {
          release();
        }
        const next = await agent.generate({ session, prompt: 'Reply with pong. [pong]' });
        expect(next.text).toContain('PONG from the model server');
        expect(next.text).not.toContain('thinking slowly');
      } finally {
        onHold = undefined;
        await session.destroy();
      }
    });
  });
}
