import { errorMessage } from '../core/errors.ts';
import { scrubSecrets } from '../util/scrub.ts';
import type { NormalizedSchema } from './schema.ts';
import type { Tool, ToolContext, ToolOutput } from './tool.ts';

/**
 * Runs one tool call: validate the arguments against the schema, execute, and turn every
 * failure into a result the model can read. Never throws, so one bad call cannot end a turn.
 */
export type ToolRunOutcome = { ok: true; output: ToolOutput } | { ok: false; error: string };

export async function runTool(
  tool: Tool,
  schema: NormalizedSchema,
  input: unknown,
  context: ToolContext,
): Promise<ToolRunOutcome> {
  const validation = schema.validate(input);
  if (!validation.ok) {
    return {
      ok: false,
      error: `Invalid arguments for ${tool.name}: ${(validation.errors ?? []).join('; ')}. Check the tool's input schema and call it again.`,
    };
  }
  if (!tool.execute) return { ok: false, error: `${tool.name} has no executor in this host.` };
  try {
    const output = await tool.execute(validation.value, context);
    return { ok: true, output };
  } catch (error) {
    // The model reads this and the journal keeps it: a credential the error quotes goes to neither.
    return { ok: false, error: `${tool.name} failed: ${scrubSecrets(errorMessage(error))}` };
  }
}
