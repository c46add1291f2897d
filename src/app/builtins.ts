import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import type { BaseCradleClient } from '../channel/client.ts';
import type { ResolvedSettings } from './settings.ts';
import { readSearchParams } from './search-params.ts';
import { type BuiltinAvailability, builtinAvailability, type HostedActivity, type ProviderBuiltins, providerBuiltins } from '../model/builtins.ts';
import { openaiCodeFiles } from '../model/openai-code-files.ts';
import { PROVIDERS } from '../model/providers.ts';
import { createCodeAttachTool } from '../tools/builtin/code-attach.ts';
import type { SharedFiles } from '../tools/builtin/media-files.ts';
import type { SkippedTool } from '../tools/registry.ts';
import type { Tool } from '../tools/tool.ts';
import type { Logger } from '../util/logger.ts';
import type { GuardedDirectory } from '../tools/sandbox/protected.ts';
import { replaceContent, Workspace } from '../tools/sandbox/workspace.ts';
import { guardedDirectories } from './guarded.ts';

/**
 * The provider's server-side built-ins an agent gets: the granted ones its provider runs on its
 * surface (the rest listed under skipped with the reason), and with OpenAI's code interpreter
 * the code_attach tool and the keeping of what a run wrote (workspace/code-output/).
 */
export interface AgentBuiltins {
  availability: BuiltinAvailability;
  /** For the engine; undefined when none is active. */
  builtins: ProviderBuiltins | undefined;
  /** Function tools that come with a built-in (code_attach), offered to the registry like any tool. */
  tools: Tool[];
  skipped: SkippedTool[];
  /** search_params.json as sent to OpenRouter's server tool; null when not in use or absent. */
  searchParams: Record<string, unknown> | null;
}

const NO_INTERPRETER = "it feeds files to OpenAI's code interpreter, which is not active here";

/** Where a code run's files and source are kept, inside the workspace. */
export const CODE_OUTPUT_DIR = 'code-output';

/**
 * Where a file a code run produced is kept; returns how the reply's Files: footer names it.
 * The default is the workspace; a timeline agent posts it as an asset (timelineOutputSink).
 */
export type OutputSink = (file: { name: string; data: Uint8Array | string; callId: string }) => Promise<string>;

/**
 * Code outputs are written with fs_write's confinement: the model's code names them, and
 * code-output/ may have been made a link (by a command) to a folder acx loads code from.
 */
export function workspaceOutputSink(workspace: string, guarded: readonly GuardedDirectory[] = []): OutputSink {
  const confined = new Workspace(workspace, {}, guarded);
  return async ({ name, data }) => {
    mkdirSync(workspace, { recursive: true }); // an agent without fs or execute has none yet
    const file = confined.openWrite(`${CODE_OUTPUT_DIR}/${name}`);
    replaceContent(file, typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
    return `${CODE_OUTPUT_DIR}/${name}`;
  };
}

/**
 * A timeline agent's outputs become assets on the timeline. Each create is keyed by the run's
 * call id and the file name, so a resumed turn that keeps the same run again gets the first
 * asset back instead of posting a second one.
 */
export function timelineOutputSink(client: BaseCradleClient, timeline: string): OutputSink {
  return async ({ name, data, callId }) => {
    const idempotencyKey = createHash('sha256').update(`acx-code-output\0${timeline}\0${callId}\0${name}`).digest('hex');
    const asset = await client.assets.create(timeline, { data, filename: name, description: `code_execution output (${callId})` }, { idempotencyKey });
    return `asset ${asset.content.uuid} (${name})`;
  };
}

export async function assembleBuiltins(options: {
  settings: ResolvedSettings;
  grants: ReadonlySet<string>;
  workspace: string;
  logger: Logger;
  env?: NodeJS.ProcessEnv;
  /** Where code outputs go; default the workspace's code-output/. */
  keepOutput?: OutputSink | undefined;
  /** On a platform: its assets, which code_attach can feed the sandbox by uuid. */
  shared?: SharedFiles | undefined;
}): Promise<AgentBuiltins> {
  const { settings, grants, workspace, logger } = options;
  const env = options.env ?? process.env;
  const model = settings.model;
  const provider = model?.provider;
  const surface = model?.surface ?? (provider ? PROVIDERS[provider]?.surfaces[0] : undefined);
  const availability = builtinAvailability({ provider, surface, grants });
  // On an ACP harness the agent's own process calls its model: acx's model call, which carries the built-ins, is not made.
  if (settings.harness && settings.harness !== 'engine') {
    availability.skipped.push(
      ...availability.active.map(({ name }) => ({ name, reason: `the ${settings.harness} harness runs its own model calls; server-side built-ins ride acx's engine only` })),
    );
    availability.active = [];
  }
  const skipped: SkippedTool[] = availability.skipped.map(({ name, reason }) => ({ name, reason }));
  const tools: Tool[] = [];
  if (availability.active.length === 0 || !provider || !surface) {
    if (grants.has('code_attach')) skipped.push({ name: 'code_attach', reason: NO_INTERPRETER });
    return { availability, builtins: undefined, tools, skipped, searchParams: null };
  }
  // search_params.json matters only where it is read: OpenRouter's server tool.
  const searchParams = provider === 'openrouter' && availability.active.some((b) => b.name === 'web_search') ? readSearchParams(settings.configHome).value : undefined;
  const codeOnOpenAI = provider === 'openai' && availability.active.some((b) => b.name === 'code_execution');
  const definition = PROVIDERS[provider]!;
  const apiKey = definition.keyEnv.map((name) => env[name]).find(Boolean);
  const baseURL = model?.baseURL ?? (definition.baseUrlEnv ? env[definition.baseUrlEnv] : undefined) ?? definition.defaultBaseUrl;
  const files = codeOnOpenAI ? await openaiCodeFiles({ apiKey, baseURL }) : undefined;
  const builtins = await providerBuiltins(
    availability.active,
    { provider, surface, searchParams },
    files ? (activity) => keepCodeOutputs(activity, files, options.keepOutput ?? workspaceOutputSink(workspace, guardedDirectories(settings)), logger) : undefined,
  );
  if (files) {
    tools.push(
      createCodeAttachTool({
        workspace,
        shared: options.shared,
        attach: async (file, signal) => {
          const fileId = await files.upload(file, signal);
          await builtins.attach(fileId);
          return fileId;
        },
      }),
    );
  } else if (grants.has('code_attach')) {
    const codeActive = availability.active.some((b) => b.name === 'code_execution');
    skipped.push({ name: 'code_attach', reason: codeActive ? `${provider}'s code execution takes no input files (only OpenAI's code interpreter does)` : NO_INTERPRETER });
  }
  return { availability, builtins, tools, skipped, searchParams: searchParams ?? null };
}

/**
 * Keeps what OpenAI code runs of one step produced: each run's source as `<call id>.py`, and
 * every file the code wrote in its container (listed, so a file the model did not mention is
 * kept too), through the sink. Returns how the sink named them.
 */
async function keepCodeOutputs(activity: HostedActivity, files: Awaited<ReturnType<typeof openaiCodeFiles>>, sink: OutputSink, logger: Logger): Promise<string[]> {
  const kept: string[] = [];
  // Files a container holds are named by the run that made them (the step's first run when several share it).
  const containers = new Map<string, string>();
  for (const call of activity.hosted) {
    const input = call.input as { code?: unknown; containerId?: unknown } | undefined;
    if (call.toolName !== 'code_execution' || !input) continue;
    if (typeof input.code === 'string' && input.code) kept.push(await sink({ name: `${safeName(call.toolCallId)}.py`, data: input.code, callId: call.toolCallId }));
    if (typeof input.containerId === 'string' && !containers.has(input.containerId)) containers.set(input.containerId, call.toolCallId);
  }
  for (const document of activity.documents) {
    const containerId = (document.providerMetadata?.openai as { containerId?: unknown } | undefined)?.containerId;
    if (typeof containerId === 'string' && !containers.has(containerId)) containers.set(containerId, containerId);
  }
  for (const [containerId, callId] of containers) {
    for (const file of await files.list(containerId)) {
      if (file.source !== 'assistant') continue; // an attached input, not something the run made
      kept.push(await sink({ name: safeName(file.path.split('/').pop() ?? file.id), data: await files.download(containerId, file.id), callId }));
    }
  }
  if (kept.length > 0) logger.info('code output kept', { files: kept.join(','), containers: containers.size });
  return kept;
}

/** A provider-supplied name made safe as one file name in code-output/ (no separators, no dot-only names). */
function safeName(name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_');
  return cleaned || 'file';
}
