import type { CallDecision } from '../../core/hooks.ts';
import type { CallRecord } from '../../store/journal.ts';
import type { ToolEffect } from '../../tools/tool.ts';
import { canonicalJson } from '../../util/jcs.ts';
import type { HostOutcome } from './turn-journal.ts';

/**
 * What a turn taken up again (after a crash, or in another process) already did, read from its
 * call ledger, and how each call the agent makes again is answered — the ACP form of the engine's
 * recovery by evidence. A call is "made again" when the tool and its arguments (canonical JSON)
 * are the same:
 *   - a host call that finished, or a held call whose result was supplied → its recorded outcome;
 *     it does not run again;
 *   - a host call that started and has no outcome → run again only when its tool is read-only or
 *     idempotent (under its first idempotency key); otherwise refused: whether it took effect is
 *     unknown, so running it again could do it twice;
 *   - an approval that was decided → the decision, without asking again;
 *   - a call the hooks and tool guardrails decided → their decision, without asking them again.
 * Each record answers one call: an agent may mean to make the same call twice, and only the
 * repeats of what the journal shows are taken from it.
 */

export type RecordedHostCall = { kind: 'done'; outcome: HostOutcome } | { kind: 'unknown' } | { kind: 'rerun'; idempotencyKey: string };

export class RecordedCalls {
  private readonly hostCalls = new Map<string, CallRecord[]>();
  private readonly decisions = new Map<string, CallRecord[]>();
  private readonly hookDecisions = new Map<string, CallRecord[]>();

  constructor(calls: readonly CallRecord[]) {
    for (const call of calls) {
      const key = keyOf(call.toolName, call.input);
      if (call.status === 'done' || call.status === 'started') push(this.hostCalls, key, call);
      else if (call.approval) push(this.decisions, key, call);
      if (call.decision) push(this.hookDecisions, key, call);
    }
  }

  /** How a host call the agent makes now is answered from the record, if it repeats one. */
  takeHostCall(toolName: string, input: unknown, effect: ToolEffect): RecordedHostCall | undefined {
    const call = this.hostCalls.get(keyOf(toolName, input))?.shift();
    if (!call) return undefined;
    if (call.status === 'done') return { kind: 'done', outcome: call.result as HostOutcome };
    return effect === 'read-only' || effect === 'idempotent' ? { kind: 'rerun', idempotencyKey: call.callId } : { kind: 'unknown' };
  }

  /** The decision recorded for an approval the agent asks for again, if it repeats one. */
  takeDecision(toolName: string, input: unknown): { approved: boolean; reason?: string } | undefined {
    return this.decisions.get(keyOf(toolName, input))?.shift()?.approval ?? undefined;
  }

  /** What the hooks and tool guardrails decided about a call the agent makes again, if it repeats one. */
  takeHookDecision(toolName: string, input: unknown): CallDecision | undefined {
    return this.hookDecisions.get(keyOf(toolName, input))?.shift()?.decision ?? undefined;
  }
}

function keyOf(toolName: string, input: unknown): string {
  return `${toolName}\u0000${canonicalJson(input ?? null)}`;
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
