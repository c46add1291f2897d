import * as acp from '@agentclientprotocol/sdk';
import type { HarnessContinueInput, HarnessRunInput } from '../harness.ts';
import type { TurnGuards } from '../../core/hooks.ts';
import type { TurnHooks, TurnResult } from '../../engine/engine.ts';
import { emptyUsage, type HarnessStreamPart } from '../../engine/events.ts';
import type { NormalizedSchema } from '../../tools/schema.ts';
import type { ToolOutput } from '../../tools/tool.ts';
import { AcxError, HarnessCapabilityUnsupportedError, TurnAbortedError, errorMessage } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';
import { type ActiveTurn, cancelPermissions, holdCall, newActiveTurn, pendingOf, rejectHeld, requestApproval } from './active-turn.ts';
import type { AgentProcess } from './agent-process.ts';
import { HOST_MCP_SERVER_NAME, type HostCall, type HostTools } from './host-tools.ts';
import { withPath } from './launch-env.ts';
import { answerPermission, type PermissionPolicy } from './permission-requests.ts';
import { GuardedCalls, tripped } from './guarded-calls.ts';
import { promptBlocks, structuredOutput } from './prompt-content.ts';
import type { ACPSettings } from './settings.ts';
import { finishReasonOf, TurnTranslator, usageOf } from './translate.ts';

/**
 * The turns of one ACP session, one at a time: run() sends session/prompt and consumes its
 * updates; a turn pauses (returns with pendingToolCalls) while a held call waits for a result and
 * continue() resumes it; cancellation sends `session/cancel`, answers pending permission requests
 * with `cancelled`, and leaves the session ready for the next turn (or stops the agent if it does
 * not stop within the cancel grace).
 */

export interface TurnRunnerOptions {
  settings: ACPSettings;
  /** acx's session id (turn results carry it). */
  sessionId: string;
  log: Logger;
  hostTools: HostTools;
  outputSchema: NormalizedSchema | undefined;
  permissions: PermissionPolicy;
  /** The session's hooks and guardrails (absent: none set). */
  guards?: TurnGuards | undefined;
}

/** The agent side of the session, known once it is started. */
export interface AgentSide {
  proc: AgentProcess;
  agentSessionId: string;
  promptCapabilities: acp.PromptCapabilities | undefined;
  /** Instructions sent as a block ahead of the first prompt (profiles that map them nowhere else). */
  firstPromptInstructions: string | undefined;
}

export class TurnRunner {
  private current: ActiveTurn | undefined;
  /** A turn that returned with pendingToolCalls while its session/prompt is still in flight. */
  private paused: ActiveTurn | undefined;
  private busy = false;
  private dead: AcxError | undefined;
  private firstTurn = true;
  private refreshedVersion = 0;
  private agent: AgentSide | undefined;
  private readonly cancelGraceMs: number;
  private readonly options: TurnRunnerOptions;
  /** Where the hooks and tool guardrails are asked about host calls and permission requests. */
  readonly guarded: GuardedCalls | undefined;

  constructor(options: TurnRunnerOptions) {
    this.cancelGraceMs = options.settings.cancelGraceMs ?? 10_000;
    const guards = options.guards;
    this.guarded = guards
      ? new GuardedCalls({ guards, sessionId: options.sessionId, current: () => this.current, fail: (error) => this.failCurrent(error), log: options.log })
      : undefined;
    this.options = { ...options, permissions: { ...options.permissions, guarded: this.guarded } };
  }

  attach(agent: AgentSide): void {
    this.agent = agent;
    void agent.proc.exited.then((error) => {
      this.dead = error;
    });
  }

  get isPaused(): boolean {
    return this.paused !== undefined;
  }

  get hasRunATurn(): boolean {
    return !this.firstTurn;
  }

  // ---- callbacks of the agent process, the host tool server and the credential broker --------

  /** A session/update: translated into the current turn's parts; late updates of a finished or cancelled turn are dropped. */
  deliver(params: acp.SessionNotification): void {
    const active = this.current;
    if (!active || active.cancelled || params.sessionId !== this.agent?.agentSessionId) return;
    active.translator.handle(params.update);
  }

  async onPermission(params: acp.RequestPermissionRequest, signal: AbortSignal): Promise<acp.RequestPermissionResponse> {
    const active = params.sessionId === this.agent?.agentSessionId ? this.current : undefined;
    return answerPermission(this.options.permissions, active, params, signal);
  }

  /**
   * A call the caller answers: a host tool without `execute`, or the agent's question to the
   * user (askUserQuestions). It is held open, shown as a tool call, and the turn pauses until
   * continue() supplies its result (the ACP request stays in flight meanwhile).
   */
  hold(call: HostCall, signal?: AbortSignal): Promise<ToolOutput> {
    const active = this.current;
    if (!active || active.cancelled) {
      return Promise.reject(new AcxError('acp-no-turn', `${call.toolName} has no executor and no turn is waiting for its result.`));
    }
    const held = holdCall(active, call, signal);
    this.options.log.info('acp host call awaiting a result', { tool: call.toolName, toolCallId: call.toolCallId });
    return held;
  }

  /** A host tool that needs approval in this permission mode: asked of the current turn's handler. */
  approveHostCall(call: HostCall): Promise<boolean> {
    const active = this.current;
    return active ? requestApproval(active, call) : Promise.resolve(false);
  }

  /**
   * Ends the current turn with `error` from the host's side (its upstream is down): the agent is
   * told to cancel, but the caller gets the error, not an abort; the agent's own outcome is ignored.
   */
  failCurrent(error: AcxError): void {
    const active = this.current;
    if (!active || active.cancelled || active.failure) return;
    active.failure = error;
    cancelPermissions(active);
    this.notifyCancel();
    active.forceOutcome?.({ error });
  }

  // ---- turns ------------------------------------------------------------------------------------

  async run(runInput: HarnessRunInput): Promise<TurnResult> {
    const agent = this.ready();
    if (this.paused) {
      throw new AcxError('acp-turn-paused', 'This ACP session has a turn paused for host tool results, so it cannot take a new message yet.', {
        hint: `Continue it first with continueGenerate/continueStream({ session, toolResults }) for ${pendingOf(this.paused).map((c) => c.toolCallId).join(', ')} (or continue with an aborted abortSignal to cancel it).`,
      });
    }
    this.notBusy();
    this.busy = true;
    const { settings, hostTools } = this.options;
    const active = newActiveTurn(runInput, (emit) => new TurnTranslator({ emit, hostToolNames: hostTools.names, hostServerName: HOST_MCP_SERVER_NAME, builtinTools: settings.builtinTools }));
    try {
      if (runInput.abortSignal?.aborted) throw new TurnAbortedError();
      // The input guardrails, before the agent is sent anything of the message.
      const trip = await this.options.guards?.checkInput({ sessionId: this.options.sessionId, prompt: runInput.prompt });
      if (trip) throw tripped(trip, this.options.log);
      const blocks = promptBlocks(runInput.prompt, agent.promptCapabilities);
      if (this.firstTurn && agent.firstPromptInstructions) blocks.unshift({ type: 'text', text: `<instructions>\n${agent.firstPromptInstructions}\n</instructions>` });
      const { outputSchema } = this.options;
      const promptMeta = outputSchema && settings.outputSchemaMapping ? withPath(undefined, settings.outputSchemaMapping.path, outputSchema.jsonSchema) : undefined;
      const catalog = hostTools.catalog;
      if (catalog && catalog.version !== this.refreshedVersion) {
        // The catalog changed since the last turn: give connected agents a moment to handle
        // list_changed and refetch before the prompt, so a well-behaved agent sees new tools.
        this.refreshedVersion = catalog.version;
        if (!(await catalog.awaitRefresh(settings.toolRefreshGraceMs ?? 2000))) this.options.log.info('acp agent did not refetch host tools after list_changed');
      }
      catalog?.drainMissingCalls(); // calls between turns belong to no turn
      this.current = active;
      active.emit({ type: 'start', sessionId: this.options.sessionId, turnId: active.turnId, resumed: false });
      active.translator.start();
      this.firstTurn = false;
      const forced = new Promise<{ error: unknown }>((resolve) => (active.forceOutcome = resolve));
      const prompt = agent.proc.connection.agent.request(acp.methods.agent.session.prompt, { sessionId: agent.agentSessionId, prompt: blocks, ...(promptMeta ? { _meta: promptMeta } : {}) });
      active.outcome = Promise.race([
        agent.proc.call(prompt, 'session/prompt').then(
          (response) => ({ response }),
          (error: unknown) => ({ error }),
        ),
        forced,
      ]);
      return await this.drive(active, runInput, false);
    } finally {
      if (!active.outcome) this.end(active); // failed before the prompt was sent
      this.busy = false;
    }
  }

  async continue(continueInput: HarnessContinueInput): Promise<TurnResult> {
    this.ready();
    this.notBusy();
    const active = this.paused;
    if (!active) {
      throw new AcxError('acp-no-paused-turn', 'This ACP session has no turn waiting for tool results.', { hint: 'Send a new message with generate/stream instead.' });
    }
    if (continueInput.approvals && continueInput.approvals.length > 0) {
      throw new HarnessCapabilityUnsupportedError('ACP turns do not wait for approvals: they are answered inline through onApprovalRequest.', {
        hint: 'Continue this turn with toolResults only.',
      });
    }
    const results = continueInput.toolResults ?? [];
    const unknown = results.filter((r) => !active.held.has(r.toolCallId)).map((r) => r.toolCallId);
    if (unknown.length > 0) {
      throw new AcxError('acp-unknown-tool-call', `No paused tool call of this ACP session has the id ${unknown.join(', ')}.`, {
        hint: `Pending tool calls: ${[...active.held.keys()].join(', ') || 'none'}.`,
      });
    }
    this.busy = true;
    this.paused = undefined;
    try {
      const buffered = active.buffer ?? [];
      active.buffer = undefined;
      active.hooks = continueInput;
      active.emit = continueInput.emit ?? continueInput.observe ?? (() => {});
      active.emit({ type: 'start', sessionId: this.options.sessionId, turnId: active.turnId, resumed: true });
      if (!continueInput.abortSignal?.aborted) {
        for (const r of results) {
          const held = active.held.get(r.toolCallId);
          if (!held) continue; // listed twice
          active.held.delete(r.toolCallId);
          active.emit({ type: 'tool-result', toolCallId: held.toolCallId, toolName: held.toolName, input: held.input, output: r.output, providerExecuted: false } as HarnessStreamPart);
          active.translator.toolResults.push({ toolCallId: held.toolCallId, toolName: held.toolName, input: held.input, output: r.output });
          held.resolve(r.output as ToolOutput);
        }
      }
      active.translator.resume();
      for (const part of buffered) active.emit(part);
      return await this.drive(active, continueInput, true);
    } finally {
      this.busy = false;
    }
  }

  /** On close: a paused turn's held calls end with an error result, and the agent is told to cancel (and given a bounded moment to acknowledge, so it is not killed mid-prompt). */
  async closePaused(): Promise<void> {
    const p = this.paused;
    if (!p) return;
    this.cancel(p);
    this.end(p);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([p.outcome, new Promise<void>((r) => (timer = setTimeout(r, Math.min(this.cancelGraceMs, 2000))))]);
    clearTimeout(timer);
  }

  // ---- internals --------------------------------------------------------------------------------

  private ready(): AgentSide {
    if (this.dead) throw this.dead;
    if (!this.agent) throw new AcxError('acp-no-turn', 'This ACP session has not started its agent yet.');
    return this.agent;
  }

  private notBusy(): void {
    if (this.busy) throw new AcxError('acp-turn-in-progress', 'This ACP session is already running a turn.', { hint: 'Wait for the turn to finish or cancel it first.' });
  }

  private notifyCancel(): void {
    const agent = this.agent;
    if (agent) agent.proc.connection.agent.notify(acp.methods.agent.session.cancel, { sessionId: agent.agentSessionId }).catch(() => {});
  }

  /** Cancels a turn: session/cancel, pending permissions answered `cancelled`, held host calls ended with an error. */
  private cancel(active: ActiveTurn): void {
    if (active.cancelled) return;
    active.cancelled = true;
    cancelPermissions(active);
    rejectHeld(active, 'The turn was cancelled before the host supplied a result.');
    this.notifyCancel();
    // An agent that ignores session/cancel is stopped, so the caller never hangs — even when
    // its process tree keeps the connection's pipe open, the turn's outcome is ended here.
    active.killTimer = setTimeout(() => {
      void this.agent!.proc.stop().finally(() => active.forceOutcome?.({ error: new Error(`${this.options.settings.harnessId} ignored session/cancel and was stopped`) }));
    }, this.cancelGraceMs);
    active.killTimer.unref();
  }

  private end(active: ActiveTurn): void {
    if (active.killTimer) clearTimeout(active.killTimer);
    cancelPermissions(active);
    rejectHeld(active, 'The turn ended before the host supplied a result.');
    if (this.current === active) this.current = undefined;
    if (this.paused === active) this.paused = undefined;
  }

  /** Returns from run()/continue() while held host calls wait; later parts are buffered for continue(). */
  private pause(active: ActiveTurn, resumed: boolean): TurnResult {
    const pendingToolCalls = pendingOf(active);
    const steps = active.translator.step;
    const usage = emptyUsage();
    active.translator.pause();
    active.emit({ type: 'finish', finishReason: 'tool-calls', totalUsage: usage });
    const buffer: HarnessStreamPart[] = [];
    active.buffer = buffer;
    active.emit = (part) => buffer.push(part);
    this.paused = active;
    this.options.log.info('acp turn paused', { awaiting_results: pendingToolCalls.length });
    return {
      sessionId: this.options.sessionId,
      turnId: active.turnId,
      text: '',
      unspoken: undefined,
      output: undefined,
      finishReason: 'tool-calls',
      usage,
      steps,
      toolCalls: [...active.translator.toolCalls],
      toolResults: [...active.translator.toolResults],
      pendingApprovals: [],
      pendingToolCalls,
      resumed,
    };
  }

  /** Consumes the prompt's updates until its stop reason, or pauses while a host call waits for a result. */
  private async drive(active: ActiveTurn, hooks: TurnHooks, resumed: boolean): Promise<TurnResult> {
    const onAbort = () => this.cancel(active);
    hooks.abortSignal?.addEventListener('abort', onAbort, { once: true });
    let pausedAgain = false;
    try {
      if (hooks.abortSignal?.aborted) this.cancel(active);
      let outcome: { response: acp.PromptResponse } | { error: unknown };
      for (;;) {
        if (!active.cancelled && active.held.size > 0) {
          pausedAgain = true;
          return this.pause(active, resumed);
        }
        const woke = new Promise<'held'>((resolve) => {
          active.wake = () => resolve('held');
        });
        const next = await Promise.race([active.outcome!, woke]);
        active.wake = undefined;
        if (next !== 'held') {
          outcome = next;
          break;
        }
      }
      return await this.finish(active, outcome, resumed);
    } finally {
      hooks.abortSignal?.removeEventListener('abort', onAbort);
      active.wake = undefined;
      if (!pausedAgain) this.end(active);
    }
  }

  /**
   * The turn's result from the prompt's outcome: an abort, the agent's error, or its answer — once
   * the output guardrails passed it (a trip: GuardrailTrippedError instead of the result; the
   * agent's own history still holds its reply, which acx cannot edit).
   */
  private async finish(active: ActiveTurn, outcome: { response: acp.PromptResponse } | { error: unknown }, resumed: boolean): Promise<TurnResult> {
    const { settings } = this.options;
    if ('error' in outcome) {
      if (active.cancelled) {
        active.emit({ type: 'abort' });
        throw new TurnAbortedError();
      }
      const error = outcome.error;
      throw AcxError.isInstance(error) ? error : new AcxError('acp-prompt-failed', `${settings.harnessId} failed the prompt: ${errorMessage(error)}`, { cause: error });
    }
    const response = outcome.response;
    if (active.cancelled || response.stopReason === 'cancelled') {
      active.emit({ type: 'abort' });
      throw new TurnAbortedError();
    }
    this.checkStaleTools();
    const translator = active.translator;
    const trip = await this.options.guards?.checkOutput({ sessionId: this.options.sessionId, turnId: active.turnId, text: translator.text });
    if (trip) throw tripped(trip, this.options.log);
    const finishReason = finishReasonOf(response.stopReason);
    const usage = usageOf(response);
    translator.finish(finishReason);
    active.emit({ type: 'finish', finishReason, totalUsage: usage });
    const output = this.options.outputSchema ? structuredOutput(settings.harnessId, translator.text, this.options.outputSchema) : undefined;
    return {
      sessionId: this.options.sessionId,
      turnId: active.turnId,
      text: translator.text,
      unspoken: undefined,
      output,
      finishReason,
      usage,
      steps: translator.step,
      toolCalls: translator.toolCalls,
      toolResults: translator.toolResults,
      pendingApprovals: [],
      pendingToolCalls: [],
      resumed,
    };
  }

  /** Fails the turn when the agent called host tools acx removed without refetching tools/list. */
  private checkStaleTools(): void {
    const { settings, log, hostTools } = this.options;
    const missing = hostTools.catalog?.drainMissingCalls() ?? [];
    const stale = missing.filter((c) => c.removed && !c.refreshed);
    for (const call of missing.filter((c) => !stale.includes(c))) log.warn('acp agent called a tool the host does not provide', { tool: call.toolName });
    if (stale.length > 0) {
      const names = [...new Set(stale.map((c) => c.toolName))].join(', ');
      throw new HarnessCapabilityUnsupportedError(
        `${settings.harnessId} kept stale host tools: it called ${names}, which acx no longer provides, without refetching tools/list after notifications/tools/list_changed. Current tools: ${hostTools.catalog!.names().join(', ') || 'none'}.`,
        { hint: 'This agent does not refresh its MCP tool list: open a new session after changing the tools.' },
      );
    }
  }
}
