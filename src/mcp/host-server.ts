import { randomUUID } from 'node:crypto';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CallToolRequestSchema, ErrorCode, isJSONRPCErrorResponse, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { normalizeSchema, type JsonSchema, type NormalizedSchema } from '../tools/schema.ts';
import { isValidToolName, type Tool, type ToolOutput } from '../tools/tool.ts';
import { AcxError, errorMessage } from '../core/errors.ts';
import { silentLogger, type Logger } from '../util/logger.ts';
import { errorResult, toCallToolResult, type McpCallToolResult } from './content.ts';
import { idempotencyKeyOf } from './meta.ts';
import type { ClientLogFeed } from './client-log.ts';
import { registerPrompts, type ServedPrompt } from './prompts.ts';
import { registerResources, type ServedResources } from './resources.ts';
import { ResourceWatch } from './resource-watch.ts';

/**
 * acx host tools served over MCP (to an ACP coding agent, or to anyone through `acx mcp`), and
 * optionally what else a client would use from an agent: prompts, resources (with
 * subscriptions), the host's log lines. Tools are answered on the SDK's low-level Server so
 * each tool's JSON Schema goes out exactly as written — recursive `$defs`/`$ref` included —
 * instead of through a zod round trip; the rest through its McpServer. Calls run in the
 * host: arguments are validated, `execute` runs (or the host's `onCall` resolves a tool that
 * has no `execute`), and any failure comes back as an `isError` result the model can read.
 * One HostToolServer serves any number of connections; `setTools` tells them all
 * (`notifications/tools/list_changed`).
 */
export interface HostToolCall {
  tool: Tool;
  input: unknown;
  toolCallId: string;
  /** The MCP session (HTTP) or 'stdio'. */
  sessionId: string;
  signal: AbortSignal;
}

export interface HostToolServerOptions {
  name: string;
  version: string;
  /** Resolves calls to tools without `execute` (the host answers later, e.g. from its own loop). */
  onCall?: (call: HostToolCall) => Promise<ToolOutput>;
  /**
   * Asked before a `needsApproval` tool runs; without it such tools are refused. It may throw an
   * AcxError to refuse with a reason (and a hint) the client reads as the tool's error.
   */
  approve?: (call: HostToolCall) => Promise<boolean>;
  /**
   * Asked before a call runs, after its arguments were validated (an ACP session's hooks and tool
   * guardrails): run it — with `input` (validated again when it differs), without asking
   * `approve` when `approved` — or refuse it with a reason the client reads as the tool's error.
   */
  decide?: (call: HostToolCall) => Promise<HostCallDecision>;
  /** Sees each call's outcome before it is returned, and may replace it (an ACP session's afterToolCall hooks). */
  settle?: (call: HostToolCall, outcome: HostCallOutcome) => Promise<HostCallOutcome>;
  /** serverInfo.title in initialize: what this server is, for people. */
  title?: string;
  /** `instructions` in initialize: what this server is and how to use it, for the client's model. */
  instructions?: string;
  logger?: Logger;
  /** Served as prompts (prompts/list, prompts/get, completion of known argument values). */
  prompts?: readonly ServedPrompt[];
  /** Served as read-only resources, with subscriptions; `agentName` titles them. */
  resources?: ServedResources & { agentName: string; pollMs?: number };
  /** The host's log lines, sent to each session at the level its client chose (logging/setLevel). */
  clientLog?: ClientLogFeed;
}

export type HostCallDecision = { run: true; input: unknown; approved: boolean } | { run: false; reason: string };
export type HostCallOutcome = { output: ToolOutput; error?: undefined } | { output?: undefined; error: string };

export interface HostToolServer {
  readonly name: string;
  readonly tools: readonly Tool[];
  /** Replaces the tool set and notifies every connected client. Throws AcxError on a bad tool. */
  setTools(tools: readonly Tool[]): void;
  /** Connects one client transport (stdio, one HTTP session, in-memory) to this tool set. */
  connect(transport: Transport): Promise<Server>;
  /** Number of live connections. */
  readonly connectionCount: number;
  close(): Promise<void>;
}

interface Entry {
  tool: Tool;
  schema: NormalizedSchema;
  listed: Record<string, unknown>;
}

/**
 * MCP tool annotations from the Tool contract. A client reads them to decide whether to ask its
 * user before a call, so they never promise more than the contract does: a tool is readOnly when
 * its effect is read-only, or its kind is read (what allow-reads runs) and its effect not unsafe;
 * anything else may overwrite or delete (acx's effects promise no "additive only" writes), so it
 * is destructive; it is idempotent unless its effect is unsafe; fetch tools reach the open world.
 */
export function annotationsFor(tool: Pick<Tool, 'kind' | 'effect'>): { readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean } {
  const readOnly = tool.effect === 'read-only' || (tool.kind === 'read' && tool.effect !== 'unsafe');
  return {
    readOnlyHint: readOnly,
    destructiveHint: !readOnly,
    idempotentHint: tool.effect !== 'unsafe',
    openWorldHint: tool.kind === 'fetch',
  };
}

function compile(tools: readonly Tool[]): Map<string, Entry> {
  const entries = new Map<string, Entry>();
  for (const tool of tools) {
    if (!isValidToolName(tool.name)) {
      throw new AcxError('mcp-host-tool', `Tool name "${tool.name}" cannot be served over MCP`, {
        hint: 'Tool names must match ^[A-Za-z0-9_-]{1,64}$.',
      });
    }
    if (entries.has(tool.name)) throw new AcxError('mcp-host-tool', `Tool "${tool.name}" is listed twice`);
    let schema: NormalizedSchema;
    try {
      schema = normalizeSchema(tool.inputSchema);
    } catch (error) {
      throw new AcxError('mcp-host-tool', `Tool "${tool.name}" has an invalid input schema: ${errorMessage(error)}`, { cause: error });
    }
    const jsonSchema: JsonSchema = schema.jsonSchema;
    if (jsonSchema.type !== 'object') {
      throw new AcxError('mcp-host-tool', `Tool "${tool.name}" input schema must have "type": "object" to be served over MCP`);
    }
    entries.set(tool.name, {
      tool,
      schema,
      listed: { name: tool.name, description: tool.description, inputSchema: jsonSchema, annotations: annotationsFor(tool) },
    });
  }
  return entries;
}

export function createHostToolServer(initialTools: readonly Tool[], options: HostToolServerOptions): HostToolServer {
  const logger = options.logger ?? silentLogger;
  let entries = compile(initialTools);
  let tools: readonly Tool[] = [...initialTools];
  const sessions = new Set<Server>();

  async function callTool(name: string, args: unknown, sessionId: string, signal: AbortSignal, idempotencyKey?: string): Promise<McpCallToolResult> {
    const entry = entries.get(name);
    if (!entry) {
      const known = [...entries.keys()];
      throw new McpError(ErrorCode.InvalidParams, `There is no tool "${name}" here. ${known.length > 0 ? `The tools: ${known.join(', ')}.` : 'This server has no tools.'}`);
    }
    const checked = entry.schema.validate(args ?? {});
    if (!checked.ok) return errorResult(`Invalid arguments for ${name}: ${(checked.errors ?? []).join('; ')}`);
    const toolCallId = `mcp-${randomUUID()}`;
    let call: HostToolCall = { tool: entry.tool, input: checked.value, toolCallId, sessionId, signal };
    const log = logger.child({ tool: name, toolCallId });
    let approved = false;
    if (options.decide) {
      const decision = await options.decide(call);
      if (!decision.run) return errorResult(decision.reason);
      approved = decision.approved;
      if (decision.input !== call.input) {
        const rechecked = entry.schema.validate(decision.input);
        if (!rechecked.ok) return errorResult(`The host rewrote the arguments for ${name} into invalid ones: ${(rechecked.errors ?? []).join('; ')}`);
        call = { ...call, input: rechecked.value };
      }
    }
    const outcome = await run(entry, call, approved, log, idempotencyKey);
    if (outcome === undefined) return errorResult(`The host did not approve running ${name}.`);
    const settled = options.settle ? await options.settle(call, outcome) : outcome;
    return settled.error === undefined ? toCallToolResult(settled.output) : errorResult(settled.error);
  }

  /** Runs one decided call: its output or its error, or undefined when it needs an approval it did not get. */
  async function run(entry: Entry, call: HostToolCall, approved: boolean, log: Logger, idempotencyKey: string | undefined): Promise<HostCallOutcome | undefined> {
    const { toolCallId, sessionId, signal } = call;
    try {
      if (entry.tool.needsApproval && !approved && !(options.approve ? await options.approve(call) : false)) return undefined;
      let output: ToolOutput;
      if (entry.tool.execute) {
        // The caller's key when it sent one (acx's engine does), so a re-driven call keeps its key.
        output = await entry.tool.execute(call.input, { toolCallId, sessionId, idempotencyKey: idempotencyKey ?? toolCallId, abortSignal: signal, logger: log });
      } else if (options.onCall) {
        output = await options.onCall(call);
      } else {
        return { error: `${entry.tool.name} has no executor on this host.` };
      }
      log.debug('mcp host call', { ok: true });
      return { output };
    } catch (error) {
      log.debug('mcp host call', { ok: false });
      return { error: AcxError.isInstance(error) ? error.describe() : errorMessage(error) };
    }
  }

  const { resources } = options;
  const watch = resources && (resources.instructions !== undefined || resources.memory) ? new ResourceWatch(resources, { logger, ...(resources.pollMs !== undefined ? { pollMs: resources.pollMs } : {}) }) : undefined;

  /** One client's server; `detach` undoes what it registered with the shared feed and watch. */
  function newSession(): { server: Server; detach: () => void } {
    const mcp = new McpServer(
      { name: options.name, version: options.version, ...(options.title ? { title: options.title } : {}) },
      { ...(options.instructions ? { instructions: options.instructions } : {}) },
    );
    const server = mcp.server;
    server.registerCapabilities({ tools: { listChanged: true } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [...entries.values()].map((e) => e.listed) }) as never);
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const call = () => callTool(request.params.name, request.params.arguments, extra.sessionId ?? 'stdio', extra.signal, idempotencyKeyOf(request.params._meta));
      const result = options.clientLog ? await options.clientLog.during(server, extra.requestId, call) : await call();
      // A tool that may write may have changed a subscribed memory.
      if (watch && mayWrite(request.params.name)) await watch.check({ server, requestId: extra.requestId });
      return result as never;
    });
    if (options.prompts && options.prompts.length > 0) registerPrompts(mcp, options.prompts);
    if (resources && watch) {
      registerResources(mcp, resources, resources.agentName);
      watch.attach(server);
    }
    const stopLog = options.clientLog?.attach(server);
    return {
      server,
      detach: () => {
        stopLog?.();
        watch?.detach(server);
      },
    };
  }

  function mayWrite(name: string): boolean {
    const entry = entries.get(name);
    return entry !== undefined && !annotationsFor(entry.tool).readOnlyHint;
  }

  return {
    name: options.name,
    get tools() {
      return tools;
    },
    get connectionCount() {
      return sessions.size;
    },
    setTools(next) {
      entries = compile(next);
      tools = [...next];
      for (const server of sessions) {
        server.sendToolListChanged().catch((error: unknown) => logger.debug('mcp list_changed not delivered', { reason: errorMessage(error) }));
      }
    },
    async connect(transport) {
      const { server, detach } = newSession();
      const previous = server.onclose;
      server.onclose = () => {
        sessions.delete(server);
        detach();
        previous?.();
      };
      await server.connect(withOnePrefix(transport));
      sessions.add(server);
      return server;
    },
    async close() {
      const all = [...sessions];
      sessions.clear();
      watch?.close();
      await Promise.allSettled(all.map((s) => s.close()));
    },
  };
}

/**
 * The SDK's McpError puts `MCP error <code>: ` into its message, and the SDK client puts it there
 * again when it reads the error, so a client would show it twice: errors leave without it.
 * (Wrapping the transport's send catches the SDK's own errors too: an unknown prompt, a bad URI.)
 */
function withOnePrefix<T extends Transport>(transport: T): T {
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    if (isJSONRPCErrorResponse(message)) {
      const prefix = `MCP error ${message.error.code}: `;
      if (message.error.message.startsWith(prefix)) message = { ...message, error: { ...message.error, message: message.error.message.slice(prefix.length) } };
    }
    return send(message, options);
  };
  return transport;
}
