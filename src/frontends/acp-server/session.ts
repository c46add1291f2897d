import * as acp from '@agentclientprotocol/sdk';
import type { UserContent } from 'ai';
import type { AgentSession, HarnessAgent } from '../../harness/harness-agent.ts';
import { type ApprovalRequest, emptyUsage } from '../../engine/events.ts';
import type { McpConnection } from '../../mcp/client.ts';
import type { ReasoningEffort } from '../../model/reasoning.ts';
import type { WorkspaceRoots } from '../../tools/sandbox/roots.ts';
import { needsApproval, type PermissionMode } from '../../tools/permission.ts';
import type { Tool } from '../../tools/tool.ts';
import { AcxError, errorMessage } from '../../core/errors.ts';
import type { Logger } from '../../util/logger.ts';
import { type PromptAcceptance, toUserContent } from './prompt-content.ts';
import { PromptQueue, type Queued } from './prompt-queue.ts';
import type { SessionChoices } from './config-options.ts';
import type { ClientTerminals } from './client-terminals.ts';
import type { EditLog } from './edits.ts';
import type { InterruptedCalls } from './interrupted-calls.ts';
import { clientReason } from './client-errors.ts';
import { askEditor } from './elicitation.ts';
import { describeToolCall } from './tool-calls.ts';
import { promptUsage, stopReasonOf, TurnTranslator } from './updates.ts';

/**
 * One ACP session served by acx: a journaled engine session, the tools it may call (the
 * agent's own plus the client's MCP servers), its permission mode, model and thinking level, and
 * at most one running turn (prompts sent meanwhile wait in its queue). Every `session/update`
 * goes through one ordered outbox, so the client sees a tool call before the permission request
 * about it and every update of a turn before its stop reason.
 */
export interface AcpSessionOptions {
  id: string;
  cwd: string;
  /** Where the session's file tools and commands work: cwd and the client's additional directories. */
  roots: WorkspaceRoots;
  /** The diffs of the session's writes, for their tool-call updates. */
  edits: EditLog;
  /** The editor's terminals running this session's commands, when it offers them. */
  terminals?: ClientTerminals;
  /** The session's commands a cancel cut short. */
  interrupted: InterruptedCalls;
  /** The permission mode and model the session starts with. */
  choices: SessionChoices;
  tools: readonly Tool[];
  /** Builds the agent for a permission mode and model (the engine takes both when a session opens), with that model's context size. */
  agentFor: (choices: SessionChoices) => Promise<{ agent: HarnessAgent; contextSize: number | undefined }>;
  client: acp.AgentContext;
  accept: PromptAcceptance;
  mcp: McpConnection | undefined;
  /** The editor's elicitation capabilities (initialize): how an MCP server's question reaches it. */
  elicitation?: acp.ElicitationCapabilities | null | undefined;
  logger: Logger;
}

type ApprovalAnswer = { approved: boolean; reason?: string };

interface Pending {
  promise: Promise<ApprovalAnswer>;
  /** Settles once; later answers (a cancel racing the client's reply) are ignored. */
  resolve: (answer: ApprovalAnswer) => void;
  readonly settled: boolean;
}

interface RunningTurn {
  controller: AbortController;
  approvals: Map<string, Pending>;
}

const OPTION = {
  allowOnce: 'allow_once',
  allowAlways: 'allow_always',
  rejectOnce: 'reject_once',
} as const;

const CANCELLED: ApprovalAnswer = { approved: false, reason: 'The user cancelled the turn.' };

export class AcpSession {
  readonly id: string;
  readonly cwd: string;
  readonly roots: WorkspaceRoots;
  private readonly options: AcpSessionOptions;
  /** The session's tools by name: the agent's own and the client's MCP tools. */
  readonly tools: ReadonlyMap<string, Tool>;
  private readonly logger: Logger;
  private choices: SessionChoices;
  /** The mode and model the current engine session was opened with. */
  private engineChoices: SessionChoices;
  private agent: HarnessAgent;
  /** The context window of the engine's model, for usage_update. */
  private contextSize: number | undefined;
  /** What this session's turns cost so far (USD), since it was opened in this process; undefined until a provider states a cost. */
  private sessionCost: number | undefined;
  private agentSession: AgentSession;
  private turn: RunningTurn | undefined;
  /** Turns and slash commands, one at a time: a prompt sent meanwhile waits its turn. */
  private readonly queue = new PromptQueue();
  private outbox: Promise<void> = Promise.resolve();
  /** Tools the user chose "always allow" for, in this session only. */
  private readonly alwaysAllowed = new Set<string>();

  private constructor(options: AcpSessionOptions, built: { agent: HarnessAgent; contextSize: number | undefined }, agentSession: AgentSession) {
    this.options = options;
    this.id = options.id;
    this.cwd = options.cwd;
    this.roots = options.roots;
    this.tools = new Map(options.tools.map((tool) => [tool.name, tool]));
    this.logger = options.logger.child({ session: options.id });
    this.choices = { ...options.choices };
    this.engineChoices = { ...options.choices };
    this.agent = built.agent;
    this.contextSize = built.contextSize;
    this.agentSession = agentSession;
  }

  static async open(options: AcpSessionOptions): Promise<AcpSession> {
    const built = await options.agentFor(options.choices);
    const agentSession = await built.agent.createSession({ sessionId: options.id });
    return new AcpSession(options, built, agentSession);
  }

  get mode(): PermissionMode {
    return this.choices.mode;
  }

  get model(): string {
    return this.choices.model;
  }

  get effort(): ReasoningEffort | undefined {
    return this.choices.effort;
  }

  /** Whether a turn or command is running, or a prompt waits for one. */
  get running(): boolean {
    return this.queue.busy;
  }

  /** Runs a turn's or slash command's work (e.g. /compact's summary) in the session's queue, after what was sent before it. */
  exclusively<T>(work: () => Promise<T>): Promise<Queued<T>> {
    if (this.queue.busy) this.logger.info('acp prompt queued', { ahead: this.queue.ahead });
    return this.queue.run(work);
  }

  /** Switches the permission mode; a running turn keeps its engine, but its approvals follow the new mode. */
  setMode(mode: PermissionMode): void {
    this.choices.mode = mode;
    this.logger.info('acp mode', { mode });
  }

  /** Switches the model from the next turn on (a running turn finishes on its model). */
  setModel(model: string): void {
    this.choices.model = model;
    this.logger.info('acp model', { model });
  }

  /** Switches the reasoning effort from the next turn on (undefined: as configured). */
  setEffort(effort: ReasoningEffort | undefined): void {
    this.choices.effort = effort;
    this.logger.info('acp effort', { effort: effort ?? 'default' });
  }

  /** Sends updates in order; a failed send is logged (the client may have gone) and never breaks the turn. */
  send(update: acp.SessionUpdate): void {
    this.outbox = this.outbox
      .then(() => this.options.client.notify(acp.methods.client.session.update, { sessionId: this.id, update }))
      .catch((error: unknown) => this.logger.warn('acp update not sent', { error: errorMessage(error) }));
  }

  flush(): Promise<void> {
    return this.outbox;
  }

  /** Runs a turn once those sent before it have ended (a cancel meanwhile answers it `cancelled`, unrun). */
  async prompt(blocks: readonly acp.ContentBlock[]): Promise<acp.PromptResponse> {
    let content: string | UserContent;
    try {
      content = toUserContent(blocks, this.options.accept);
    } catch (error) {
      throw new acp.RequestError(-32602, `Invalid params: ${describe(error)}`);
    }
    const outcome = await this.exclusively(() => this.runTurn(content));
    return outcome.ran ? outcome.value : { stopReason: 'cancelled' };
  }

  private async runTurn(content: string | UserContent): Promise<acp.PromptResponse> {
    const turn: RunningTurn = { controller: new AbortController(), approvals: new Map() };
    this.turn = turn;
    let translator: TurnTranslator | undefined;
    let stopReason: acp.StopReason;
    try {
      await this.syncEngine();
      translator = new TurnTranslator({
        tools: this.tools,
        mode: this.engineChoices.mode,
        contextSize: this.contextSize,
        ...(this.sessionCost !== undefined ? { costSoFar: this.sessionCost } : {}),
        roots: this.roots,
        edits: this.options.edits,
        ...(this.options.terminals ? { terminals: this.options.terminals } : {}),
        interrupted: this.options.interrupted,
      });
      const stream = this.agent.stream({
        session: this.agentSession,
        prompt: content,
        abortSignal: turn.controller.signal,
        onApprovalRequest: (request) => this.pending(turn, request.approvalId).promise,
        onElicitation: (request) =>
          askEditor({ client: this.options.client, sessionId: this.id, capabilities: this.options.elicitation, request, signal: turn.controller.signal, logger: this.logger }),
      });
      for await (const part of stream.harnessStream) {
        if (part.type === 'tool-approval-request') {
          void this.askPermission(turn, part);
          continue;
        }
        for (const update of translator.translate(part)) this.send(update);
      }
      const result = await stream.result;
      stopReason = turn.controller.signal.aborted ? 'cancelled' : stopReasonOf(result.rawFinishReason);
    } catch (error) {
      for (const update of translator?.closeOpen(turn.controller.signal.aborted ? 'Cancelled.' : 'The turn failed.') ?? []) this.send(update);
      if (!turn.controller.signal.aborted) {
        await this.flush();
        this.logger.error('acp turn failed', { error: errorMessage(error) });
        throw new acp.RequestError(-32603, `Internal error: ${describe(error)}`, AcxError.isInstance(error) ? { code: error.code } : undefined);
      }
      stopReason = 'cancelled';
    } finally {
      for (const pending of turn.approvals.values()) pending.resolve(CANCELLED);
      this.turn = undefined;
    }
    await this.flush();
    if (translator?.cost !== undefined) this.sessionCost = (this.sessionCost ?? 0) + translator.cost;
    const usage = promptUsage(translator?.usage ?? emptyUsage());
    this.logger.info('acp turn end', { stop: stopReason });
    // `usage` is the ACP draft field; clients that do not know it ignore it.
    return { stopReason, ...(usage ? { usage } : {}) } as acp.PromptResponse;
  }

  /** Stops the running turn (the model call and tools are aborted, open approvals answered "no") and answers the prompts waiting for it. */
  cancel(): void {
    const waiting = this.queue.cancelWaiting();
    const turn = this.turn;
    if (!turn) return;
    this.logger.info('acp cancel', { waiting });
    turn.controller.abort();
    for (const pending of turn.approvals.values()) pending.resolve(CANCELLED);
  }

  async close(): Promise<void> {
    this.cancel();
    await this.flush();
    await this.agentSession.detach();
    await this.options.mcp?.close();
  }

  /** The engine fixes its permission mode, model and effort per session; reopen it (same journal id) after a switch. */
  private async syncEngine(): Promise<void> {
    const wanted = { ...this.choices };
    const { mode, model, effort } = this.engineChoices;
    if (mode === wanted.mode && model === wanted.model && effort === wanted.effort) return;
    const built = await this.options.agentFor(wanted);
    this.agent = built.agent;
    this.contextSize = built.contextSize;
    this.agentSession = await this.agent.createSession({ sessionId: this.id });
    this.engineChoices = wanted;
  }

  private pending(turn: RunningTurn, approvalId: string): Pending {
    let pending = turn.approvals.get(approvalId);
    if (!pending) {
      let settle!: (answer: ApprovalAnswer) => void;
      const promise = new Promise<ApprovalAnswer>((r) => (settle = r));
      const created = {
        promise,
        settled: false,
        resolve(answer: ApprovalAnswer) {
          if (created.settled) return;
          created.settled = true;
          settle(answer);
        },
      };
      pending = created;
      turn.approvals.set(approvalId, pending);
    }
    return pending;
  }

  private async askPermission(turn: RunningTurn, request: ApprovalRequest): Promise<void> {
    const pending = this.pending(turn, request.approvalId);
    const tool = this.tools.get(request.toolName);
    const approve = () => {
      if (pending.settled) return;
      this.send({ sessionUpdate: 'tool_call_update', toolCallId: request.toolCallId, status: 'in_progress' });
      pending.resolve({ approved: true });
    };
    // The mode may have been widened since the turn started, or the user said "always" earlier.
    if ((tool && !needsApproval(tool, this.choices.mode)) || this.alwaysAllowed.has(request.toolName)) {
      approve();
      return;
    }
    const options: acp.PermissionOption[] = [
      { optionId: OPTION.allowOnce, name: 'Allow once', kind: 'allow_once' },
      ...(tool?.needsApproval
        ? []
        : [{ optionId: OPTION.allowAlways, name: `Always allow ${request.toolName} in this session`, kind: 'allow_always' as const }]),
      { optionId: OPTION.rejectOnce, name: 'Reject', kind: 'reject_once' },
    ];
    await this.flush();
    if (turn.controller.signal.aborted) {
      pending.resolve(CANCELLED);
      return;
    }
    const { title, kind, locations } = describeToolCall(request.toolName, request.input, tool, this.roots);
    const proposed = this.options.edits.diffFor(request.toolCallId, request.toolName, request.input);
    let answer: ApprovalAnswer;
    try {
      const response = await this.options.client.request(
        acp.methods.client.session.requestPermission,
        {
          sessionId: this.id,
          toolCall: {
            toolCallId: request.toolCallId,
            title,
            name: request.toolName,
            kind,
            status: 'pending',
            ...(locations.length > 0 ? { locations } : {}),
            ...(proposed ? { content: [proposed] } : {}),
            rawInput: request.input,
          },
          options,
        },
        { cancellationSignal: turn.controller.signal, stopWaitingOnCancel: true },
      );
      const outcome = response.outcome;
      if (outcome.outcome === 'cancelled') answer = CANCELLED;
      else if (outcome.optionId === OPTION.allowOnce) answer = { approved: true };
      else if (outcome.optionId === OPTION.allowAlways && !tool?.needsApproval) {
        this.alwaysAllowed.add(request.toolName);
        answer = { approved: true };
      } else if (outcome.optionId === OPTION.rejectOnce) answer = { approved: false, reason: 'The user rejected this call.' };
      else answer = { approved: false, reason: `The client chose an unknown option "${outcome.optionId}".` };
    } catch (error) {
      answer = turn.controller.signal.aborted ? CANCELLED : { approved: false, reason: `The permission request failed: ${clientReason(error)}` };
      if (!turn.controller.signal.aborted) this.logger.warn('acp permission request failed', { error: errorMessage(error) });
    }
    this.logger.info('acp permission', { tool: request.toolName, approved: answer.approved });
    if (answer.approved) approve();
    else pending.resolve(answer);
  }
}

function describe(error: unknown): string {
  return AcxError.isInstance(error) ? error.describe() : errorMessage(error);
}
