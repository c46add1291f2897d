import { z } from 'zod';
import type { LeaseHolder } from '../../src/store/lease-holder.ts';
import { type Tool, tool } from '../../src/tools/tool.ts';
import { scaled } from './time-scale.ts';

type Query = (sql: string, values: unknown[]) => Promise<unknown>;

/** Takes session `sessionId`'s wake lease over for `holder`, as a wake elsewhere would once this one's lapsed. */
export const takeWakeLease = (query: Query, sessionId: string, holder: LeaseHolder) => () =>
  query("UPDATE acx_wake_leases SET holder = $1, expires_at = now() + interval '1 hour' WHERE session_id = $2", [JSON.stringify(holder), sessionId]);

/** Takes session `sessionId`'s harness lease over for `holder`, as another replica would once this one's lapsed. */
export const takeSessionLease = (query: Query, sessionId: string, holder: string) => () =>
  query("UPDATE acx_session_leases SET holder = $1, expires_at = now() + interval '1 hour' WHERE session_id = $2", [holder, sessionId]);

/**
 * The in-flight claims a killed wake left on `timeline` lapse now, as they would once their lease
 * ran out unrenewed: the next wake resumes them without the test waiting a lease out (and a live
 * wake keeps the default lease, which a loaded machine cannot make it lose).
 */
export const lapseClaims = (query: Query, agentId: string, timeline: string) =>
  query("UPDATE acx_channel_claims SET expires_at = now() WHERE agent_id = $1 AND timeline = $2 AND phase = 'in-flight'", [agentId, timeline]);

/** Session `sessionId`'s harness lease, held by a killed process, lapses now (see lapseClaims). */
export const lapseSessionLease = (query: Query, sessionId: string) => query('UPDATE acx_session_leases SET expires_at = now() WHERE session_id = $1', [sessionId]);

/**
 * A tool `long_job` (unsafe: its effect must not repeat) that, when called, has its lease taken
 * over (`takeOver`, on PostgreSQL) and then works on until its turn is told to stop (the holder's
 * next renewal finds the lease gone). A turn never told goes on after a while, to its next step.
 */
export function leaseTakingTool(takeOver: () => Promise<unknown>, onRun: () => void): Tool {
  return tool({
    name: 'long_job',
    description: 'Runs for a while',
    inputSchema: z.object({}),
    capabilityScopes: [],
    kind: 'edit',
    effect: 'unsafe',
    execute: async (_input, context) => {
      onRun();
      await takeOver();
      if (!context.abortSignal.aborted) await new Promise((resolve) => (context.abortSignal.addEventListener('abort', resolve, { once: true }), setTimeout(resolve, scaled(10_000))));
      return 'finished';
    },
  });
}
