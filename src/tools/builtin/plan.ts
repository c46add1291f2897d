import { z } from 'zod';
import type { Tool } from '../tool.ts';

/**
 * The model's plan for multi-step work: it sends the whole list each time, with each entry's
 * status. Nothing outside the conversation changes (so every permission mode runs it); a front
 * end shows the list (acx acp sends it as an ACP `plan`), and the journal keeps it as the call's
 * input, so a reopened session shows its last plan.
 */
export const PLAN_TOOL_NAME = 'plan_update';

const planEntry = z.object({
  content: z.string().min(1).describe('What this step does, in a few words.'),
  status: z.enum(['pending', 'in_progress', 'completed']),
  priority: z.enum(['high', 'medium', 'low']).optional(),
});

export type PlanInput = { entries: Array<z.infer<typeof planEntry>> };

export function createPlanTool(): Tool<PlanInput> {
  return {
    name: PLAN_TOOL_NAME,
    description:
      'Keep a plan for work of several steps, shown to the user: send the whole list every time, marking each entry pending, in_progress (one at a time) or completed as you go. Skip it for one-step requests.',
    inputSchema: z.object({ entries: z.array(planEntry).min(1).max(50) }),
    capabilityScopes: [],
    kind: 'read',
    effect: 'idempotent',
    execute: ({ entries }) => {
      const done = entries.filter((e) => e.status === 'completed').length;
      return `Plan updated: ${entries.length} entries, ${done} completed.`;
    },
  };
}

/** The entries of a plan call's input, or undefined when it is not a well-formed plan. */
export function planOf(input: unknown): PlanInput['entries'] | undefined {
  const parsed = z.object({ entries: z.array(planEntry) }).safeParse(input);
  return parsed.success ? parsed.data.entries : undefined;
}
