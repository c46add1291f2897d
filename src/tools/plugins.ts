import { lstatSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { basename, extname, join, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { errorMessage } from '../core/errors.ts';
import { untrustedFileReason } from '../util/file-trust.ts';
import type { Logger } from '../util/logger.ts';
import { fromSdkTool, isSdkTool, type SdkTool } from './ai-sdk-tool.ts';
import { ToolDefinitionError, type SkippedTool, type ToolRegistry } from './registry.ts';
import type { Tool } from './tool.ts';
import { isPluginFileName } from './plugin-names.ts';

export { isPluginFileName, PLUGIN_EXTENSIONS } from './plugin-names.ts';

/**
 * Drop-in tool plugins: `tools/*.js|*.mjs|*.ts` in the config home and in an agent directory
 * (and, only when the host grants it, in a cartridge's ROM). A plugin is code the operator
 * installed; it runs with acx's own rights, so it is loaded only from those folders (a symbolic
 * link pointing out of one is refused), only when no one but acx's user or root could have
 * written it (file-trust.ts; checked before the file is read, so a refused file's top-level code
 * never runs), and every tool it gives still goes through the Policy.
 *
 * The export rule (one): the module's **default export** is an acx tool, an AI SDK tool (named
 * by the file's stem), an array of acx tools, or an object of named tools (`{ weather: tool(…) }`,
 * the AI SDK's ToolSet shape; the key names an AI SDK tool, an acx tool keeps its own name).
 * Named exports are ignored. AI SDK tools get the safe default (kind other, effect unsafe).
 *
 * Provider affinity is read from a header comment before any code, never by importing:
 * `// acx-provider: openai` (a comma list) loads the file only for those providers.
 *
 * A broken user drop-in is a soft skip with a WARNING; a broken plugin acx itself ships (one the
 * installer laid down; none ships today) is an ERROR and a "Tool defect" line for the brief.
 */
export type PluginOrigin = 'config-home' | 'agent' | 'cartridge' | 'shipped';

export interface PluginFolder {
  dir: string;
  origin: PluginOrigin;
  /** Files here that acx itself laid down (the installer's manifest): they load as origin `shipped`. */
  shipped?: ReadonlySet<string>;
}

export interface PluginLoadOptions {
  /** The agent's model provider (`openai`, `xai`, …), or null when none is selected. */
  provider: string | null;
  logger: Logger;
}

export interface PluginLoad {
  /** The tools each loaded file gave, in file order. */
  plugins: Array<{ file: string; origin: PluginOrigin; tools: Tool[] }>;
  skipped: SkippedTool[];
  /** "Tool defect" lines for the brief: shipped plugins that did not load. */
  defects: string[];
}

/** What registration made of the plugins: the files whose tools are active, the skips and the defects. */
export interface PluginReport {
  active: Array<{ file: string; origin: PluginOrigin; tools: string[] }>;
  skipped: SkippedTool[];
  defects: string[];
}


const AFFINITY = /^(?:\/\/+|\/\*+|\*+)\s*acx-provider:\s*([^*]*?)\s*(?:\*\/)?$/i;

/**
 * The providers a plugin is meant for, from its leading comments (`// acx-provider: openai, xai`),
 * or null when it names none (it loads for every provider). Reading stops at the first line of code.
 */
export function readProviderAffinity(source: string): string[] | null {
  let inBlock = false;
  for (const [index, raw] of source.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (line === '' || (index === 0 && line.startsWith('#!'))) continue;
    const comment = inBlock || line.startsWith('//') || line.startsWith('/*');
    if (!comment) return null;
    const found = AFFINITY.exec(line);
    if (found) return found[1]!.split(/[\s,]+/).filter(Boolean).map((name) => name.toLowerCase());
    if (line.startsWith('/*')) inBlock = !line.includes('*/');
    else if (inBlock && line.includes('*/')) inBlock = false;
  }
  return null;
}

export async function loadToolPlugins(folders: readonly PluginFolder[], options: PluginLoadOptions): Promise<PluginLoad> {
  const result: PluginLoad = { plugins: [], skipped: [], defects: [] };
  const provider = options.provider?.split('.')[0]?.toLowerCase() ?? null;
  for (const folder of folders) {
    for (const file of listPluginFiles(folder.dir)) {
      const origin = folder.shipped?.has(basename(file)) ? 'shipped' : folder.origin;
      const fail = (reason: string) => pluginFailed(result, options.logger, origin, file, reason);
      const outside = linkOutside(folder.dir, file);
      if (outside) {
        fail(`it is a symbolic link to ${outside}, outside ${folder.dir}; plugins load only from the tools/ folders themselves`);
        continue;
      }
      const untrusted = untrustedFileReason(file);
      if (untrusted) {
        fail(`not loaded: ${untrusted}`);
        continue;
      }
      let source: string;
      try {
        source = readFileSync(file, 'utf8');
      } catch (error) {
        fail(`it cannot be read (${errorMessage(error)})`);
        continue;
      }
      const affinity = readProviderAffinity(source);
      if (affinity && (provider === null || !affinity.includes(provider))) {
        const reason = `${file}: it is for ${affinity.join(', ')} only (acx-provider header), and this agent's provider is ${provider ?? 'not selected'}; not imported`;
        result.skipped.push({ name: `plugin:${basename(file)}`, reason });
        options.logger.info('tool plugin not for this provider', { file, providers: affinity.join(','), provider: provider ?? 'none' });
        continue;
      }
      let module: Record<string, unknown>;
      try {
        // The file's mtime and size in the URL: a long-running process (acx acp, the router) sees an
        // edited plugin on its next toolset instead of Node's cached copy of the first one.
        const { mtimeMs, size } = statSync(file);
        module = (await import(`${pathToFileURL(file).href}?acx-version=${mtimeMs}-${size}`)) as Record<string, unknown>;
      } catch (error) {
        fail(`importing it failed (${error instanceof Error ? `${error.name}: ${error.message}` : errorMessage(error)})`);
        continue;
      }
      try {
        result.plugins.push({ file, origin, tools: toolsOfModule(module, file) });
      } catch (error) {
        fail(errorMessage(error));
      }
    }
  }
  return result;
}

/**
 * Registers each plugin tool through the registry (so the Policy decides), one at a time: a
 * refused tool is listed as skipped with the policy's reason, a malformed one is a failed plugin
 * (soft skip, or a defect for a shipped one), and neither stops the others.
 */
export function registerPluginTools(registry: ToolRegistry, load: PluginLoad, logger: Logger): PluginReport {
  const outcome: PluginLoad = { plugins: [], skipped: [...load.skipped], defects: [...load.defects] };
  const active: PluginReport['active'] = [];
  for (const plugin of load.plugins) {
    const registered: string[] = [];
    for (const tool of plugin.tools) {
      try {
        const loaded = registry.load([tool]);
        registered.push(...loaded.registered);
        for (const refused of loaded.skipped) outcome.skipped.push({ name: refused.name, reason: `${plugin.file}: ${refused.reason}` });
      } catch (error) {
        if (!ToolDefinitionError.isInstance(error)) throw error;
        pluginFailed(outcome, logger, plugin.origin, plugin.file, `its tool "${String(tool.name)}" is malformed: ${errorMessage(error)}`, String(tool.name));
      }
    }
    if (registered.length > 0) active.push({ file: plugin.file, origin: plugin.origin, tools: registered });
  }
  return { active, skipped: outcome.skipped, defects: outcome.defects };
}

function pluginFailed(result: PluginLoad, logger: Logger, origin: PluginOrigin, file: string, reason: string, name = `plugin:${basename(file)}`): void {
  result.skipped.push({ name, reason: `${file}: ${reason}` });
  if (origin === 'shipped') {
    logger.error('tool defect', { file, reason });
    result.defects.push(
      `Tool defect: the tool plugin ${basename(file)} that acx ships did not load (${reason}). Its tools are missing from this run; tell the operator (reinstall acx, or run acx install).`,
    );
  } else {
    logger.warn('tool plugin skipped', { file, reason });
  }
}

/** The plugin files directly in `dir` (no subfolders), sorted; none when it does not exist. */
function listPluginFiles(dir: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  return entries
    .filter(isPluginFileName)
    .sort()
    .map((name) => join(dir, name))
    .filter((file) => {
      const st = lstatSync(file, { throwIfNoEntry: false });
      return st !== undefined && (st.isFile() || st.isSymbolicLink());
    });
}

/** Where `file` really is, when a link takes it out of `dir` (or nowhere); undefined when it stays inside. */
function linkOutside(dir: string, file: string): string | undefined {
  if (!lstatSync(file).isSymbolicLink()) return undefined;
  let real: string;
  try {
    real = realpathSync(file);
  } catch {
    return 'a missing file';
  }
  const root = realpathSync(dir);
  return real.startsWith(root + sep) && lstatSync(real).isFile() ? undefined : real;
}

function toolsOfModule(module: Record<string, unknown>, file: string): Tool[] {
  const exported = module.default;
  const stem = basename(file, extname(file));
  const rule = 'give a default export: a tool, an array of acx tools, or an object of named tools ({ name: tool })';
  if (exported === undefined) throw new Error(`it exports nothing usable (no default export); ${rule}`);
  if (exported === null || typeof exported !== 'object') throw new Error(`its default export is a ${exported === null ? 'null' : typeof exported}, not a tool; ${rule}`);
  const entries: Array<[string | undefined, unknown]> = Array.isArray(exported)
    ? exported.map((value) => [undefined, value])
    : isToolShaped(exported)
      ? [[stem, exported]]
      : Object.entries(exported);
  if (entries.length === 0) throw new Error(`its default export holds no tools; ${rule}`);
  return entries.map(([key, value]) => asTool(value, key, rule));
}

function isToolShaped(value: object): boolean {
  return 'inputSchema' in value || ('name' in value && 'kind' in value);
}

function asTool(value: unknown, key: string | undefined, rule: string): Tool {
  if (value === null || typeof value !== 'object' || !isToolShaped(value)) {
    throw new Error(`${key ? `"${key}" in its default export` : 'an entry of its default export'} is not a tool; ${rule}`);
  }
  if (isSdkTool(value)) {
    if (!key) throw new Error('an AI SDK tool in an array has no name; export an object { name: tool } instead');
    return fromSdkTool(key, value as SdkTool);
  }
  // A copy, so acx never changes the module's own objects.
  return { ...(value as Tool) };
}
