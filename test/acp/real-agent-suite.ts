// One end-to-end suite for real ACP agents installed by the adapter's own bootstrap (cached in
// ACX_CACHE_DIR, default ~/.cache/acx) and pointed at the local scripted model server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ACPHarness } from '../../src/acp/create.ts';
import { HarnessAgent } from '../../src/agent/harness-agent.ts';
import type { HarnessStreamPart } from '../../src/engine/events.ts';
import type { PermissionMode } from '../../src/tools/permission.ts';
import { tool } from '../../src/tools/tool.ts';
import { startModelServer } from '../support/model-server.ts';
import type { ModelServer, RecordedRequest, ResponderResult } from '../support/model-server.ts';

export const REAL_KEY = 'sk-real-e2e-secret-0123456789';

export interface RealAgentOptions {
  name: string;
  harness: (server: ModelServer) => ACPHarness | Promise<ACPHarness>;
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

export function describeRealAgent(options: RealAgentOptions): void {
  describe(`${options.name} over ACP (real agent, local model server)`, () => {
    let server: ModelServer;
    let harness: ACPHarness;
    // Every held [slow] response (an agent may send more than one request for a prompt).
    const holds: Array<() => void> = [];
    let holding = true;
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
            return { text: 'thinking slowly...', pauseUntil: new Promise<void>((resolve) => holds.push(resolve)) };
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
    }, 600_000);

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
        for await (const p of stream.fullStream) parts.push(p);
        const second = await stream.result;
        expect(calls).toEqual(["hello host"]);
        expect(second.text).toContain('ECHOED(hello host)');
        expect(parts.find((p) => p.type === 'tool-call')).toMatchObject({ toolName: 'echo' });
      } finally {
        await session.destroy();
      }
    }, 180_000);

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
      }, 180_000);
    }

    // A real third-party agent under a loaded CI machine: one retry absorbs its timing; a cancel
    // that never ends still fails (each attempt is bounded).
    it('cancels mid-turn and the next turn is clean', { retry: 1, timeout: 120_000 }, async () => {
      const agent = new HarnessAgent({ harness, permissionMode: options.permissionMode });
      const session = await agent.createSession();
      try {
        const controller = new AbortController();
        holding = true;
        const before = server.requests.length;
        const turn = agent.generate({ session, prompt: 'Think slowly. [slow]', abortSignal: controller.signal });
        // Wait (bounded) until the agent's step for *this* prompt is in flight and held by the
        // server: agents make other requests of their own (titles, quota checks) around it, and a
        // cancel that lands before the agent started its step tests something else.
        const slowInFlight = () => server.requests.slice(before).some((r) => isAgentStep(r) && markerOf(r) === '[slow]');
        for (let i = 0; !slowInFlight(); i++) {
          if (i > 1200) throw new Error('the agent never sent the [slow] prompt to the model server within 60 s');
          await new Promise((r) => setTimeout(r, 50));
        }
        controller.abort();
        // A real upstream answers eventually: let the held response go after a while, so an
        // agent slow to honour the cancel cannot deadlock the test; the turn must still end as
        // cancelled. (Late-bound: `release` belongs to the held request.)
        const letGo = setTimeout(() => release(), 5_000);
        try {
          await expect(turn).rejects.toMatchObject({ code: 'aborted' });
        } finally {
          clearTimeout(letGo);
          release();
        }
        const next = await agent.generate({ session, prompt: 'Reply with pong. [pong]' });
        expect(next.text).toContain('PONG from the model server');
        expect(next.text).not.toContain('thinking slowly');
      } finally {
        await session.destroy();
      }
    });
  });
}
