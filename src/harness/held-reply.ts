import type { TurnHooks } from '../engine/engine.ts';
import type { HarnessStreamPart } from '../engine/events.ts';

type PartHooks = Pick<TurnHooks, 'emit' | 'observe'>;

/**
 * Runs a turn whose reply the output guardrails must pass before anyone sees it: the parts of
 * the reply — from its first text delta on, in order — are held back from the stream and the
 * step callbacks until the turn ends, then released when it succeeded, or released without their
 * text when it failed (a tripped output guardrail: the text was never shown). A tool call ends
 * the holding: text before it is the step's narration, not the reply (the engine's guardrails
 * check the final step's text). Without output guardrails the parts pass as they come.
 */
export async function withHeldReply<T>(hold: boolean, parts: PartHooks, run: (parts: PartHooks) => Promise<T>): Promise<T> {
  const sinks = [parts.emit, parts.observe].filter((sink) => sink !== undefined);
  if (!hold || sinks.length === 0) return run(parts);
  const pass = (part: HarnessStreamPart) => {
    for (const sink of sinks) sink(part);
  };
  const held: HarnessStreamPart[] = [];
  const release = (keepText: boolean) => {
    for (const part of held.splice(0)) if (keepText || part.type !== 'text-delta') pass(part);
  };
  const take = (part: HarnessStreamPart) => {
    if (part.type === 'tool-call') release(true);
    if (held.length > 0 || part.type === 'text-delta') held.push(part);
    else pass(part);
  };
  // Streaming stays streaming (the harness asks for streamed model calls when `emit` is set); every sink sees the same parts in order.
  const holding: PartHooks = parts.emit ? { emit: take } : { observe: take };
  try {
    const result = await run(holding);
    release(true);
    return result;
  } catch (error) {
    release(false);
    throw error;
  }
}
