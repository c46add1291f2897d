import { AcxError, errorMessage } from '../core/errors.ts';
import { scrubSecrets } from '../util/scrub.ts';
import type { NormalizedSchema } from './schema.ts';
import type { Tool, ToolContext, ToolOutput } from './tool.ts';

/**
 * Runs one tool call: validate the arguments against the schema, execute, and turn every
 * failure into a result the model can read, so one bad call cannot end a turn. The one
 * exception is a tool that throws an AcxError coded `turn-interrupted` (see interruptTurn).
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
    if (AcxError.hasCode(error, 'turn-interrupted')) throw error;
    // The model reads this and the journal keeps it: a credential the error quotes goes to neither.
    const message = scrubSecrets(errorMessage(error));
    // An MCP tool's error already names it (`<name> failed: …`, `<name> was cancelled: …`): not twice.
    const named = AcxError.isInstance(error) && error.code.startsWith('mcp-') && message.startsWith(`${tool.name} `);
    return { ok: false, error: named ? message : `${tool.name} failed: ${message}` };
  }
}

/**
 * What a tool throws to stop its turn as a crash would, instead of telling the model: its call
 * is left without a result, so the turn, continued later (the same turn id), runs the call
 * again. Only for a call that is safe to run twice (read-only, or idempotent like a keyed
 * create): an unsafe call that started is never re-run. A caller with nobody to read the model's
 * account of a failure (an unattended wake) uses it for failures that pass (a service down).
 */
export function interruptTurn(message: string, cause: unknown): AcxError {
  return new AcxError('turn-interrupted', message, {
    hint: 'Continue the turn (the same turn id) once the cause has passed; the call runs again.',
    cause,
  });
}
