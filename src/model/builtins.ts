import type { ToolSet } from 'ai';
import type { ModelSurface } from './providers.ts';

/**
 * Server-side built-ins: tools the provider runs inside the model call (web search, X search,
 * code execution). acx never executes them; it declares them to the model through the AI SDK's
 * own provider tools and reads back what they did (sources, hosted results).
 *
 * Each is a powerful tool, off on every provider until granted (config/opt-in.ts); the provider
 * and surface decide only whether a granted one is available. A built-in the provider cannot
 * run self-excludes with the reason, so exactly one `web_search` exists per configuration.
 */
export type BuiltinName = 'web_search' | 'x_search' | 'code_execution';

export interface BuiltinContext {
  provider: string;
  surface: ModelSurface;
  /** OpenRouter's search parameters, the config home's search_params.json verbatim. */
  searchParams?: Record<string, unknown> | undefined;
  /** OpenAI files (code_attach) the code interpreter's container starts with. */
  fileIds?: readonly string[] | undefined;
}

interface ProviderBinding {
  surfaces: readonly ModelSurface[];
  /** The provider tool's id as the AI SDK names it (reported by resolved-config). */
  providerTool: string;
  create(context: BuiltinContext): Promise<ToolSet[string]>;
}

interface BuiltinDefinition {
  name: BuiltinName;
  /** The opt-in that grants it. */
  grant: string;
  bindings: Readonly<Record<string, ProviderBinding>>;
}

const openaiTools = async () => (await import('@ai-sdk/openai')).openai.tools;
const xaiTools = async () => (await import('@ai-sdk/xai')).xai.tools;

export const BUILTINS: readonly BuiltinDefinition[] = [
  {
    name: 'web_search',
    grant: 'web_search',
    bindings: {
      openai: { surfaces: ['responses'], providerTool: 'openai.web_search', create: async () => (await openaiTools()).webSearch({}) as ToolSet[string] },
      xai: { surfaces: ['responses'], providerTool: 'xai.web_search', create: async () => (await xaiTools()).webSearch({}) as ToolSet[string] },
      openrouter: {
        surfaces: ['chat'],
        providerTool: 'openrouter.web_search',
        // The file is passed through unchanged as the server tool's `parameters`; no file, the bare tool.
        create: async ({ searchParams }) => {
          const { openrouter } = await import('@openrouter/ai-sdk-provider');
          return openrouter.tools.webSearch((searchParams ? { parameters: searchParams } : {}) as never) as unknown as ToolSet[string];
        },
      },
    },
  },
  {
    name: 'x_search',
    grant: 'x_search',
    bindings: {
      xai: { surfaces: ['responses'], providerTool: 'xai.x_search', create: async () => (await xaiTools()).xSearch({}) as ToolSet[string] },
    },
  },
  {
    name: 'code_execution',
    grant: 'code_execution',
    bindings: {
      openai: {
        surfaces: ['responses'],
        providerTool: 'openai.code_interpreter',
        create: async ({ fileIds }) =>
          (await openaiTools()).codeInterpreter({ container: { fileIds: [...(fileIds ?? [])] } }) as unknown as ToolSet[string],
      },
      xai: { surfaces: ['responses'], providerTool: 'xai.code_execution', create: async () => (await xaiTools()).codeExecution({}) as ToolSet[string] },
    },
  },
];

export interface BuiltinAvailability {
  active: Array<{ name: BuiltinName; providerTool: string }>;
  /** Granted built-ins this provider or surface cannot run, with the reason. */
  skipped: Array<{ name: BuiltinName; reason: string }>;
}

/**
 * Which built-ins a configuration has: those granted (by opt-in name) that the provider runs on
 * this surface. Pure: no provider package is loaded, so resolved-config can report it keyless.
 */
export function builtinAvailability(options: { provider: string | undefined; surface: ModelSurface | undefined; grants: ReadonlySet<string> }): BuiltinAvailability {
  const result: BuiltinAvailability = { active: [], skipped: [] };
  for (const definition of BUILTINS) {
    if (!options.grants.has(definition.grant)) continue;
    const binding = options.provider ? definition.bindings[options.provider] : undefined;
    const runsOn = Object.keys(definition.bindings).join(', ');
    if (!options.provider) result.skipped.push({ name: definition.name, reason: `no model is selected; it runs server-side on ${runsOn}` });
    else if (!binding) result.skipped.push({ name: definition.name, reason: `the ${options.provider} provider has no server-side ${definition.name}; it runs on ${runsOn}` });
    else if (!options.surface || !binding.surfaces.includes(options.surface)) {
      result.skipped.push({
        name: definition.name,
        reason: `${options.provider} runs it only on the ${binding.surfaces.join('/')} surface, not ${options.surface ?? 'this one'} (set ACX_MODEL_SURFACE=${binding.surfaces[0]})`,
      });
    } else result.active.push({ name: definition.name, providerTool: binding.providerTool });
  }
  return result;
}

/** The provider tools for the active built-ins, keyed by built-in name (the name the model and the journal see). */
export async function createBuiltinTools(active: BuiltinAvailability['active'], context: BuiltinContext): Promise<ToolSet> {
  const tools: ToolSet = {};
  for (const { name } of active) {
    const binding = BUILTINS.find((definition) => definition.name === name)!.bindings[context.provider]!;
    tools[name] = await binding.create(context);
  }
  return tools;
}

/**
 * The built-ins an engine declares to its model. `tools()` may change between calls (a file
 * attached with code_attach joins the code interpreter's container), so it is asked per call;
 * it returns the same object while nothing changed, so preparing it is cached.
 */
export interface ProviderBuiltins {
  readonly names: readonly BuiltinName[];
  tools(): ToolSet;
  /**
   * Called once a step's assistant message is journaled, with what the built-ins did in it: keeps
   * what they produced (OpenAI code interpreter files and source, saved to the workspace) and
   * returns the saved files' paths for the reply's Files: footer.
   */
  afterCall?(activity: HostedActivity): Promise<string[]>;
}

/** What the provider's built-ins did in one model call (see engine/model-call.ts). */
export interface HostedActivity {
  hosted: ReadonlyArray<{ toolCallId: string; toolName: string; input: unknown; output?: unknown }>;
  documents: ReadonlyArray<{ id: string; title: string; filename?: string | undefined; providerMetadata?: Record<string, unknown> | undefined }>;
}

/** Built-ins whose tool set is rebuilt when a file is attached (OpenAI code_execution). */
export async function providerBuiltins(
  active: BuiltinAvailability['active'],
  context: BuiltinContext,
  afterCall?: ProviderBuiltins['afterCall'],
): Promise<ProviderBuiltins & { attach(fileId: string): Promise<void> }> {
  const fileIds: string[] = [...(context.fileIds ?? [])];
  let current = await createBuiltinTools(active, { ...context, fileIds });
  return {
    names: active.map((builtin) => builtin.name),
    tools: () => current,
    ...(afterCall ? { afterCall } : {}),
    async attach(fileId: string) {
      if (!fileIds.includes(fileId)) fileIds.push(fileId);
      current = await createBuiltinTools(active, { ...context, fileIds });
    },
  };
}
