import { AcxError, PolicyError, errorMessage, errorMarker, setMarker } from '../core/errors.ts';
import { silentLogger, type Logger } from '../util/logger.ts';
import { Policy, type PolicyTool } from './policy.ts';
import { runTool } from './run.ts';
import { normalizeToolSchema, type JsonSchema, type NormalizedSchema } from './schema.ts';
import { isCapabilityScope, isValidToolName, type Tool, type ToolContext, type ToolOutput } from './tool.ts';

/**
 * The ToolRegistry holds the tools a turn may call. Registration checks the definition (name,
 * scopes, kind, effect, schema) and asks the Policy; running validates arguments against the
 * schema and turns every failure into a result for the model, so a bad call never crashes a turn.
 */

const TOOL_DEFINITION_MARKER = errorMarker('ToolDefinitionError');

/** A tool definition is malformed (bad name, scope, kind, effect or schema, or a duplicate). */
export class ToolDefinitionError extends AcxError {
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super('tool-invalid', message, options);
    setMarker(this, TOOL_DEFINITION_MARKER);
    this.name = 'ToolDefinitionError';
  }

  static override isInstance(error: unknown): error is ToolDefinitionError {
    return AcxError.hasMarker(error, TOOL_DEFINITION_MARKER);
  }
}

export interface ToolRunResult {
  ok: boolean;
  /** What goes back to the model: the tool's output, or an error message it can act on. */
  output: ToolOutput | string;
  error?: string;
}

export interface SkippedTool {
  name: string;
  reason: string;
}

export interface RegisteredToolInfo {
  name: string;
  kind: Tool['kind'];
  effect: Tool['effect'];
  capabilityScopes: string[];
}

export interface ToolRegistryOptions {
  /** Defaults to the locked profile: a registry built without a policy is the safe one. */
  policy?: Policy;
  logger?: Logger;
}

const KINDS = new Set(['read', 'edit', 'execute', 'fetch', 'other']);
const EFFECTS = new Set(['read-only', 'idempotent', 'unsafe']);

interface Entry {
  tool: Tool;
  schema: NormalizedSchema;
}

export class ToolRegistry {
  readonly policy: Policy;
  private readonly logger: Logger;
  private readonly entries = new Map<string, Entry>();
  private readonly skippedTools: SkippedTool[] = [];

  constructor(options: ToolRegistryOptions = {}) {
    this.policy = options.policy ?? Policy.locked();
    this.logger = options.logger ?? silentLogger;
  }

  /** Adds a tool, or throws ToolDefinitionError (malformed) / PolicyError (refused, with why). */
  register(tool: Tool): this {
    const schema = this.checkDefinition(tool);
    const decision = this.policy.check(tool as PolicyTool);
    if (!decision.allowed) {
      throw new PolicyError(`Tool "${tool.name}" was refused by the ${this.policy.profile} policy: ${decision.reason}.`, {
        hint: 'Leave the tool out, or change the policy deliberately (grants, profile) if you mean to allow it.',
      });
    }
    this.entries.set(tool.name, { tool, schema });
    return this;
  }

  /**
   * Registers each tool the policy allows and records the others as skipped (with the reason),
   * for `acx resolved-config`. Malformed tools still throw: they are bugs, not policy.
   */
  load(tools: Iterable<Tool>): { registered: string[]; skipped: SkippedTool[] } {
    const registered: string[] = [];
    const skipped: SkippedTool[] = [];
    for (const tool of tools) {
      try {
        this.register(tool);
        registered.push(tool.name);
      } catch (error) {
        if (!PolicyError.isInstance(error)) throw error;
        const reason = this.policy.check(tool as PolicyTool).reason;
        skipped.push({ name: tool.name, reason });
        this.skippedTools.push({ name: tool.name, reason });
        // An opt-in tool nobody granted is the safe default, not a problem worth a warning.
        const notGranted = (tool as PolicyTool).optIn === true && !this.policy.grants.has(tool.name);
        (notGranted ? this.logger.debug : this.logger.warn).call(this.logger, 'tool_skipped', {
          tool: tool.name,
          profile: this.policy.profile,
          reason,
        });
      }
    }
    return { registered, skipped };
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  get(name: string): Tool | undefined {
    return this.entries.get(name)?.tool;
  }

  names(): string[] {
    return [...this.entries.keys()];
  }

  list(): Tool[] {
    return [...this.entries.values()].map((entry) => entry.tool);
  }

  /** The JSON Schema the model sees for a tool. */
  jsonSchema(name: string): JsonSchema | undefined {
    return this.entries.get(name)?.schema.jsonSchema;
  }

  /** Tools offered to `load` and refused by the policy, with the reason. */
  skipped(): SkippedTool[] {
    return [...this.skippedTools];
  }

  /** Ground truth for `acx resolved-config`. */
  describe(): { profile: string; grants: string[]; tools: RegisteredToolInfo[]; skipped: SkippedTool[] } {
    return {
      profile: this.policy.profile,
      grants: this.policy.describe().grants,
      tools: this.list().map((tool) => ({
        name: tool.name,
        kind: tool.kind,
        effect: tool.effect,
        capabilityScopes: [...tool.capabilityScopes],
      })),
      skipped: this.skipped(),
    };
  }

  /**
   * Validates `input` and runs the tool. Never throws: an unknown tool, invalid arguments, a tool
   * without `execute` or a thrown error all come back as `{ ok: false, output: <message> }`.
   */
  async run(name: string, input: unknown, context: ToolContext): Promise<ToolRunResult> {
    const logger = context.logger ?? this.logger;
    const entry = this.entries.get(name);
    let message: string;
    if (!entry) {
      message = `Unknown tool "${name}". Available tools: ${this.names().join(', ') || 'none'}.`;
    } else if (context.abortSignal?.aborted) {
      message = `Tool "${name}" was not run: the turn was cancelled.`;
    } else {
      // One validation/execute path for the engine and the registry (tools/run.ts).
      const outcome = await runTool(entry.tool, entry.schema, input, context);
      if (outcome.ok) return { ok: true, output: outcome.output };
      message = outcome.error;
    }
    // The message may quote the model's arguments; the logger scrubs and bounds it.
    logger.warn('tool_error', { tool: name, error: message });
    return { ok: false, output: message, error: message };
  }

  private checkDefinition(tool: Tool): NormalizedSchema {
    const name = typeof tool?.name === 'string' ? tool.name : String(tool?.name);
    if (!isValidToolName(name)) {
      throw new ToolDefinitionError(`Tool name "${name}" is invalid.`, {
        hint: 'Use 1-64 characters from A-Z, a-z, 0-9, "_" and "-".',
      });
    }
    if (this.entries.has(name)) {
      throw new ToolDefinitionError(`A tool named "${name}" is already registered.`, {
        hint: 'Give each tool a unique name, or leave the duplicate out.',
      });
    }
    if (typeof tool.description !== 'string' || tool.description.trim() === '') {
      throw new ToolDefinitionError(`Tool "${name}" has no description.`, {
        hint: 'The model chooses tools by their description; write one sentence saying what it does.',
      });
    }
    if (!Array.isArray(tool.capabilityScopes)) {
      throw new ToolDefinitionError(`Tool "${name}" has no capabilityScopes list.`, {
        hint: 'Declare the scopes it needs, e.g. ["fs.read"] (an empty list for none).',
      });
    }
    const badScopes = tool.capabilityScopes.filter((scope) => typeof scope !== 'string' || !isCapabilityScope(scope));
    if (badScopes.length > 0) {
      throw new ToolDefinitionError(`Tool "${name}" declares unknown capability scope(s): ${badScopes.map(String).join(', ')}.`, {
        hint: 'Use exec, dispatch, memory.write, memory.read, search, knowledge.write, fs.read, fs.write, net.fetch, or an x-<vendor> scope.',
      });
    }
    if (!KINDS.has(tool.kind)) {
      throw new ToolDefinitionError(`Tool "${name}" has an unknown kind "${String(tool.kind)}".`, {
        hint: 'Use one of: read, edit, execute, fetch, other.',
      });
    }
    if (!EFFECTS.has(tool.effect)) {
      throw new ToolDefinitionError(`Tool "${name}" has an unknown effect "${String(tool.effect)}".`, {
        hint: 'Use one of: read-only, idempotent, unsafe.',
      });
    }
    if (tool.execute !== undefined && typeof tool.execute !== 'function') {
      throw new ToolDefinitionError(`Tool "${name}" has an execute that is not a function.`);
    }
    if (typeof tool.inputSchema !== 'object' || tool.inputSchema === null) {
      throw new ToolDefinitionError(`Tool "${name}" has no inputSchema.`, {
        hint: 'Give a zod schema or a JSON Schema (2020-12) object.',
      });
    }
    try {
      return normalizeToolSchema(tool.inputSchema);
    } catch (error) {
      throw new ToolDefinitionError(`Tool "${name}" has an invalid inputSchema: ${errorMessage(error)}`, {
        hint: 'Fix the schema so it compiles as JSON Schema 2020-12.',
        cause: error,
      });
    }
  }
}
