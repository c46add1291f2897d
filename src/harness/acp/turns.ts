import { randomUUID } from 'node:crypto';
import * as acp from '@agentclientprotocol/sdk';
import type { HarnessContinueInput, HarnessRunInput } from '../harness.ts';
import type { TurnGuards } from '../../core/hooks.ts';
import type { TurnHooks, TurnResult } from '../../engine/engine.ts';
import { startTurnTelemetry } from '../../engine/telemetry.ts';
import type { NormalizedSchema } from '../../tools/schema.ts';
import type { ToolOutput } from '../../tools/tool.ts';
import { AcxError, HarnessCapabilityUnsupportedError, TurnAbortedError, errorMessage } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';
import { type ActiveTurn, cancelPermissions, newActiveTurn, pendingOf, rejectHeld } from './active-turn.ts';
import type { AgentProcess } from './agent-process.ts';
import { decide, holdForResult, runHostCall } from './host-calls.ts';
import { HOST_MCP_SERVER_NAME, type HostCall, type HostRun, type HostTools } from './host-tools.ts';
import { withPath } from './launch-env.ts';
import { answerPermission, type PermissionPolicy } from './permission-requests.ts';
import { GuardedCalls, tripped } from './guarded-calls.ts';
import { promptBlocks, structuredOutput } from './prompt-content.ts';
import type { ACPSettings } from './settings.ts';
import { takeUp } from './taking-up.ts';
import { finishReasonOf, TurnTranslator, usageOf } from './translate.ts';
import type { TurnDriver } from './turn-driver.ts';
import type { TurnJournal } from './turn-journal.ts';
import { turnClaimed } from '../../engine/recovery.ts';
import { resultOf } from './turn-results.ts';
import { type WaitingPort, WaitingTurns } from './waiting-turns.ts';

/**
 * The turns of one ACP session, one at a time, journaled as they run (turn-journal.ts): run()
 * sends session/prompt and consumes its updates; a turn pauses (returns with pending approvals or
 * tool calls) while the caller's answer is awaited, its ACP request held open, and continue()
 * resumes it; cancellation sends `session/cancel`, answers pending permission requests with
 * `cancelled`, and leaves the session ready for the next turn (or stops the agent if it does not
 * stop within the cancel grace).
 *
 * A turn is taken up from the journal (takeUp) when this process did not run it: one interrupted
 * by the death of the process that drove it, or one paused there. The agent's session is reopened
 * and told what happened (resume-note.ts), and the calls it makes again are answered by what the
 * journal shows (recorded-calls.ts), so no host tool with side effects runs twice. While the
 * process that paused a turn still holds it, an answer given elsewhere is handed to it through the
 * journal (turn-watch.ts) and the answering call waits for the turn's end there.
 */

export interface TurnRunnerOptions {
  settings: ACPSettings;
  /** acx's session id (turn results carry it). */
  sessionId: string;
  log: Logger;
  hostTools: HostTools;
  outputSchema: NormalizedSchema | undefined;
  permissions: PermissionPolicy;
  journal: TurnJournal;
  driver: TurnDriver;
  /** The model the agent was asked for (for the turn's spans). */
  model: string | undefined;
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
  /** The agent reopened the kept session (session/resume or session/load): it has the history of turns run before. */
  reopened: boolean;
  /** Another process can reopen this session later: the agent offers session/resume or session/load, and the sandbox keeps the session. */
  reopenable: boolean;
  /** Turns this agent process ran (it has their history even when it did not reopen anything). */
  ranTurns: Set<string>;
  /** Stops the agent process and releases what it owned (its credential broker). */
  stop(): Promise<void>;
}

type Outcome = { response: acp.PromptResponse } | { error: unknown };

export class TurnRunner implements WaitingPort {
  private current: ActiveTurn | undefined;
  /** The turn that waits for the caller, paused or suspended (waiting-turns.ts). */
  private readonly waiting = new WaitingTurns(this);
  /** A call runs on the session now (run, continue, or a turn answered elsewhere going on here). */
  busy = false;
  private dead: AcxError | undefined;
  private firstTurn = true;
  private refreshedVersion = 0;
  private agent: AgentSide | undefined;
  private starting: Promise<AgentSide> | undefined;
  private startAgent: (() => Promise<AgentSide>) | undefined;
  readonly cancelGraceMs: number;
  readonly options: TurnRunnerOptions;
  /** Where the hooks and tool guardrails are asked about host calls and permission requests. */
  readonly guarded: GuardedCalls | undefined;

  constructor(options: TurnRunnerOptions) {
    this.cancelGraceMs = options.settings.cancelGraceMs ?? 10_000;
    const guards = options.guards;
    this.guarded = guards
      ? new GuardedCalls({ guards, sessionId: options.sessionId, journal: options.journal, current: () => this.current, fail: (error) => this.failCurrent(error), log: options.log })
      : undefined;
    this.options = { ...options, permissions: { ...options.permissions, guarded: this.guarded } };
  }

  /** How the agent side is started: now (open), and again after this process let it go. */
  setAgentStarter(start: () => Promise<AgentSide>): void {
    this.startAgent = start;
  }

  /** The agent side, started if it is not running (a crashed agent stays an error: open a new session). */
  async agentReady(): Promise<AgentSide> {
    if (this.dead) throw this.dead;
    if (this.agent) return this.agent;
    if (!this.startAgent) throw new AcxError('acp-no-turn', 'This ACP session has not started its agent yet.');
    this.starting ??= this.startAgent().finally(() => (this.starting = undefined));
    const agent = await this.starting;
    this.agent = agent;
    void agent.proc.exited.then((error) => {
      if (this.agent === agent) this.dead = error;
    });
    return agent;
  }

  get isPaused(): boolean {
    return this.waiting.paused !== undefined;
  }

  /** The agent's own id for the session, once its agent is started. */
  get agentSessionId(): string | undefined {
    return this.agent?.agentSessionId;
  }

  get hasRunATurn(): boolean {
    return !this.firstTurn;
  }

  /** Whether suspendTurn() can pause a turn here: it is journaled, and the agent's session can be reopened to go on. */
  get canSuspend(): boolean {
    return this.options.journal.durable && this.agent?.reopenable === true;
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
    return answerPermission(this.options.permissions, active, params, signal, (turn, request) => decide(this.options, turn, request));
  }

  /** A call the caller answers (host-calls.ts, holdForResult). */
  hold(call: HostCall, signal?: AbortSignal): Promise<ToolOutput> {
    const active = this.current;
    if (!active || active.cancelled) {
      return Promise.reject(new AcxError('acp-no-turn', `${call.toolName} has no executor and no turn is waiting for its result.`));
    }
    return holdForResult(this.options, active, call, signal);
  }

  /** A host tool that needs approval in this permission mode: decided as the agent's own requests are. */
  async approveHostCall(call: HostCall): Promise<boolean> {
    const active = this.current;
    if (!active || active.cancelled) return false;
    return (await decide(this.options, active, { approvalId: call.toolCallId, ...call })).approved;
  }

  /** A host tool with `execute`, run for the agent (host-calls.ts). */
  runHostCall(call: HostRun, execute: (idempotencyKey?: string) => Promise<ToolOutput>): Promise<ToolOutput> {
    return runHostCall(this.options, this.current, call, execute);
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
    if (this.waiting.paused) {
      throw new AcxError('acp-turn-paused', 'This ACP session has a turn paused for host tool results or approvals, so it cannot take a new message yet.', {
        hint: `Continue it first with continueGenerate/continueStream({ session, toolResults, approvals }) for ${[...pendingOf(this.waiting.paused).map((c) => c.toolCallId), ...this.waiting.paused.approvals.keys()].join(', ')} (or continue with an aborted abortSignal to cancel it).`,
      });
    }
    this.notBusy();
    this.busy = true;
    const { settings, hostTools, journal } = this.options;
    const active = this.newTurn(randomUUID(), runInput);
    try {
      const agent = await this.agentReady();
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
      // Durability: the turn and its prompt are journaled before the prompt is sent.
      await journal.startTurn(active.turnId, runInput.prompt);
      await this.begin(active, agent, runInput, { hold: true, announce: true, prompt: runInput.prompt });
      this.firstTurn = false;
      this.send(active, agent, blocks, promptMeta);
      return await this.drive(active, runInput, false);
    } finally {
      if (!active.outcome) this.end(active); // failed before the prompt was sent
      this.busy = false;
    }
  }

  async continue(input: HarnessContinueInput): Promise<TurnResult> {
    this.notBusy();
    if (this.waiting.paused) return this.waiting.continuePaused(this.waiting.paused, input);
    const turn = await this.options.journal.unfinished();
    if (!turn) {
      throw new AcxError('acp-no-paused-turn', 'This ACP session has no turn waiting for tool results or approvals.', { hint: 'Send a new message with generate/stream instead.' });
    }
    this.busy = true;
    try {
      return await takeUp(this, turn, input);
    } finally {
      this.busy = false;
    }
  }

  /**
   * Claims the suspended turn for this call (first answer wins, in any process): a turn claimed
   * elsewhere is refused here. The turn's hold ends: this call goes on with it.
   */
  async claim(turnId: string, input: HarnessContinueInput, active?: ActiveTurn): Promise<void> {
    if (input.claimSuspended !== undefined && input.claimSuspended !== turnId) throw turnClaimed(turnId, this.options.sessionId);
    this.waiting.stopHolding();
    if (active) active.claimed = true;
    if (!(await this.options.journal.claim(turnId))) {
      if (active) active.claimed = false;
      throw turnClaimed(turnId, this.options.sessionId);
    }
  }

  /** On close: a paused turn is let go (see release), nothing is held any more, and the agent is stopped. */
  async close(): Promise<void> {
    const p = this.waiting.paused;
    this.waiting.stopHolding();
    if (p) await this.waiting.release(p, 'the session closed');
    else await this.options.driver.release().catch(() => {});
    await this.stopAgent();
  }

  // ---- internals --------------------------------------------------------------------------------

  newTurn(turnId: string, hooks: TurnHooks): ActiveTurn {
    const { settings, hostTools } = this.options;
    return newActiveTurn(turnId, hooks, (emit) => new TurnTranslator({ emit, hostToolNames: hostTools.names, hostServerName: HOST_MCP_SERVER_NAME, builtinTools: settings.builtinTools }));
  }

  telemetryFor(turnId: string, hooks: TurnHooks, prompt: HarnessRunInput['prompt']) {
    const { settings, sessionId, model } = this.options;
    return startTurnTelemetry(settings.telemetry, {
      sessionId,
      turnId,
      streaming: hooks.emit !== undefined,
      model: { provider: `acp.${settings.harnessId}`, modelId: model ?? 'default' },
      prompt: typeof prompt === 'string' ? prompt : JSON.stringify(prompt),
    });
  }

  /** The turn becomes this session's current one: its driver record (unless held already), its spans and first parts. */
  async begin(active: ActiveTurn, agent: AgentSide, hooks: TurnHooks, how: { hold: boolean; announce: boolean; prompt: HarnessRunInput['prompt'] }): Promise<void> {
    if (how.hold) await this.options.driver.hold(active.turnId);
    agent.ranTurns.add(active.turnId);
    active.telemetry = await this.telemetryFor(active.turnId, hooks, how.prompt);
    this.current = active;
    if (how.announce) active.emit({ type: 'start', sessionId: this.options.sessionId, turnId: active.turnId, resumed: active.recorded !== undefined });
    active.translator.start();
  }

  send(active: ActiveTurn, agent: AgentSide, blocks: acp.ContentBlock[], meta: Record<string, unknown> | undefined): void {
    const forced = new Promise<{ error: unknown }>((resolve) => (active.forceOutcome = resolve));
    const prompt = agent.proc.connection.agent.request(acp.methods.agent.session.prompt, { sessionId: agent.agentSessionId, prompt: blocks, ...(meta ? { _meta: meta } : {}) });
    active.outcome = Promise.race([
      agent.proc.call(prompt, 'session/prompt').then(
        (response) => ({ response }),
        (error: unknown) => ({ error }),
      ),
      forced,
    ]);
  }

  private notBusy(): void {
    if (this.busy) throw new AcxError('acp-turn-in-progress', 'This ACP session is already running a turn.', { hint: 'Wait for the turn to finish or cancel it first.' });
  }

  private notifyCancel(): void {
    const agent = this.agent;
    if (agent) agent.proc.connection.agent.notify(acp.methods.agent.session.cancel, { sessionId: agent.agentSessionId }).catch(() => {});
  }

  /** Cancels a turn: session/cancel, pending permissions answered `cancelled`, held host calls ended with an error. */
  cancel(active: ActiveTurn): void {
    if (active.cancelled) return;
    active.cancelled = true;
    cancelPermissions(active);
    rejectHeld(active, 'The turn was cancelled before the host supplied a result.');
    this.notifyCancel();
    // An agent that ignores session/cancel is stopped, so the caller never hangs — even when
    // its process tree keeps the connection's pipe open, the turn's outcome is ended here.
    const agent = this.agent;
    active.killTimer = setTimeout(() => {
      void (agent ? agent.proc.stop() : Promise.resolve()).finally(() => active.forceOutcome?.({ error: new Error(`${this.options.settings.harnessId} ignored session/cancel and was stopped`) }));
    }, this.cancelGraceMs);
    active.killTimer.unref();
  }

  /** suspendTurn(): once the host calls running now have finished (their outcomes journaled), the agent is told to stop. */
  private async requestPause(active: ActiveTurn): Promise<void> {
    if (active.pauseRequested || active.cancelled) return;
    active.pauseRequested = true;
    await Promise.allSettled([...active.running]);
    this.cancel(active);
  }

  end(active: ActiveTurn): void {
    if (active.killTimer) clearTimeout(active.killTimer);
    cancelPermissions(active);
    rejectHeld(active, 'The turn ended before the host supplied a result.');
    if (this.current === active) this.current = undefined;
    if (this.waiting.paused === active) this.waiting.paused = undefined;
  }

  async stopAgent(): Promise<void> {
    const agent = this.agent;
    this.agent = undefined;
    await agent?.stop();
  }

  /** Consumes the prompt's updates until its stop reason, or pauses while the turn waits for the caller. */
  async drive(active: ActiveTurn, hooks: TurnHooks, resumed: boolean): Promise<TurnResult> {
    const onAbort = () => this.cancel(active);
    const onPause = () => void this.requestPause(active);
    hooks.abortSignal?.addEventListener('abort', onAbort, { once: true });
    hooks.pauseSignal?.addEventListener('abort', onPause, { once: true });
    let pausedAgain = false;
    try {
      if (hooks.abortSignal?.aborted) this.cancel(active);
      else if (hooks.pauseSignal?.aborted) onPause();
      let outcome: Outcome;
      for (;;) {
        if (!active.cancelled && (active.held.size > 0 || active.approvals.size > 0)) {
          pausedAgain = true;
          return await this.waiting.pause(active, resumed);
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
      if (active.pauseRequested && !hooks.abortSignal?.aborted && !active.failure && stoppedByCancel(outcome)) return await this.waiting.suspendOnRequest(active, resumed);
      return await this.finish(active, outcome, resumed);
    } catch (error) {
      await this.recordEnd(active, error);
      throw error;
    } finally {
      hooks.abortSignal?.removeEventListener('abort', onAbort);
      hooks.pauseSignal?.removeEventListener('abort', onPause);
      active.wake = undefined;
      if (!pausedAgain) this.end(active);
    }
  }

  /** A turn that ended in an error or an abort, journaled as such (a released turn waits in the journal instead). */
  private async recordEnd(active: ActiveTurn, error: unknown): Promise<void> {
    active.telemetry.end({ error });
    if (active.released) return;
    const { journal, log } = this.options;
    const write = TurnAbortedError.isInstance(error) ? journal.cancel(active.turnId) : journal.fail(active.turnId, errorMessage(error));
    await write.catch((e: unknown) => log.error('acp journal write failed', { reason: errorMessage(e) }));
    await this.options.driver.release().catch(() => {});
  }

  /**
   * The turn's result from the prompt's outcome: an abort, the agent's error, or its answer — once
   * the output guardrails passed it (a trip: GuardrailTrippedError instead, the turn journaled as
   * failed; the agent's own history still holds its reply, which acx cannot edit) — journaled
   * before it is returned.
   */
  private async finish(active: ActiveTurn, outcome: Outcome, resumed: boolean): Promise<TurnResult> {
    const { settings } = this.options;
    if ('error' in outcome) {
      if (active.cancelled && !active.failure) {
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
    const output = this.outputOf(translator.text);
    await this.options.journal.finish(active.turnId, { text: translator.text, steps: translator.step, finishReason, toolCalls: translator.toolCalls, toolResults: translator.toolResults });
    await this.options.driver.release();
    active.emit({ type: 'finish', finishReason, totalUsage: usage });
    active.telemetry.end({ text: translator.text, finishReason, usage });
    return resultOf(this.options.sessionId, active, resumed, { text: translator.text, output, finishReason, usage });
  }

  /** The structured output of a reply, when the agent has an output schema (prompt-content.ts). */
  outputOf(text: string): unknown {
    return this.options.outputSchema ? structuredOutput(this.options.settings.harnessId, text, this.options.outputSchema) : undefined;
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

function stoppedByCancel(outcome: Outcome): boolean {
  return 'error' in outcome || outcome.response.stopReason === 'cancelled';
}
