import { randomUUID } from 'node:crypto';
import { type Agent, jsonSchema, type ToolSet } from 'ai';
import type { ApprovalDecision, TurnHooks, TurnResult } from '../engine/engine.ts';
import type { TurnAnswerers } from '../engine/turn-types.ts';
import type { HarnessStreamPart } from '../engine/events.ts';
import { normalizeSchema } from '../tools/schema.ts';
import { fromSdkTool, isSdkTool } from '../tools/ai-sdk-tool.ts';
import type { Tool } from '../tools/tool.ts';
import { AcxError, HarnessCapabilityUnsupportedError } from '../core/errors.ts';
import { type AgentSession, type LiveHooks, Session } from './agent-session.ts';
import type { ContinueOptions, CreateSessionOptions, GenerateOptions, HarnessAgentSettings, HarnessCallOptions, TurnCallbacks } from './agent-options.ts';
import { afterTurnOf, guardsOf } from './guards.ts';
import { withHeldReply } from './held-reply.ts';
import type { HarnessSession } from './harness.ts';
import { readSessionState, type SuspendedSession } from './session-state.ts';
import { type HarnessOutput, HarnessStreamResult, type HarnessTurnResult, turnResultOf } from './harness-results.ts';
import { isWaiting, moveOn, waitingTurn } from './pending-turn.ts';
import { type CallInput, readCallInput } from './sdk-input.ts';
import { type SdkPart, type SdkStep, SdkTurn } from './sdk-turn.ts';
import { readTurnStream } from './stream-reader.ts';
import { StreamRecorder } from './stream-recorder.ts';
import { takeUpTurn } from './stream-takeover.ts';
import { TurnStreams } from './turn-streams.ts';
import type { ResumedStream } from './agent-options.ts';

export type { AgentSession } from './agent-session.ts';
export type { ContinueOptions, CreateSessionOptions, GenerateOptions, HarnessAgentSettings, HarnessCallOptions, ResumedStream, TurnCallbacks } from './agent-options.ts';

/** A streamed turn: `harnessStream` (acx parts), `fullStream` (AI SDK parts), `textStream`, `text`, `result`, and the rest of the AI SDK's StreamTextResult. */
export type StreamResult = HarnessStreamResult;

type PartHooks = Pick<TurnHooks, 'emit' | 'observe'>;
/** Tells the turn's AI SDK view which tool calls its reader already has (see SdkTurn's invariant). */
type ReaderHas = (calls: Iterable<string> | 'all') => void;

function normalizeTools(tools: HarnessAgentSettings['tools']): Tool[] {
  if (!tools) return [];
  if (Array.isArray(tools)) return [...tools];
  return Object.entries(tools).map(([name, tool]) =>
    isSdkTool(tool) ? fromSdkTool(name, tool) : ({ ...tool, name: (tool as Tool).name ?? name } as Tool),
  );
}

/** The AI SDK's view of an acx tool: name, description and JSON Schema (acx runs the tool itself; the UI helpers only read these). */
function sdkToolOf(tool: Tool): ToolSet[string] {
  return { description: tool.description, inputSchema: jsonSchema(normalizeSchema(tool.inputSchema).jsonSchema) };
}

/**
 * HarnessAgent: one API — generate / stream / continue over durable sessions — whatever harness
 * runs the turns (acx's native engine, or an ACP coding agent). It is an AI SDK `Agent`
 * (`version: 'agent-v1'`), so createAgentUIStreamResponse / createAgentUIStream take it as it is.
 */
export class HarnessAgent implements Agent<HarnessCallOptions | undefined, ToolSet, Record<string, unknown>, HarnessOutput> {
  readonly version = 'agent-v1' as const;
  readonly settings: HarnessAgentSettings;
  /** The agent's tools as acx runs them. */
  readonly toolList: readonly Tool[];
  private sdkTools: ToolSet | undefined;
  /** The kept streams (null: none), known on first use. */
  private keptStreams: TurnStreams | null | undefined;

  constructor(settings: HarnessAgentSettings) {
    this.settings = settings;
    let tools = normalizeTools(settings.tools);
    const names = new Set(tools.map((t) => t.name));
    const builtins = new Set(settings.harness.builtinToolNames ?? []);
    for (const name of [...(settings.activeTools ?? []), ...(settings.inactiveTools ?? [])]) {
      if (!names.has(name) && builtins.has(name)) {
        throw new HarnessCapabilityUnsupportedError(
          `activeTools/inactiveTools name "${name}", a built-in tool of ${settings.harness.id}: ACP v1 has no portable way to switch an agent's built-in tools off.`,
          { hint: `Filter only host tools (${[...names].join(', ') || 'none'}); control the agent's own tools with its permission mode.` },
        );
      }
      if (!names.has(name)) {
        throw new AcxError('config', `activeTools/inactiveTools name "${name}", which is not one of the agent's tools.`, {
          hint: `Known tools: ${[...names].join(', ') || 'none'}.`,
        });
      }
    }
    if (settings.activeTools) tools = tools.filter((t) => settings.activeTools!.includes(t.name));
    if (settings.inactiveTools) tools = tools.filter((t) => !settings.inactiveTools!.includes(t.name));
    this.toolList = tools;
  }

  /** The tools by name in the AI SDK's shape, for its UI helpers (validating and converting chat messages). */
  get tools(): ToolSet {
    return (this.sdkTools ??= Object.fromEntries(this.toolList.map((t) => [t.name, sdkToolOf(t)])));
  }

  get id(): string {
    return this.settings.id ?? 'agent';
  }

  /**
   * Opens a session: a new one, an existing one by id (its history is kept in the harness), or one
   * a detach() or listSuspended() described (`resumeFrom` / `continueFrom`, from any process).
   */
  async createSession(options: CreateSessionOptions = {}): Promise<AgentSession> {
    const sessionId = await this.sessionIdFrom(options);
    const layers = [this.settings, options];
    const guards = guardsOf(layers);
    const explicitResume = options.resumeFrom !== undefined || options.continueFrom !== undefined;
    const inner = await this.settings.harness.openSession(
      {
        agentId: this.id,
        model: this.settings.model,
        skills: this.settings.skills,
        instructions: this.settings.instructions ?? '',
        tools: this.toolList,
        output: this.settings.output,
        permissionMode: this.settings.permissionMode ?? 'allow-edits',
        speech: this.settings.speech ?? { mode: 'final-text' },
        guards,
      },
      explicitResume ? { sessionId, explicitResume } : { sessionId },
    );
    const expected = options.continueFrom?.continuation;
    if (expected && (await inner.continuation?.())?.turnId !== expected.turnId) {
      await inner.detach();
      throw new AcxError('session-state-invalid', `Turn ${expected.turnId} of session ${sessionId} is no longer unfinished: it was continued or ended since this state was taken.`, {
        hint: 'List the paused turns again (agent.listSuspended()), or resumeFrom the session to send a new message.',
      });
    }
    // Two processes answering the same listed turn: the first call claims it, the other is refused.
    const claim = expected && expected.suspendedBy !== 'interrupted' ? expected.turnId : undefined;
    const streams = this.turnStreams();
    const streamingTurn = streams ? async () => (await (await streams.opened())?.active(sessionId))?.turnId : undefined;
    const open = (id: string) => this.createSession({ sessionId: id });
    return new Session(inner, { harnessId: this.settings.harness.id, agentId: this.id }, new Set(this.toolList.map((t) => t.name)), open, {
      claim,
      streamingTurn,
      afterTurn: afterTurnOf(layers),
      holdReply: guards?.hasOutputGuardrails ?? false,
    });
  }

  /** Where streamed turns are kept, if anywhere (see HarnessAgentSettings.streams). */
  private turnStreams(): TurnStreams | undefined {
    if (this.keptStreams === undefined) {
      const settings = this.settings.streams;
      const harness = this.settings.harness;
      const given = settings ? settings.store : undefined;
      const open = settings === false ? undefined : given ? () => Promise.resolve(given) : harness.turnStreams ? () => harness.turnStreams!() : undefined;
      this.keptStreams = open ? new TurnStreams(open, settings || {}) : null;
    }
    return this.keptStreams ?? undefined;
  }

  /**
   * A streamed turn read again: the session's turn streaming now (what a client that dropped or
   * reloaded resumes), or the turn `turnId` while its parts are kept. Every part from the turn's
   * first, then the live rest until it ends, from any process sharing the store; undefined when
   * there is none. A turn whose process died mid-stream is taken up here, by evidence (engine).
   */
  async resumeStream(options: { sessionId: string; turnId?: string }): Promise<ResumedStream | undefined> {
    const streams = this.turnStreams();
    const store = await streams?.opened();
    if (!streams || !store) {
      throw new AcxError('config', `This agent keeps no streamed turns (${this.settings.streams === false ? 'streams: false' : `${this.settings.harness.id} has no store for them`}), so none can be resumed.`, {
        hint: "Give the agent a store: new HarnessAgent({ …, streams: { store: await openTurnStreamStore('./streams.db') } }).",
      });
    }
    const { sessionId } = options;
    const info = options.turnId === undefined ? await store.active(sessionId) : await store.info({ sessionId, turnId: options.turnId });
    if (!info) return undefined;
    const stream = readTurnStream(store, streams, { sessionId, turnId: info.turnId }, {
      toolNames: new Set(this.toolList.map((t) => t.name)),
      model: this.modelDescriptor(),
      onWriterGone: (key) =>
        takeUpTurn(store, streams, key, {
          harnessId: this.settings.harness.id,
          session: async () => (await this.createSession({ sessionId: key.sessionId })) as Session,
          continueStream: (session) => this.continueStream({ session }),
        }),
    });
    return { turnId: info.turnId, stream };
  }

  private modelDescriptor(): { provider: string; modelId: string } {
    return { provider: this.settings.harness.id, modelId: this.settings.model ?? 'default' };
  }

  /** The session id createSession opens, checked against a resume or continue state. */
  private async sessionIdFrom(options: CreateSessionOptions): Promise<string> {
    if (options.resumeFrom && options.continueFrom) {
      throw new AcxError('usage', 'createSession takes resumeFrom or continueFrom, not both.', {
        hint: 'Use continueFrom to answer an unfinished turn, resumeFrom to reopen a session between turns.',
      });
    }
    const which = options.resumeFrom ? 'resumeFrom' : options.continueFrom ? 'continueFrom' : undefined;
    if (!which) return options.sessionId ?? randomUUID();
    const state = readSessionState(options[which], which, { harnessId: this.settings.harness.id, agentId: this.id });
    if (options.sessionId !== undefined && options.sessionId !== state.sessionId) {
      throw new AcxError('usage', `createSession names session ${options.sessionId} but ${which} is session ${state.sessionId}.`, {
        hint: `Pass only ${which}.`,
      });
    }
    if (this.settings.harness.hasSession && !(await this.settings.harness.hasSession(state.sessionId))) {
      throw new AcxError('session-not-found', `Session ${state.sessionId} no longer exists in ${this.settings.harness.id} (it was destroyed, or this is another home).`, {
        hint: 'Open a new session instead.',
      });
    }
    return state.sessionId;
  }

  /**
   * Sessions with a turn paused for approvals, host tool results or a suspendTurn(), from the
   * harness's durable state: another process can list them and continue one with
   * `createSession({ continueFrom: entry.state })` and continueGenerate. On the engine harness, and
   * on an ACP harness given a `journal`.
   */
  async listSuspended(): Promise<SuspendedSession[]> {
    const harness = this.settings.harness;
    if (!harness.listSuspended) {
      throw new HarnessCapabilityUnsupportedError(`${harness.id} keeps a paused turn only in the process that runs it; it cannot be listed or answered from elsewhere.`, {
        hint: 'Answer approvals in the process running the turn (onApprovalRequest or continueGenerate), give an ACP harness a journal (createACP({ journal })), or run the agent on the engine harness.',
      });
    }
    return (await harness.listSuspended()).map((entry) => {
      const { sessionId, startedAt: _startedAt, ...continuation } = entry;
      return { ...entry, state: { type: 'acx-session', version: 1, harnessId: harness.id, agentId: this.id, sessionId, continuation } };
    });
  }

  private async sessionFor(session: AgentSession | undefined, sessionId?: string): Promise<Session> {
    const id = sessionId ?? this.settings.sessionId;
    const chosen = session ?? (await this.createSession(id !== undefined ? { sessionId: id } : {}));
    if (!(chosen instanceof Session)) {
      throw new AcxError('usage', 'That session was not created by this agent.', {
        hint: 'Use agent.createSession() and pass the session it returns.',
      });
    }
    return chosen;
  }

  /**
   * Runs `fn` as a tracked call of the session. A session passed in is tracked at once, before
   * anything is awaited, so `stop()` right after `generate()` reaches the call it started.
   */
  private onSession(given: AgentSession | undefined, sessionId: string | undefined, abortSignal: AbortSignal | undefined, fn: (session: Session, live: LiveHooks) => Promise<TurnResult>): Promise<TurnResult> {
    // One call per session across replicas, when the harness's store is shared (see HarnessSession.exclusive).
    // A lost lease stops the turn like stop() does, but with the loss as the reason: the engine then
    // writes nothing more to a turn another replica may be continuing.
    const exclusive = (session: Session, live: LiveHooks) =>
      session.inner.exclusive ? session.inner.exclusive((leaseLost) => fn(session, { ...live, abortSignal: AbortSignal.any([live.abortSignal, leaseLost]) })) : fn(session, live);
    if (given instanceof Session) return given.observed(abortSignal, (live) => exclusive(given, live));
    return this.sessionFor(given, sessionId).then((session) => session.observed(abortSignal, (live) => exclusive(session, live)));
  }

  /** Continues the session's unfinished turn, as a tracked call of the session. */
  private runContinue(options: ContinueOptions, parts: PartHooks, readerHas: ReaderHas): Promise<TurnResult> {
    return this.onSession(options.session, undefined, options.abortSignal, async (session, live) => {
      // The caller was handed the calls the turn waits for; a harness that cannot say which they are is not checked.
      const waiting = session.inner.continuation ? await session.inner.continuation() : undefined;
      readerHas(session.inner.continuation ? [...(waiting?.pendingApprovals ?? []), ...(waiting?.pendingToolCalls ?? [])].map((call) => call.toolCallId) : 'all');
      return withHeldReply(session.holdReply, parts, (held) => session.inner.continue(this.hooks(options, held, live)));
    });
  }

  async generate(options: GenerateOptions): Promise<HarnessTurnResult> {
    return this.runTurn(options, undefined, (parts, readerHas) => this.runGenerate(options, parts, readerHas));
  }

  async continueGenerate(options: ContinueOptions): Promise<HarnessTurnResult> {
    return this.runTurn(options, undefined, (parts, readerHas) => this.runContinue(options, parts, readerHas));
  }

  stream(options: GenerateOptions): HarnessStreamResult {
    return new HarnessStreamResult(this.tools, (emit, emitSdk) => this.runTurn(options, { emit, emitSdk }, (parts, readerHas) => this.runGenerate(options, parts, readerHas)));
  }

  continueStream(options: ContinueOptions): HarnessStreamResult {
    return new HarnessStreamResult(this.tools, (emit, emitSdk) =>
      this.runTurn(options, { emit, emitSdk }, (parts, readerHas) => this.runContinue(options, parts, readerHas)),
    );
  }

  /** Runs a turn with its parts read into the AI SDK's shapes (steps, callbacks, parts when streaming). */
  private async runTurn(
    callbacks: TurnCallbacks,
    sinks: { emit: (part: HarnessStreamPart) => void; emitSdk: (part: SdkPart) => void } | undefined,
    run: (parts: PartHooks, readerHas: ReaderHas) => Promise<TurnResult>,
  ): Promise<HarnessTurnResult> {
    const onStep = [callbacks.onStepFinish, callbacks.onStepEnd].filter((f) => f !== undefined);
    const turn = new SdkTurn({
      toolNames: new Set(this.toolList.map((t) => t.name)),
      model: this.modelDescriptor(),
      ...(sinks ? { onPart: sinks.emitSdk } : {}),
      ...(onStep.length > 0 ? { onStepFinish: async (step: SdkStep) => void (await Promise.all(onStep.map((f) => f(step)))) } : {}),
    });
    // A streamed turn is kept for readers that come later (resumeStream); a generated one is not.
    const streams = sinks ? this.turnStreams() : undefined;
    const recorder = streams ? new StreamRecorder(streams) : undefined;
    // Streaming asks the harness for streamed model calls; generate only observes the parts.
    let result: TurnResult;
    try {
      result = await run(
        sinks
          ? {
              emit: (part) => {
                sinks.emit(part);
                recorder?.push(part);
                turn.push(part);
              },
            }
          : { observe: (part) => turn.push(part) },
        (calls) => turn.readerHas(calls),
      );
    } catch (error) {
      await recorder?.end(error);
      throw error;
    }
    await recorder?.end();
    await turn.settled();
    const finished = turnResultOf(turn, result);
    for (const onEnd of [callbacks.onFinish, callbacks.onEnd]) if (onEnd) await onEnd(turn.endEvent(result.usage));
    return finished;
  }

  private hooks(
    options: TurnAnswerers & { abortSignal?: AbortSignal; approvals?: readonly ApprovalDecision[]; toolResults?: ContinueOptions['toolResults'] },
    parts: PartHooks,
    live: LiveHooks,
  ) {
    return {
      ...live,
      ...parts,
      onApprovalRequest: options.onApprovalRequest ?? this.settings.onApprovalRequest,
      onElicitation: options.onElicitation ?? this.settings.onElicitation,
      ...(options.approvals ? { approvals: options.approvals } : {}),
      ...(options.toolResults ? { toolResults: options.toolResults } : {}),
    };
  }

  private async runGenerate(options: GenerateOptions, parts: PartHooks, readerHas: ReaderHas): Promise<TurnResult> {
    const input = readCallInput(options);
    return this.onSession(options.session, options.options?.sessionId, options.abortSignal, (session, live) =>
      withHeldReply(session.holdReply, parts, (held) => this.generateOn(session.inner, input, options, held, live, readerHas)),
    );
  }

  private async generateOn(inner: HarnessSession, input: CallInput, options: GenerateOptions, parts: PartHooks, live: LiveHooks, readerHas: ReaderHas): Promise<TurnResult> {
    const hooks = this.hooks(options, parts, live);
    // The AI SDK's way to answer approvals: the chat sent again, ending in the answers.
    if (input.kind === 'approvals') {
      readerHas(input.shownCalls);
      return inner.continue({ ...hooks, approvals: input.approvals });
    }
    if (await inner.hasUnfinishedTurn()) {
      const policy = this.settings.pendingApprovalOnNewMessage ?? 'decline';
      const waiting = await waitingTurn(inner);
      // The message delivered again is the one whose turn waits: that turn is its answer, still waiting.
      if (waiting && options.turnId !== undefined && waiting.turnId === options.turnId) return inner.continue(hooks);
      if (waiting) await moveOn(inner, waiting, policy);
      else {
        // A turn interrupted by a crash is finished by evidence before the new message is taken.
        const resumed = await inner.continue(hooks);
        // The message delivered again is the one whose turn was interrupted: that turn is its answer.
        if (options.turnId !== undefined && resumed.turnId === options.turnId) return resumed;
        // Paused again by suspendTurn(): the caller asked for the pause, so the new message waits.
        if (resumed.suspendedBy === 'request') return resumed;
        if (isWaiting(resumed)) await moveOn(inner, resumed, policy);
      }
    }
    if (options.turnId !== undefined && this.settings.harness.id !== 'engine') {
      throw new AcxError('turn-id-unsupported', `Turn ids need acx's native engine; this agent runs on ${this.settings.harness.id}.`, {
        hint: 'Run it on the engine (no --harness), or deliver each message once.',
      });
    }
    return inner.run({
      prompt: input.prompt,
      ...(options.addressed !== undefined ? { addressed: options.addressed } : {}),
      ...(options.turnId !== undefined ? { turnId: options.turnId } : {}),
      ...(options.attachments ? { attachments: options.attachments } : {}),
      ...hooks,
    });
  }
}
