import type { UIMessage } from 'ai';
import { AcxError, HarnessCapabilityUnsupportedError } from '../core/errors.ts';
import type { TurnResult } from '../engine/engine.ts';
import type { AfterTurnEvent } from './guards.ts';
import type { CompactionResult, HarnessSession } from './harness.ts';
import type { ForkOptions, RewindOptions, RewindResult } from './session-branch.ts';
import type { SessionState, TurnContinuation } from './session-state.ts';
import { uiMessagesOf } from './ui-messages.ts';

/**
 * A session as HarnessAgent hands it out: the harness's session, plus the call running on it in
 * this process (what stop(), suspendTurn() and detach() act on).
 */
export interface AgentSession {
  readonly id: string;
  hasUnfinishedTurn(): Promise<boolean>;
  /**
   * The session's unfinished turn and what it waits for (approvals, host tool results, a pause;
   * `interrupted` when its process stopped mid-turn), or undefined when none is: what an app shows
   * as pending, or passes to abandonTurn.
   */
  unfinishedTurn(): Promise<TurnContinuation | undefined>;
  /**
   * The session's history as the AI SDK's UI messages (text, reasoning, tool parts in their
   * states, approvals), for a `useChat({ messages })` page after a reload: see ui-messages.ts and
   * uiMessagesResponse. A reply still streaming is left out: resuming its stream brings it whole
   * (resumeUIStreamResponse). Engine only.
   */
  uiMessages(): Promise<UIMessage[]>;
  /**
   * Lets go of the session and returns its state for `createSession({ resumeFrom })` — in this
   * process or another. A turn running here is first paused at its next safe point (on harnesses
   * that can; otherwise stopped); an unfinished turn comes back as `continuation`, for
   * `createSession({ continueFrom })`. The session object is unusable afterwards.
   */
  detach(): Promise<SessionState>;
  /** Stops what runs and deletes the session's state (its journal history, an ACP sandbox). */
  destroy(): Promise<void>;
  /** Ends the turn running now, cleanly: it is recorded as cancelled (its call rejects with TurnAbortedError). Resolves once it has ended; at once when nothing runs. */
  stop(): Promise<void>;
  /**
   * Pauses the running turn at its next safe point (after the current step's tools, before the
   * next model call) and resolves once it has paused. The turn is suspended in the journal: its
   * call resolves with finishReason `other` and `suspendedBy: 'request'`; continue it with
   * continueGenerate/continueStream, or from another process via listSuspended(). On an ACP harness
   * (with a journal, and an agent that can reopen its session) the agent is told to cancel once its
   * running host tools finish, and the turn goes on later on the reopened session; elsewhere
   * HarnessCapabilityUnsupportedError.
   */
  suspendTurn(): Promise<void>;
  /**
   * A new session with this one's history up to turn `atTurn` (turns count from 1; default: every
   * finished turn), opened on the same agent. This session is not touched. Engine sessions; an ACP
   * harness throws HarnessCapabilityUnsupportedError.
   */
  fork(options?: ForkOptions): Promise<AgentSession>;
  /**
   * Cuts this session's transcript back to turn `toTurn`, between turns. With `files: true` it
   * also puts back the workspace files the agent's own tools (fs_write, execute) changed after
   * that turn, and refuses with RewindRefusedError, changing nothing, when any of them was
   * changed by someone else since the agent's tool last wrote it. Engine only.
   */
  rewind(options: RewindOptions): Promise<RewindResult>;
  /** Compacts the session's transcript now, between turns (the same rewrite as at the threshold). Engine only. */
  compact(options?: { abortSignal?: AbortSignal }): Promise<CompactionResult>;
  /**
   * Gives up the unfinished turn `turnId` for good, when what it answered is set aside: every call
   * it left open gets a result saying it did not run (`Not run: the turn was abandoned (reason).`),
   * the turn is recorded as cancelled, saying why, and the session answers the next message as
   * usual. False when there is no such turn unfinished. Engine only (turn ids are its own).
   */
  abandonTurn(turnId: string, reason: string): Promise<boolean>;
}

/** What a tracked call adds to the turn's hooks. */
export interface LiveHooks {
  abortSignal: AbortSignal;
  pauseRequested: () => boolean;
  pauseSignal: AbortSignal;
  claimSuspended?: string;
}

/** The call running on a session in this process: what stop() and suspendTurn() act on. */
interface RunningCall {
  controller: AbortController;
  pause: AbortController;
  settled: Promise<unknown>;
}

export class Session implements AgentSession {
  readonly id: string;
  readonly inner: HarnessSession;
  readonly #identity: { harnessId: string; agentId: string };
  /** The agent's own tools (their parts are `tool-NAME`; any other call is a `dynamic-tool`). */
  readonly #toolNames: ReadonlySet<string>;
  #running: RunningCall | undefined;
  #detached = false;
  /** The suspended turn a continueFrom session was opened to answer: claimed by its first call. */
  #claim: string | undefined;
  /** Opens another session of the same agent by id (what fork() hands back). */
  readonly #open: (sessionId: string) => Promise<AgentSession>;
  /** The session's turn streaming now, if any (its reply is left out of uiMessages: see uiMessagesOf). */
  readonly #streamingTurn: (() => Promise<string | undefined>) | undefined;
  /** The afterTurn hooks (the agent's, then the session's), told how each call ended. */
  readonly #afterTurn: ((event: AfterTurnEvent<TurnResult>) => Promise<void>) | undefined;
  /** Whether the session has output guardrails: a reply's parts are held until they pass (held-reply.ts). */
  readonly holdReply: boolean;
  constructor(
    inner: HarnessSession,
    identity: { harnessId: string; agentId: string },
    toolNames: ReadonlySet<string>,
    open: (sessionId: string) => Promise<AgentSession>,
    options: {
      claim?: string | undefined;
      streamingTurn?: (() => Promise<string | undefined>) | undefined;
      afterTurn?: ((event: AfterTurnEvent<TurnResult>) => Promise<void>) | undefined;
      holdReply?: boolean;
    } = {},
  ) {
    this.id = inner.id;
    this.inner = inner;
    this.#identity = identity;
    this.#toolNames = toolNames;
    this.#open = open;
    this.#claim = options.claim;
    this.#streamingTurn = options.streamingTurn;
    this.#afterTurn = options.afterTurn;
    this.holdReply = options.holdReply ?? false;
  }
  hasUnfinishedTurn(): Promise<boolean> {
    return this.inner.hasUnfinishedTurn();
  }

  async unfinishedTurn(): Promise<TurnContinuation | undefined> {
    if (!this.inner.continuation) {
      throw new HarnessCapabilityUnsupportedError(`${this.#identity.harnessId} keeps no unfinished turn across calls, so none to describe.`, {
        hint: 'Use hasUnfinishedTurn(), or run the agent on the engine harness.',
      });
    }
    return this.inner.continuation();
  }

  async uiMessages(): Promise<UIMessage[]> {
    if (!this.inner.history) {
      throw new HarnessCapabilityUnsupportedError(`${this.#identity.harnessId} keeps the session's history inside the coding agent, so acx cannot give it back as UI messages.`, {
        hint: 'Keep the chat yourself (createAgentUIStreamResponse onFinish), or run the agent on the engine harness.',
      });
    }
    const [history, streaming] = await Promise.all([this.inner.history(), this.#streamingTurn?.()]);
    return uiMessagesOf(history, this.#toolNames, streaming);
  }

  /**
   * Runs one turn call of this session (tracked), then tells the afterTurn hooks how it ended. When
   * the call failed, it rejects with its own error even if an afterTurn hook throws too.
   */
  async observed(abortSignal: AbortSignal | undefined, run: (hooks: LiveHooks) => Promise<TurnResult>): Promise<TurnResult> {
    const afterTurn = this.#afterTurn;
    if (!afterTurn) return this.track(abortSignal, run);
    let result: TurnResult;
    try {
      result = await this.track(abortSignal, run);
    } catch (error) {
      await afterTurn({ sessionId: this.id, error }).catch(() => {});
      throw error;
    }
    await afterTurn({ sessionId: this.id, result });
    return result;
  }

  /** Runs one call of this session, so that stop() and suspendTurn() can reach it. */
  async track<T>(abortSignal: AbortSignal | undefined, run: (hooks: LiveHooks) => Promise<T>): Promise<T> {
    if (this.#detached) {
      throw new AcxError('session-detached', `Session ${this.id} was detached or destroyed.`, {
        hint: 'Reopen it with agent.createSession({ resumeFrom: state }) (or open a new one after destroy()).',
      });
    }
    const controller = new AbortController();
    const call: RunningCall = { controller, pause: new AbortController(), settled: Promise.resolve() };
    const signal = abortSignal ? AbortSignal.any([abortSignal, controller.signal]) : controller.signal;
    const claimSuspended = this.#claim;
    this.#claim = undefined;
    const result = run({ abortSignal: signal, pauseRequested: () => call.pause.signal.aborted, pauseSignal: call.pause.signal, ...(claimSuspended ? { claimSuspended } : {}) });
    call.settled = result.then(
      () => undefined,
      () => undefined,
    );
    this.#running = call;
    try {
      return await result;
    } finally {
      if (this.#running === call) this.#running = undefined;
    }
  }

  async abandonTurn(turnId: string, reason: string): Promise<boolean> {
    if (!this.inner.abandonTurn) {
      throw new HarnessCapabilityUnsupportedError(`${this.#identity.harnessId} has no caller-chosen turn ids, so no turn to abandon.`, {
        hint: 'Run the agent on the engine harness.',
      });
    }
    return this.inner.abandonTurn(turnId, reason);
  }

  async stop(): Promise<void> {
    const running = this.#running;
    if (!running) return;
    running.controller.abort();
    await running.settled;
  }

  async suspendTurn(): Promise<void> {
    if (!this.inner.canSuspend) {
      throw new HarnessCapabilityUnsupportedError(`${this.#identity.harnessId} cannot pause a turn at a safe point and resume it later.`, {
        hint: 'Use stop() to end the turn, or run the agent on the engine harness.',
      });
    }
    const running = this.#running;
    if (!running) {
      throw new AcxError('no-running-turn', `Session ${this.id} has no turn running in this process.`, {
        hint: 'Call suspendTurn() while a generate/stream call of this session is under way.',
      });
    }
    running.pause.abort();
    await running.settled;
  }

  async fork(options: ForkOptions = {}): Promise<AgentSession> {
    if (!this.inner.fork) {
      throw new HarnessCapabilityUnsupportedError(`${this.#identity.harnessId} cannot fork a session: the agent offers no session/fork.`, {
        hint: 'Run the agent on the engine harness, or use an ACP agent that supports session/fork.',
      });
    }
    return this.#open(await this.inner.fork(options));
  }

  async rewind(options: RewindOptions): Promise<RewindResult> {
    const rewind = this.inner.rewind?.bind(this.inner);
    if (!rewind) {
      throw new HarnessCapabilityUnsupportedError(`${this.#identity.harnessId} keeps the session's history inside the coding agent, so acx cannot rewind it.`, {
        hint: 'Fork from an earlier point where the agent supports it, or run the agent on the engine harness.',
      });
    }
    this.#refuseWhileRunning('rewind()');
    // On a store shared by replicas, no other process runs a turn of this session meanwhile.
    return this.inner.exclusive ? this.inner.exclusive(() => rewind(options)) : rewind(options);
  }

  #refuseWhileRunning(what: string): void {
    if (this.#running) {
      throw new AcxError('usage', `Session ${this.id} has a turn running; ${what} runs between turns.`, {
        hint: 'Await the call (or suspendTurn() it) first.',
      });
    }
  }

  async compact(options: { abortSignal?: AbortSignal } = {}): Promise<CompactionResult> {
    if (!this.inner.compact) {
      throw new HarnessCapabilityUnsupportedError(`${this.#identity.harnessId} has no manual compaction: standard ACP v1 has no portable API for it.`, {
        hint: 'Let the agent compact its own context, or run the agent on the engine harness.',
      });
    }
    this.#refuseWhileRunning('compact()');
    return this.inner.compact({ abortSignal: options.abortSignal });
  }

  async detach(): Promise<SessionState> {
    if (this.#running) {
      if (this.inner.canSuspend) await this.suspendTurn();
      else await this.stop();
    }
    const continuation = await this.inner.continuation?.();
    this.#detached = true;
    await this.inner.detach();
    return {
      type: 'acx-session',
      version: 1,
      ...this.#identity,
      sessionId: this.id,
      ...(continuation ? { continuation } : {}),
    };
  }

  async destroy(): Promise<void> {
    await this.stop();
    this.#detached = true;
    await this.inner.destroy();
  }
}

