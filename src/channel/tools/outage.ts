import { errorMessage } from '../../core/errors.ts';
import { interruptTurn } from '../../tools/run.ts';
import type { Tool } from '../../tools/tool.ts';
import { APIConnectionError, BaseCradleError } from '../errors.ts';

/**
 * Whether a platform failure is the platform's passing state rather than an answer about the
 * call: no answer came (after the client's own retries), it answered 5xx, or it asked to be
 * called later (429). A 4xx refusal is an answer the model should read and act on.
 */
export function isPlatformOutage(error: unknown): boolean {
  const cause = error instanceof Error && BaseCradleError.isInstance(error.cause) ? error.cause : error;
  if (APIConnectionError.isInstance(cause)) return true;
  if (!BaseCradleError.isInstance(cause) || cause.status === undefined) return false;
  return cause.status >= 500 || cause.status === 429;
}

/**
 * The tool for an unattended turn (a wake): a platform outage stops the turn instead of telling
 * the model, whose answer nobody would read. Told, the model would likely end its turn
 * unheard, and the turn would be settled as answered; stopped, the turn stays open and the next
 * wake continues it, re-issuing the call with the same Idempotency-Key, so a create the platform
 * did take is not made twice. Platform tools are read-only or idempotent, so re-running one is safe.
 */
export function interruptOnOutage(tool: Tool): Tool {
  const execute = tool.execute;
  if (!execute || tool.effect === 'unsafe') return tool;
  return {
    ...tool,
    async execute(input, context) {
      try {
        return await execute(input, context);
      } catch (error) {
        if (isPlatformOutage(error)) throw interruptTurn(`${tool.name}: ${errorMessage(error)}`, error);
        throw error;
      }
    },
  };
}
