import { randomUUID } from 'node:crypto';
import type { UserContent } from 'ai';
import type { SpeechMode } from '../engine/brief.ts';
import type { ApprovalDecision, TurnHooks, TurnResult } from '../engine/engine.ts';
import type { HarnessStreamPart } from '../engine/events.ts';
import { type PermissionMode } from '../tools/permission.ts';
import type { InputSchema } from '../tools/schema.ts';
import { fromSdkTool, isSdkTool, type SdkTool } from '../tools/ai-sdk-tool.ts';
import type { Tool } from '../tools/tool.ts';
import { AcxError, HarnessCapabilityUnsupportedError } from '../util/errors.ts';
import { AsyncQueue } from './async-queue.ts';
import type { AgentConfig, Harness, HarnessSession } from './harness.ts';

/**
 * HarnessAgent: one API — generate / stream / continue over durable sessions — whatever harness
 * runs the turns (acx's native engine, or an ACP coding agent).
 */
export interface HarnessAgentSettings {
  harness: Harness;
  /** A stable identity for the agent's memory and idempotency keys. */
  id?: string;
  /** For harnesses that pick their own model (ACP agents); the engine harness is given its model directly. */
  model?: string;
  instructions?: string;
  /** Skills the harness may load natively (written to an ACP agent's skills directory). */
  skills?: AgentConfig['skills'];
  /** acx tools, or a record of acx tools and tools made with the AI SDK's `tool()` (those get kind `other`: they ask unless allow-all). */
  tools?: readonly Tool[] | Record<string, (Omit<Tool, 'name'> & { name?: string }) | SdkTool>;
  activeTools?: readonly string[];
  inactiveTools?: readonly string[];
  /** Structured output: the final answer must be JSON matching this schema. */
  output?: InputSchema;
  permissionMode?: PermissionMode;
  speech?: SpeechMode;
  onApprovalRequest?: TurnHooks['onApprovalRequest'];
}

export interface AgentSession {
  readonly id: string;
  hasUnfinishedTurn(): boolean;
  detach(): Promise<void>;
  destroy(): Promise<void>;
}

export interface GenerateOptions {
  session?: AgentSession;
  prompt: string | UserContent;
  addressed?: boolean;
  /**
   * An id for this turn that makes delivering the same message twice safe: if the session already
   * has a turn with this id, a finished one returns what it recorded (nothing runs again) and an
   * unfinished or failed one is continued by evidence. Native engine only.
   */
  turnId?: string;
  abortSignal?: AbortSignal;
  onApprovalRequest?: TurnHooks['onApprovalRequest'];
}

export interface ContinueOptions {
  session: AgentSession;
  approvals?: readonly ApprovalDecision[];
  toolResults?: ReadonlyArray<{ toolCallId: string; output: unknown }>;
  abortSignal?: AbortSignal;
  onApprovalRequest?: TurnHooks['onApprovalRequest'];
}

export interface StreamResult {
  /** Every part of the turn, AI SDK-shaped. Iterate it once. */
  fullStream: AsyncIterable<HarnessStreamPart>;
  /** The reply text as it streams. */
  textStream: AsyncIterable<string>;
  text: Promise<string>;
  result: Promise<TurnResult>;
}

class Session implements AgentSession {
  readonly id: string;
  readonly inner: HarnessSession;
  constructor(inner: HarnessSession) {
    this.id = inner.id;
    this.inner = inner;
  }
  hasUnfinishedTurn(): boolean {
    return this.inner.hasUnfinishedTurn();
  }
  detach(): Promise<void> {
    return this.inner.detach();
  }
  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}

function normalizeTools(tools: HarnessAgentSettings['tools']): Tool[] {
  if (!tools) return [];
  if (Array.isArray(tools)) return [...tools];
  return Object.entries(tools).map(([name, tool]) =>
    isSdkTool(tool) ? fromSdkTool(name, tool) : ({ ...tool, name: (tool as Tool).name ?? name } as Tool),
  );
}

export class HarnessAgent {
  readonly settings: HarnessAgentSettings;
  readonly tools: readonly Tool[];

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
    this.tools = tools;
  }

  get id(): string {
    return this.settings.id ?? 'agent';
  }

  /** Opens a session: a new one, or an existing one by id (its history is kept in the harness). */
  async createSession(options: { sessionId?: string } = {}): Promise<AgentSession> {
    const inner = await this.settings.harness.openSession(
      {
        agentId: this.id,
        model: this.settings.model,
        skills: this.settings.skills,
        instructions: this.settings.instructions ?? '',
        tools: this.tools,
        output: this.settings.output,
        permissionMode: this.settings.permissionMode ?? 'allow-edits',
        speech: this.settings.speech ?? { mode: 'final-text' },
      },
      { sessionId: options.sessionId ?? randomUUID() },
    );
    return new Session(inner);
  }

  private async sessionFor(session: AgentSession | undefined): Promise<HarnessSession> {
    const chosen = session ?? (await this.createSession());
    if (!(chosen instanceof Session)) {
      throw new AcxError('usage', 'That session was not created by this agent.', {
        hint: 'Use agent.createSession() and pass the session it returns.',
      });
    }
    return chosen.inner;
  }

  async generate(options: GenerateOptions): Promise<TurnResult> {
    return this.runGenerate(options, undefined);
  }

  async continueGenerate(options: ContinueOptions): Promise<TurnResult> {
    const inner = await this.sessionFor(options.session);
    return inner.continue(this.hooks(options, undefined));
  }

  stream(options: GenerateOptions): StreamResult {
    return this.streamOf((emit) => this.runGenerate(options, emit));
  }

  continueStream(options: ContinueOptions): StreamResult {
    return this.streamOf(async (emit) => {
      const inner = await this.sessionFor(options.session);
      return inner.continue(this.hooks(options, emit));
    });
  }

  private hooks(
    options: { abortSignal?: AbortSignal; onApprovalRequest?: TurnHooks['onApprovalRequest']; approvals?: readonly ApprovalDecision[]; toolResults?: ContinueOptions['toolResults'] },
    emit: ((part: HarnessStreamPart) => void) | undefined,
  ) {
    return {
      abortSignal: options.abortSignal,
      emit,
      onApprovalRequest: options.onApprovalRequest ?? this.settings.onApprovalRequest,
      ...(options.approvals ? { approvals: options.approvals } : {}),
      ...(options.toolResults ? { toolResults: options.toolResults } : {}),
    };
  }

  private async runGenerate(
    options: GenerateOptions,
    emit: ((part: HarnessStreamPart) => void) | undefined,
  ): Promise<TurnResult> {
    const inner = await this.sessionFor(options.session);
    if (inner.hasUnfinishedTurn()) {
      // A turn interrupted by a crash is finished by evidence before the new message is taken.
      const resumed = await inner.continue(this.hooks(options, emit));
      // The message delivered again is the one whose turn was interrupted: that turn is its answer.
      if (options.turnId !== undefined && resumed.turnId === options.turnId) return resumed;
      if (resumed.pendingApprovals.length > 0 || resumed.pendingToolCalls.length > 0) {
        throw new AcxError('turn-suspended', 'The session has a turn waiting for approvals or tool results.', {
          hint: 'Answer them with continueGenerate({ session, approvals, toolResults }) before sending a new message.',
        });
      }
    }
    if (options.turnId !== undefined && this.settings.harness.id !== 'engine') {
      throw new AcxError('turn-id-unsupported', `Turn ids need acx's native engine; this agent runs on ${this.settings.harness.id}.`, {
        hint: 'Run it on the engine (no --harness), or deliver each message once.',
      });
    }
    return inner.run({
      prompt: options.prompt,
      ...(options.addressed !== undefined ? { addressed: options.addressed } : {}),
      ...(options.turnId !== undefined ? { turnId: options.turnId } : {}),
      ...this.hooks(options, emit),
    });
  }

  private streamOf(run: (emit: (part: HarnessStreamPart) => void) => Promise<TurnResult>): StreamResult {
    const parts = new AsyncQueue<HarnessStreamPart>();
    const texts = new AsyncQueue<string>();
    const result = run((part) => {
      parts.push(part);
      if (part.type === 'text-delta') texts.push(part.text);
    });
    result.then(
      () => {
        parts.end();
        texts.end();
      },
      (error: unknown) => {
        parts.push({ type: 'error', error });
        parts.end();
        texts.fail(error);
      },
    );
    const text = result.then((r) => r.text);
    // The error also arrives as an `error` part; callers that only iterate must not crash the process.
    text.catch(() => {});
    result.catch(() => {});
    return { fullStream: parts, textStream: texts, text, result };
  }
}
