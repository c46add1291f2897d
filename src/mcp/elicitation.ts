import type { ElicitRequest, ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import type { ElicitationRequest } from '../core/elicitation.ts';
import type { ToolContext } from '../tools/tool.ts';
import type { PausableDeadline } from '../util/deadline.ts';
import { untilSettledOrAborted } from '../util/abortable.ts';
import type { Logger } from '../util/logger.ts';

/**
 * Who answers a server's `elicitation/create`: the user of the tool call the server is serving
 * (its ToolContext.elicit, which the engine binds to the turn's onElicitation). A request while
 * no call of this server runs, or during a call nobody can answer for, is declined, and the
 * decline is logged as a WARNING naming the server and why. With several of the server's calls
 * running at once, the latest one started answers (MCP does not say which call a request is for).
 *
 * Only form elicitations are declared (the client capability); the SDK refuses URL ones.
 */
export const ELICITATION_CAPABILITY = { form: { applyDefaults: true } } as const;

interface ActiveCall {
  toolName: string;
  context: ToolContext;
  /** The call's time limit, stopped while its user answers. */
  deadline: PausableDeadline;
}

export class ElicitationRouter {
  private readonly server: string;
  private readonly logger: Logger;
  private readonly active: ActiveCall[] = [];

  constructor(server: string, logger: Logger) {
    this.server = server;
    this.logger = logger;
  }

  /** Runs one of the server's tool calls; elicitations meanwhile go to its context. */
  async during<T>(toolName: string, context: ToolContext, deadline: PausableDeadline, run: () => Promise<T>): Promise<T> {
    const call: ActiveCall = { toolName, context, deadline };
    this.active.push(call);
    try {
      return await run();
    } finally {
      this.active.splice(this.active.indexOf(call), 1);
    }
  }

  /**
   * `signal` is the server's request's: aborted when the server cancels it or its connection
   * closes (the server died while its user was being asked). The call's time limit then runs
   * again, and the user's answer, when it comes, goes nowhere.
   */
  async answer(params: ElicitRequest['params'], signal?: AbortSignal): Promise<ElicitResult> {
    if (params.mode === 'url' || !('requestedSchema' in params)) return this.decline('it asked the user to open a URL, which acx does not do');
    // A call's result and a question the server sent just after it can be read together: the
    // call lets go of its place here only as its result's promises settle, after this handler has
    // been started. Looking once this turn of the event loop is over sees the call already gone.
    await new Promise((resolve) => setImmediate(resolve));
    const call = this.active.at(-1);
    if (!call) return this.decline('it asked outside any of its tool calls, so no user is waiting on it');
    const elicit = call.context.elicit;
    if (!elicit) return this.decline('nobody can answer in this run (no user is attached: a wake, a worker job, or acx run)', call.toolName);
    const request = { server: this.server, message: params.message, requestedSchema: params.requestedSchema as ElicitationRequest['requestedSchema'] };
    call.deadline.pause();
    let result;
    try {
      result = await (signal ? untilSettledOrAborted(elicit(request), signal) : elicit(request));
    } catch (error) {
      if (!signal?.aborted) throw error;
      this.logger.warn('mcp elicitation withdrawn', { server: this.server, tool: call.toolName, reason: 'the server cancelled its question or went away' });
      return { action: 'cancel' };
    } finally {
      call.deadline.resume();
    }
    this.logger.info('mcp elicitation', { server: this.server, tool: call.toolName, action: result.action });
    if (result.action === 'accept') return { action: 'accept', content: result.content };
    return { action: result.action };
  }

  private decline(reason: string, tool?: string): ElicitResult {
    this.logger.warn('mcp elicitation declined', { server: this.server, ...(tool ? { tool } : {}), reason });
    return { action: 'decline' };
  }
}
