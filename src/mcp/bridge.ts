import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { normalizeSchema, type JsonSchema, type NormalizedSchema } from '../tools/schema.ts';
import type { Tool, ToolKind } from '../tools/tool.ts';
import { AcxError, errorMessage } from '../core/errors.ts';
import type { McpServerConfig } from './config.ts';
import type { ElicitationRouter } from './elicitation.ts';
import { mapCallToolResult, type McpContentBlock } from './content.ts';
import { IDEMPOTENCY_KEY_META } from './meta.ts';
import { PausableDeadline } from '../util/deadline.ts';
import { ServerLink } from './server-link.ts';

/** The SDK's own per-request timer is kept out of the way (the longest a timer can wait); the call's PausableDeadline bounds it. */
const NO_SDK_TIMEOUT = 2_147_483_647;

/**
 * One MCP server tool as an acx Tool named `<server>__<tool>`. Calls are validated against the
 * server's inputSchema before they leave the host, bounded by the per-request timeout, and
 * cancelled with the turn. Capability scopes, kind and effect come from the server's config
 * (default: none, 'other', 'unsafe'). One server hint is taken: a tool the server marks
 * `readOnlyHint` is read-kind when the config names no kind, so a permission mode that allows
 * reads runs it without asking (as editors treat such tools). Its effect stays the config's:
 * annotations never loosen the policy (scopes) or crash recovery (a re-run needs `effect`).
 */
export interface McpToolDescriptor {
  name: string;
  title?: string;
  description?: string;
  inputSchema: JsonSchema;
  annotations?: { readOnlyHint?: boolean; [hint: string]: unknown };
}

/** The config's kind; a tool the server marks read-only is a read when the config left the kind at 'other'. */
export function bridgedKind(server: Pick<McpServerConfig, 'kind'>, tool: Pick<McpToolDescriptor, 'annotations'>): ToolKind {
  return server.kind === 'other' && tool.annotations?.readOnlyHint === true ? 'read' : server.kind;
}

/** The validator (Ajv, draft 2020-12) only knows its own meta-schema; older `$schema`/`$id` roots are dropped. */
export function prepareInputSchema(schema: JsonSchema): JsonSchema {
  const copy: JsonSchema = { ...schema };
  const declared = copy.$schema;
  if (typeof declared === 'string' && !declared.includes('2020-12')) delete copy.$schema;
  delete copy.$id;
  if (copy.type === undefined) copy.type = 'object';
  return copy;
}

export function bridgeMcpTool(options: {
  /** The server's client, or (connectMcpServers) its ServerLink, which starts an exited server again. */
  client: Client | ServerLink;
  server: McpServerConfig;
  tool: McpToolDescriptor;
  name: string;
  timeoutMs: number;
  /** Where the server's elicitations during a call go (the call's user); absent: the client declares none. */
  elicitations?: ElicitationRouter;
  /** Told when a call is given up (cancelled, or timed out) while the server may still be running it. */
  onAbandoned?: () => void;
}): { tool: Tool; schema: NormalizedSchema } {
  const { client, server, tool: remote, name, timeoutMs, elicitations, onAbandoned } = options;
  const inputSchema = prepareInputSchema(remote.inputSchema);
  const schema = normalizeSchema(inputSchema); // throws on a schema that cannot be compiled
  const description = remote.description?.trim() || remote.title?.trim() || `Tool ${remote.name} of the MCP server ${server.name}.`;

  const bridged: Tool = {
    name,
    description,
    inputSchema,
    capabilityScopes: [...server.scopes],
    kind: bridgedKind(server, remote),
    effect: server.effect,
    async execute(input, context) {
      const checked = schema.validate(input ?? {});
      if (!checked.ok) {
        throw new AcxError('mcp-invalid-input', `Invalid arguments for ${name}: ${(checked.errors ?? []).join('; ')}`, {
          hint: 'Call the tool again with arguments that match its input schema.',
        });
      }
      let result;
      // The time limit stands still while the server waits on the user (an elicitation being answered).
      const deadline = new PausableDeadline(timeoutMs);
      try {
        const params = {
          name: remote.name,
          arguments: (checked.value ?? {}) as Record<string, unknown>,
          _meta: { [IDEMPOTENCY_KEY_META]: context.idempotencyKey },
        };
        const signal = AbortSignal.any([context.abortSignal, deadline.signal]);
        const send = (to: Client) => to.callTool(params, undefined, { timeout: NO_SDK_TIMEOUT, signal });
        const call = () => (client instanceof ServerLink ? client.call(remote, server.effect, signal, send) : send(client));
        result = elicitations ? await elicitations.during(name, context, deadline, call) : await call();
      } catch (error) {
        if (context.abortSignal.aborted) {
          onAbandoned?.();
          throw new AcxError('mcp-cancelled', `${name} was cancelled: ${errorMessage(context.abortSignal.reason)}`, { cause: error });
        }
        if (deadline.expired || (error instanceof McpError && error.code === ErrorCode.RequestTimeout)) {
          onAbandoned?.();
          throw new AcxError('mcp-timeout', `${name} did not answer within ${Math.round(timeoutMs / 100) / 10} s`, {
            hint: 'The MCP server may be stuck; the operator can raise ACX_MCP_TIMEOUT (seconds).',
            cause: error,
          });
        }
        // What to do travels with the failure (a login to run): the model and the user read the same line.
        const why = AcxError.isInstance(error) && error.hint ? `${error.message}. ${error.hint}` : errorMessage(error);
        throw new AcxError('mcp-call-failed', `${name} failed: ${why}`, { cause: error });
      } finally {
        deadline.clear();
      }
      return mapCallToolResult(result as Parameters<typeof mapCallToolResult>[0] & { content?: McpContentBlock[] });
    },
  };
  return { tool: bridged, schema };
}
