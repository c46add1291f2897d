import type { Tool } from '../../tools/tool.ts';

/**
 * Commands a cancel cut short. `execute` does not throw when the turn's cancel kills its command
 * (in the editor's terminal or acx's sandbox): it returns the output with "Cancelled", which
 * would end the call `completed`. A command-kind call whose run returns after the turn was
 * cancelled is marked here, when it returns, so the editor shows it failed; one that finished
 * before the cancel keeps its status.
 */
export class InterruptedCalls {
  private readonly ids = new Set<string>();

  /** The tools with every command-kind tool marking the calls the cancel cut short. */
  wrap(tools: readonly Tool[]): Tool[] {
    return tools.map((tool) => {
      const run = tool.execute;
      if (tool.kind !== 'execute' || !run) return tool;
      return {
        ...tool,
        execute: async (input, context) => {
          const output = await run(input, context);
          if (context.abortSignal.aborted) this.ids.add(context.toolCallId);
          return output;
        },
      };
    });
  }

  /** Whether the cancel cut this call short (asked once, when its result is translated). */
  take(toolCallId: string): boolean {
    return this.ids.delete(toolCallId);
  }
}
