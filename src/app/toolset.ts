import { mkdirSync } from 'node:fs';
import { createSelfAuthorshipTools } from './charter.ts';
import { readOptIns } from './opt-in.ts';
import type { ResolvedSettings } from './settings.ts';
import { agentWorkspace } from './workspace.ts';
import type { MemoryProvider } from '../memory/provider.ts';
import type { McpServerStatus } from '../mcp/client.ts';
import type { McpConnector } from '../mcp/kept-connections.ts';
import { agentMcpConfigs, mcpLoginCommand } from './mcp-drop-ins.ts';
import { mcpAuditNotice } from '../mcp/audit.ts';
import type { CommandRunner } from '../tools/builtin/execute.ts';
import type { FileContents } from '../tools/builtin/fs.ts';
import { DEFAULT_BUILTINS } from '../tools/builtin/names.ts';
import { createShellTool } from '../tools/builtin/shell.ts';
import { Policy, processIsRoot } from '../tools/policy.ts';
import { type PluginReport, registerPluginTools } from '../tools/plugins.ts';
import { ToolRegistry, type SkippedTool } from '../tools/registry.ts';
import { detectIsolation, type IsolationInfo } from '../tools/sandbox/isolation.ts';
import type { Tool } from '../tools/tool.ts';
import type { Logger } from '../util/logger.ts';
import { type AgentBuiltins, assembleBuiltins, type OutputSink } from './builtins.ts';
import { createSkillTool } from './skills.ts';
import { mediaTools } from './media-tools.ts';
import type { BaseCradleClient } from '../channel/client.ts';
import { loadAgentPlugins, withPlatform } from './tool-plugins.ts';
import { guardedDirectories, warnGuardedInWorkspace } from './guarded.ts';

/**
 * Assembles the tools an agent gets: the built-ins it asks for, its skills, MCP drop-ins and
 * tools/ code plugins — each offered to the ToolRegistry, which applies the Policy and records
 * what it refused and why.
 * `acx resolved-config` reads the same assembly, so it reports what a run would really have.
 */

export interface ToolsetOptions {
  settings: ResolvedSettings;
  memory: Pick<MemoryProvider, 'tools'>;
  logger: Logger;
  /** false for resolved-config and `acx mcp`: connect no MCP server (report configured names only). */
  connectMcp: boolean;
  /** Create the workspace directory the fs and execute tools work in; false writes nothing (resolved-config). */
  createWorkspace: boolean;
  /**
   * Built lazily: the dispatch tool needs the final tool list. Its module (and the sub-agent
   * harness's) is imported only for an agent that has dispatch, hence the promise.
   */
  dispatch?: () => Promise<(tools: () => readonly Tool[]) => Tool>;
  /** Cartridge boot: tools offered besides the built-ins (the role tools add_memory, search_memory). */
  extraTools?: readonly Tool[];
  /** Where code_execution's outputs go (a timeline agent: assets); default the workspace. */
  keepOutput?: OutputSink | undefined;
  /** Cartridge boot: reshapes each acx-provided tool (not MCP) before it is offered. */
  adaptBuiltin?: (tool: Tool) => Tool;
  /** The platform a timeline agent is on: media tools read its assets by uuid, tool plugins get it in their context. */
  platform?: AgentPlatform | undefined;
  /**
   * Stands in for connecting the MCP drop-ins, given how to connect them: a long-lived process
   * hands back a connection it kept from the conversation's last event (KeptMcpConnections), and
   * the toolset's close() gives it back instead of closing it.
   */
  keptMcp?: ((connect: McpConnector) => McpConnector) | undefined;
}

/** The platform a timeline wake runs on: the agent's own client and the timeline the wake fired on. */
export interface AgentPlatform {
  client: BaseCradleClient;
  timeline: string;
}

export interface Toolset {
  registry: ToolRegistry;
  tools: Tool[];
  skipped: SkippedTool[];
  isolation: IsolationInfo;
  workspace: string;
  mcpConfigured: string[];
  mcpServers: McpServerStatus[];
  /** The tools/ plugin files whose tools are active (resolved-config's `plugins`). */
  plugins: PluginReport['active'];
  /** Standing text for the model (MCP audit notice). */
  notices: string[];
  /** The provider's server-side built-ins this agent has (resolved-config's `builtins`), for the engine. */
  builtins: AgentBuiltins;
  /**
   * fs_*, execute and shell built for other roots (an editor's project: ACP's cwd and
   * additionalDirectories), and dispatch giving its sub-agents those, each only when the policy
   * registered it here: a caller swaps them in by name, so the set of tools and what the policy
   * allowed stay as they are.
   */
  rootedTools(roots: WorkspaceRootPaths, options?: RootedToolOptions): Tool[];
  close(): Promise<void>;
}

/** Where rooted tools reach the editor: its buffers for the file tools, its terminal for execute. */
export interface RootedToolOptions {
  contents?: FileContents;
  commands?: CommandRunner;
}

export interface WorkspaceRootPaths {
  /** The primary root: relative paths and commands start here. */
  cwd: string;
  additionalDirectories?: readonly string[];
}

export async function assembleToolset(options: ToolsetOptions): Promise<Toolset> {
  const { settings, logger } = options;
  const wanted = new Set<string>(settings.definition?.manifest.tools ?? DEFAULT_BUILTINS);
  // agent.json's schema (src/agent-def/manifest.ts) already refused names that are no built-in.
  const policy = Policy.fromEnv(process.env, { grants: readOptIns(settings.configHome, { logger }) });
  const registry = new ToolRegistry({ policy, logger });
  const workspace = agentWorkspace(settings);
  // The agent's own definition and the config home: never writable to the tools, wherever the workspace is.
  const guarded = guardedDirectories(settings);
  // Probing spawns a sandboxed process; do it only for agents that can execute commands.
  const isolation: IsolationInfo = wanted.has('execute')
    ? await detectIsolation({ logger })
    : { kind: 'none', reason: 'not probed: this agent has no execute tool' };
  const offered: Tool[] = [];
  const skipped: SkippedTool[] = [];

  if (wanted.has('memory')) offered.push(...options.memory.tools());
  if (settings.definition && settings.definition.skills.length > 0) offered.push(createSkillTool(settings.definition.skills));
  if (options.extraTools) offered.push(...options.extraTools);
  // Loaded only for a timeline agent: a plain run never pays for the platform client's modules.
  const shared = options.platform ? (await import('../channel/shared-files.ts')).platformSharedFiles(options.platform.client) : undefined;
  const media = mediaTools({ provider: settings.model?.provider ?? null, baseURL: settings.model?.baseURL ?? null, workspace, guarded, grants: policy.grants, shared });
  skipped.push(...media.skipped);
  // Media tools read and write the workspace too; one of them offered but not granted writes nothing.
  const writesWorkspace = wanted.has('fs') || wanted.has('execute') || media.tools.some((tool) => policy.grants.has(tool.name));
  if (options.createWorkspace && writesWorkspace) mkdirSync(workspace, { recursive: true });
  if (writesWorkspace) warnGuardedInWorkspace(logger, [workspace], guarded);
  let executeAllowed = false;
  // The workspace tools' modules (file access, child processes, HTML conversion) load only for
  // an agent that has them: a run of a memory-only agent never reads them.
  const [fsTools, viewTool, executeTool] = await Promise.all([
    wanted.has('fs') ? import('../tools/builtin/fs.ts') : undefined,
    wanted.has('fs') ? import('../tools/builtin/view.ts') : undefined,
    wanted.has('execute') ? import('../tools/builtin/execute.ts') : undefined,
  ]);
  // The tools that work in the workspace, built the same way for the agent's own and for an editor's roots.
  const workspaceTools = ({ cwd, additionalDirectories: additionalRoots = [] }: WorkspaceRootPaths, { contents, commands }: RootedToolOptions = {}): Tool[] => [
    ...(fsTools ? fsTools.createFsTools({ workspace: cwd, additionalRoots, guarded, ...(contents ? { contents } : {}) }) : []),
    // view shows a workspace image, so it comes with the file tools.
    ...(viewTool ? [viewTool.createViewTool({ workspace: cwd, additionalRoots })] : []),
    // The probed kind, so the tool's description says what a command here can and cannot reach.
    // A runner (the editor's terminal) is used only where the policy allowed execute at all.
    ...(executeAllowed && executeTool
      ? [executeTool.createExecuteTool({ workspace: cwd, additionalRoots, guarded, profile: policy.profile, isolation: isolation.kind, ...(commands ? { runner: commands } : {}) })]
      : []),
  ];
  if (wanted.has('execute')) {
    // Without OS isolation, execute is a powerful tool: it needs the `execute-unisolated` grant,
    // and as root also the unlocked profile.
    const refusal =
      isolation.kind !== 'none'
        ? undefined
        : !policy.grants.has('execute-unisolated')
          ? `no OS isolation is available (${isolation.reason}); install bubblewrap, or grant it with acx install --opt-in execute-unisolated`
          : processIsRoot() && policy.profile === 'locked'
            ? `this process runs as root without OS isolation (${isolation.reason}); install bubblewrap or select ACX_PROFILE=unlocked`
            : undefined;
    if (refusal) skipped.push({ name: 'execute', reason: refusal });
    else executeAllowed = true;
  }
  offered.push(...workspaceTools({ cwd: workspace }));
  if (wanted.has('web_fetch')) offered.push((await import('../tools/builtin/web-fetch.ts')).createWebFetchTool());
  // Server-side built-ins: granted ones the provider runs; code_attach comes with OpenAI's code interpreter.
  const builtins = await assembleBuiltins({ settings, grants: policy.grants, workspace, logger, keepOutput: options.keepOutput, shared });
  offered.push(...builtins.tools);
  skipped.push(...builtins.skipped);
  // Powerful tools are always offered: the Policy loads them only when granted (and unlocked).
  offered.push(createShellTool({ cwd: workspace }));
  offered.push(...media.tools);
  // Self-authorship edits the agent's own system prompt: the agent directory's, or the config
  // home's for the default agent. A cartridge's prompt is signed ROM and cannot change.
  if (settings.agent.source === 'cartridge') {
    skipped.push({ name: 'system_prompt', reason: "a cartridge's system prompt is signed ROM and cannot be edited" });
  } else {
    offered.push(...createSelfAuthorshipTools(settings.definition?.path ?? settings.configHome));
  }
  const adapt = options.adaptBuiltin ?? ((tool: Tool) => tool);
  offered.splice(0, offered.length, ...offered.map(adapt));

  const { configs: mcpConfigs, skipped: badDropIns } = agentMcpConfigs(settings, logger);
  skipped.push(...badDropIns);
  const notices: string[] = [];
  let mcpServers: McpServerStatus[] = [];
  let closeMcp = async () => {};
  if (options.connectMcp && mcpConfigs.length > 0) {
    // The MCP client is the largest import; load it only when a server is configured.
    const { connectMcpServers } = await import('../mcp/client.ts');
    const { McpCredentialStore } = await import('../mcp/oauth/store.ts');
    const connect: McpConnector = (configs) =>
      connectMcpServers(configs, {
        logger,
        credentials: McpCredentialStore.inConfigHome(settings.configHome),
        loginCommand: mcpLoginCommand(settings, configs),
      });
    const connection = await (options.keptMcp ? options.keptMcp(connect) : connect)(mcpConfigs);
    mcpServers = connection.servers;
    closeMcp = () => connection.close();
    offered.push(...connection.tools);
    const audit = mcpAuditNotice(connection.servers, logger);
    if (audit) notices.push(audit.modelText);
  }

  let plugins: ReturnType<typeof registerPluginTools>;
  let dispatch: ((tools: () => readonly Tool[]) => Tool) | undefined;
  try {
    const loaded = registry.load(offered);
    skipped.push(...loaded.skipped);
    // Code plugins after acx's own tools, so a plugin can never take a built-in's name.
    plugins = registerPluginTools(registry, withPlatform(await loadAgentPlugins(settings, logger), options.platform), logger);
    skipped.push(...plugins.skipped);
    notices.push(...plugins.defects);
    dispatch = wanted.has('dispatch') && options.dispatch ? await options.dispatch() : undefined;
    if (dispatch) registry.load([adapt(dispatch(() => registry.list()))]);
  } catch (error) {
    // No toolset to close: the MCP servers connected above would outlive the failure.
    await closeMcp().catch(() => {});
    throw error;
  }
  return {
    registry,
    tools: registry.list(),
    skipped,
    isolation,
    workspace,
    mcpConfigured: mcpConfigs.map((config) => config.name).sort(),
    mcpServers,
    plugins: plugins.active,
    notices,
    builtins,
    rootedTools(roots, rootedOptions = {}) {
      const rooted = [...workspaceTools(roots, rootedOptions), createShellTool({ cwd: roots.cwd })].filter((tool) => registry.has(tool.name)).map(adapt);
      if (rooted.length > 0) warnGuardedInWorkspace(logger, [roots.cwd, ...(roots.additionalDirectories ?? [])], guarded);
      if (!registry.has('dispatch') || !dispatch) return rooted;
      // Sub-agents work in the same roots as the session that dispatches them.
      const byName = new Map(rooted.map((tool) => [tool.name, tool]));
      return [...rooted, adapt(dispatch(() => registry.list().map((tool) => byName.get(tool.name) ?? tool)))];
    },
    close: closeMcp,
  };
}
