import { z } from 'zod';
import type { Tool } from '../tools/tool.ts';
import { elide } from '../engine/caps.ts';
import type { Harness } from '../harness/harness.ts';
import { HarnessAgent } from '../harness/harness-agent.ts';
import { lazySchema } from '../core/lazy-schema.ts';

/**
 * `dispatch`: hands a unit of work to a sub-agent — its own session, its own step budget, a
 * subset of the parent's tools — and returns one condensed summary of bounded size.
 * The sub-agent cannot dispatch further (no recursion), and its session lives in the same
 * journal under `dispatch/<parent call>` so a crashed parent finds the child's evidence.
 */
export const DISPATCH_SUMMARY_CHARS = 2000;

export interface DispatchOptions {
  /** Builds the sub-agent's harness (e.g. the same engine with a smaller step budget). */
  harness: Harness;
  /** Tools the sub-agent may use; the parent's tools minus dispatch itself. */
  tools: () => readonly Tool[];
  /** The parent's standing instructions, read when a sub-agent starts. */
  instructions: () => string;
  agentId: string;
}

const input = lazySchema(() =>
  z.object({
    task: z.string().min(1).describe('The unit of work, stated completely: the sub-agent sees nothing else.'),
    tools: z.array(z.string()).optional().describe('Names of your tools the sub-agent may use (default: all but dispatch).'),
  }),
);

export function createDispatchTool(options: DispatchOptions): Tool<z.infer<ReturnType<typeof input>>> {
  return {
    name: 'dispatch',
    description:
      'Spawn a sub-agent for one self-contained unit of work. It has its own step budget and a subset of your tools, ' +
      `and returns a summary of at most ${DISPATCH_SUMMARY_CHARS} characters.`,
    inputSchema: input(),
    capabilityScopes: ['dispatch'],
    kind: 'other',
    effect: 'unsafe',
    async execute({ task, tools: wanted }, context) {
      const available = options.tools().filter((tool) => tool.name !== 'dispatch');
      const unknown = (wanted ?? []).filter((name) => !available.some((tool) => tool.name === name));
      if (unknown.length > 0) {
        return `Cannot dispatch: unknown tool(s) ${unknown.join(', ')}. Available: ${available.map((t) => t.name).join(', ')}.`;
      }
      const subset = wanted ? available.filter((tool) => wanted.includes(tool.name)) : available;
      const agent = new HarnessAgent({
        harness: options.harness,
        id: `${options.agentId}/dispatch`,
        instructions: [
          options.instructions(),
          'You are a sub-agent working on one delegated task. Finish it, then reply with a concise report of what you did, ' +
            'what you found (with exact names, ids and numbers), and anything left undone.',
        ]
          .filter(Boolean)
          .join('\n\n'),
        tools: subset,
        permissionMode: 'allow-all',
      });
      const session = await agent.createSession({ sessionId: `dispatch/${context.sessionId}/${context.toolCallId}` });
      const result = (await session.hasUnfinishedTurn())
        ? await agent.continueGenerate({ session, abortSignal: context.abortSignal })
        : await agent.generate({ session, prompt: task, abortSignal: context.abortSignal });
      const report = result.text || result.unspoken || '(the sub-agent returned no report)';
      return `Sub-agent report (${result.stepCount} steps):\n${elide(report, DISPATCH_SUMMARY_CHARS)}`;
    },
  };
}
