import { z } from 'zod';
import type { LeaseHolder } from '../../src/store/lease-holder.ts';
import { type Tool, tool } from '../../src/tools/tool.ts';

/**
 * A tool `long_job` (unsafe: its effect must not repeat) that, when called, takes session
 * `sessionId`'s wake lease over for `holder` on PostgreSQL (by `query`) — as a wake elsewhere would once this
 * one's lease lapsed unrenewed — and then works on until its turn is told to stop (the wake's
 * next renewal finds the lease gone). A wake never told goes on after a while, to its next step.
 */
export function leaseTakingTool(query: (sql: string, values: unknown[]) => Promise<unknown>, sessionId: string, holder: LeaseHolder, onRun: () => void): Tool {
  return tool({
    name: 'long_job',
    description: 'Runs for a while',
    inputSchema: z.object({}),
    capabilityScopes: [],
    kind: 'edit',
    effect: 'unsafe',
    execute: async (_input, context) => {
      onRun();
      await query("UPDATE acx_wake_leases SET holder = $1, expires_at = now() + interval '1 hour' WHERE session_id = $2", [JSON.stringify(holder), sessionId]);
      if (!context.abortSignal.aborted) await new Promise((resolve) => (context.abortSignal.addEventListener('abort', resolve, { once: true }), setTimeout(resolve, 10_000)));
      return 'finished';
    },
  });
}
