import type { UserContent } from 'ai';
import { AcxError, errorMessage } from '../core/errors.ts';
import type {
  AfterToolCallResult,
  BeforeModelCallResult,
  BeforeToolCallResult,
  CallDecision,
  Guardrail,
  GuardrailKind,
  GuardrailTrip,
  GuardrailVerdict,
  InputGuardrailArgs,
  ModelCallInfo,
  OutputGuardrailArgs,
  ToolCallInfo,
  ToolCallOutcome,
  TurnGuards,
} from '../core/hooks.ts';
import { textOf } from '../engine/transcript.ts';

/**
 * Hooks and guardrails as a HarnessAgent's user sets them, and the TurnGuards a harness asks at
 * its decision points. The agent's and the session's are layers: a session's hooks and guardrails
 * ADD to the agent's, never replace them (a session cannot switch off what the agent requires),
 * and run after them — a session's beforeToolCall sees the input as the agent's left it.
 */

type Awaitable<T> = T | PromiseLike<T>;

export interface AgentHooks<RESULT = unknown> {
  /** Before a tool call runs: allow, deny with a reason the model reads, rewrite its input, or nothing (permissions decide). */
  beforeToolCall?: (call: ToolCallInfo) => Awaitable<BeforeToolCallResult>;
  /** After a call acx ran, before its result is journaled: replace the output or the error (e.g. redact). */
  afterToolCall?: (outcome: ToolCallOutcome) => Awaitable<AfterToolCallResult>;
  /** Before each model call (engine only): inspect the request, narrow the tools it offers. */
  beforeModelCall?: (request: ModelCallInfo) => Awaitable<BeforeModelCallResult>;
  /** When a call on the session returns (`result`) or fails (`error`): observes, changes nothing. */
  afterTurn?: (event: AfterTurnEvent<RESULT>) => Awaitable<void>;
}

export type AfterTurnEvent<RESULT = unknown> = { sessionId: string; result: RESULT; error?: undefined } | { sessionId: string; result?: undefined; error: unknown };

export interface AgentGuardrails {
  /** Checked on each new message, before the model (or the ACP agent) is sent it. */
  input?: ReadonlyArray<Guardrail<InputGuardrailArgs>>;
  /** Checked on the turn's final text, before it is returned or recorded as the answer. */
  output?: ReadonlyArray<Guardrail<OutputGuardrailArgs>>;
  /** Checked on each tool call acx decides about, after the beforeToolCall hooks, before it runs. */
  tool?: ReadonlyArray<Guardrail<ToolCallInfo>>;
}

/** One layer: the agent's settings, or a session's. */
export interface GuardLayer<RESULT = unknown> {
  hooks?: AgentHooks<RESULT> | undefined;
  guardrails?: AgentGuardrails | undefined;
}

const HOOK_NAMES = ['beforeToolCall', 'afterToolCall', 'beforeModelCall', 'afterTurn'] as const;
const GUARDRAIL_KINDS: readonly GuardrailKind[] = ['input', 'output', 'tool'];

/** Checks the layers' shapes (a clear error for a typo, before any turn runs). */
function validate<RESULT>(layers: readonly GuardLayer<RESULT>[]): void {
  for (const { hooks, guardrails } of layers) {
    for (const [name, hook] of Object.entries(hooks ?? {})) {
      if (!(HOOK_NAMES as readonly string[]).includes(name)) {
        throw new AcxError('config', `hooks.${name} is not a hook acx knows.`, { hint: `The hooks: ${HOOK_NAMES.join(', ')}.` });
      }
      if (hook !== undefined && typeof hook !== 'function') throw new AcxError('config', `hooks.${name} must be a function.`);
    }
    for (const kind of Object.keys(guardrails ?? {})) {
      if (!(GUARDRAIL_KINDS as readonly string[]).includes(kind)) {
        throw new AcxError('config', `guardrails.${kind} is not a kind of guardrail acx knows.`, { hint: `The kinds: ${GUARDRAIL_KINDS.join(', ')}.` });
      }
    }
  }
  for (const kind of GUARDRAIL_KINDS) {
    const seen = new Set<string>();
    for (const guardrail of layers.flatMap((layer): ReadonlyArray<Guardrail<never>> => layer.guardrails?.[kind] ?? [])) {
      if (typeof guardrail?.name !== 'string' || guardrail.name === '' || typeof guardrail.check !== 'function') {
        throw new AcxError('config', `A ${kind} guardrail needs a name and a check function.`, { hint: "Write it as { name: 'no-secrets', check: (args) => ({ tripped: false }) }." });
      }
      if (seen.has(guardrail.name)) {
        throw new AcxError('config', `Two ${kind} guardrails are named "${guardrail.name}" (the agent's and the session's together).`, {
          hint: 'A tripped guardrail is reported by its name: give each its own.',
        });
      }
      seen.add(guardrail.name);
    }
  }
}

/** What a hook or guardrail threw, as the `hook-failed` error the turn fails with. */
function failed(what: string, error: unknown): AcxError {
  return new AcxError('hook-failed', `${what} failed: ${errorMessage(error)}`, {
    hint: 'Fix the hook or guardrail; the turn is recorded as failed, and nothing it guarded ran.',
    cause: error,
  });
}

async function ask<T>(what: string, run: () => Awaitable<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw AcxError.hasCode(error, 'hook-failed') ? error : failed(what, error);
  }
}

/**
 * Runs a kind's guardrails together (each is a check, none acts, so none waits for another) and
 * reports the first that tripped in the order they were set.
 */
async function firstTrip<ARGS>(kind: GuardrailKind, guardrails: ReadonlyArray<Guardrail<ARGS>>, args: ARGS): Promise<GuardrailTrip | undefined> {
  const verdicts = await Promise.all(guardrails.map((g) => ask<GuardrailVerdict | undefined | void>(`The ${kind} guardrail "${g.name}"`, () => g.check(args))));
  const index = verdicts.findIndex((verdict) => verdict?.tripped === true);
  if (index < 0) return undefined;
  const guardrail = guardrails[index]!;
  return { guardrail: guardrail.name, kind, reason: verdicts[index]?.reason || `the ${kind} guardrail "${guardrail.name}" tripped` };
}

/**
 * The TurnGuards of these layers, or undefined when none sets anything (then no decision is asked
 * or journaled, and turns run exactly as without hooks).
 */
export function guardsOf<RESULT>(layers: ReadonlyArray<GuardLayer<RESULT> | undefined>): TurnGuards | undefined {
  const set = layers.filter((layer): layer is GuardLayer<RESULT> => layer !== undefined);
  validate(set);
  const hooks = <K extends (typeof HOOK_NAMES)[number]>(name: K) =>
    set.map((layer) => layer.hooks?.[name]).filter((hook): hook is NonNullable<AgentHooks<RESULT>[K]> => typeof hook === 'function');
  const before = hooks('beforeToolCall');
  const after = hooks('afterToolCall');
  const beforeModel = hooks('beforeModelCall');
  const input = set.flatMap((layer) => layer.guardrails?.input ?? []);
  const output = set.flatMap((layer) => layer.guardrails?.output ?? []);
  const tool = set.flatMap((layer) => layer.guardrails?.tool ?? []);
  if (before.length + after.length + beforeModel.length + input.length + output.length + tool.length === 0) return undefined;

  return {
    hasBeforeModelCall: beforeModel.length > 0,
    hasAfterToolCall: after.length > 0,
    hasOutputGuardrails: output.length > 0,
    checkInput: ({ sessionId, prompt }) => firstTrip('input', input, { sessionId, prompt, text: promptText(prompt) }),
    checkOutput: (args) => firstTrip('output', output, args),
    async decideCall(call): Promise<CallDecision> {
      let current = call.input;
      let rewritten = false;
      let allowed = false;
      for (const hook of before) {
        const answer = await ask('beforeToolCall', () => hook({ ...call, input: current }));
        if (answer === undefined) continue;
        if (answer?.decision === 'deny') {
          if (typeof answer.reason !== 'string' || answer.reason === '') throw failed('beforeToolCall', new Error('a deny needs a reason (the model reads it)'));
          return { decision: 'deny', reason: answer.reason };
        }
        if (answer?.decision === 'allow') allowed = true;
        else if (answer?.decision === 'rewrite' && 'input' in answer) {
          current = answer.input;
          rewritten = true;
        } else throw failed('beforeToolCall', new Error(`it answered ${JSON.stringify(answer)}; answer nothing, { decision: 'allow' }, { decision: 'deny', reason } or { decision: 'rewrite', input }`));
      }
      const trip = await firstTrip('tool', tool, { ...call, input: current });
      if (trip) return { decision: 'tripped', guardrail: trip.guardrail, reason: trip.reason };
      return { decision: allowed ? 'allow' : 'pass', ...(rewritten ? { input: current } : {}) };
    },
    async afterCall(outcome): Promise<ToolCallOutcome> {
      let current = outcome;
      for (const hook of after) {
        const answer = await ask('afterToolCall', () => hook(current));
        if (answer === undefined) continue;
        const { output: _output, error: _error, ...call } = current;
        if (answer && 'error' in answer && typeof answer.error === 'string') current = { ...call, error: answer.error };
        else if (answer && 'output' in answer) current = { ...call, output: answer.output };
        else throw failed('afterToolCall', new Error(`it answered ${JSON.stringify(answer)}; answer nothing, { output } or { error }`));
      }
      return current;
    },
    async beforeModelCall(request) {
      let active: readonly string[] | undefined;
      for (const hook of beforeModel) {
        const answer = await ask('beforeModelCall', () => hook({ ...request, tools: active ?? request.tools }));
        if (answer === undefined) continue;
        const names = answer?.activeTools;
        if (!Array.isArray(names)) throw failed('beforeModelCall', new Error(`it answered ${JSON.stringify(answer)}; answer nothing or { activeTools: [names] }`));
        const unknown = names.filter((name) => !request.tools.includes(name));
        if (unknown.length > 0) throw failed('beforeModelCall', new Error(`activeTools names ${unknown.join(', ')}, not among the call's tools (${request.tools.join(', ') || 'none'})`));
        // Narrowing only: a later hook cannot offer back what an earlier one took away.
        active = (active ?? request.tools).filter((name) => names.includes(name));
      }
      return active;
    },
  };
}

function promptText(prompt: string | UserContent): string {
  return textOf({ role: 'user', content: prompt });
}

/** The afterTurn hooks of the layers as one observer (undefined when none is set). */
export function afterTurnOf<RESULT>(layers: ReadonlyArray<GuardLayer<RESULT> | undefined>): ((event: AfterTurnEvent<RESULT>) => Promise<void>) | undefined {
  const observers = layers.map((layer) => layer?.hooks?.afterTurn).filter((hook) => typeof hook === 'function');
  if (observers.length === 0) return undefined;
  return async (event) => {
    for (const observe of observers) await observe(event);
  };
}
