import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { installedDefaults } from './install.ts';
import type { ResolvedSettings } from './settings.ts';
import { loadToolPlugins, type PluginFolder, type PluginLoad } from '../tools/plugins.ts';
import type { Tool, ToolPlatform } from '../tools/tool.ts';
import type { Logger } from '../util/logger.ts';

/**
 * Which tools/ folders an agent's code plugins come from, and loading them: the config home's,
 * then a directory agent's own. A cartridge's ROM plugins are code from its publisher, so they
 * load only when the host grants it (ACX_ALLOW_ROM_PLUGINS=1) and the cartridge is trusted;
 * otherwise each is listed as skipped, saying how to grant it. A config-home plugin the installer
 * laid down (its manifest names it) is a shipped default: broken, it is a Tool defect, not a skip.
 */
export const ROM_PLUGINS_GRANT = 'ACX_ALLOW_ROM_PLUGINS';

export function romPluginsGranted(env: NodeJS.ProcessEnv): boolean {
  return /^(1|true|yes|on)$/i.test(env[ROM_PLUGINS_GRANT]?.trim() ?? '');
}

export async function loadAgentPlugins(settings: ResolvedSettings, logger: Logger, env: NodeJS.ProcessEnv = process.env): Promise<PluginLoad> {
  const folders: PluginFolder[] = [{ dir: join(settings.configHome, 'tools'), origin: 'config-home', shipped: shippedPlugins(settings.configHome) }];
  const definition = settings.definition;
  if (definition?.kind === 'directory') folders.push({ dir: join(definition.path, 'tools'), origin: 'agent' });
  const options = { provider: settings.model?.provider ?? null, logger };
  const rom = definition?.kind === 'cartridge' ? definition.plugins : [];
  if (rom.length === 0) return loadToolPlugins(folders, options);

  const refusal = !romPluginsGranted(env)
    ? `a cartridge's ROM code plugins do not load unless the host grants it (set ${ROM_PLUGINS_GRANT}=1 to allow)`
    : settings.cartridge?.romMcpAllowed !== true
      ? `the cartridge is ${settings.cartridge?.verify.verdict ?? 'not verified'}; ROM code plugins load only from a trusted cartridge, even with ${ROM_PLUGINS_GRANT}=1`
      : undefined;
  if (refusal) {
    const load = await loadToolPlugins(folders, options);
    logger.warn('cartridge tool plugins not loaded', { plugins: rom.map((plugin) => plugin.name).join(','), reason: refusal });
    load.skipped.push(...rom.map((plugin) => ({ name: `plugin:${plugin.name}`, reason: `${plugin.file}: ${refusal}` })));
    return load;
  }
  // Import needs files: the signed ROM bytes go to a private temp folder, removed once imported.
  const dir = mkdtempSync(join(tmpdir(), 'acx-rom-plugins-'));
  try {
    for (const plugin of rom) writeFileSync(join(dir, plugin.name), plugin.bytes, { mode: 0o600 });
    const load = await loadToolPlugins([...folders, { dir, origin: 'cartridge' }], options);
    // Name ROM files as the cartridge does, not by the temp folder that is about to go.
    const rename = (text: string) => text.replaceAll(dir, 'rom/tools');
    return {
      plugins: load.plugins.map((plugin) => ({ ...plugin, file: rename(plugin.file) })),
      skipped: load.skipped.map((entry) => ({ ...entry, reason: rename(entry.reason) })),
      defects: load.defects.map(rename),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The config home's tools/ files named in the installer's manifest (none when there is no readable manifest). */
function shippedPlugins(configHome: string): Set<string> {
  let files: string[];
  try {
    files = installedDefaults(configHome);
  } catch {
    // A broken manifest is reported where it matters (acx install, the upgrade reconcile).
    return new Set();
  }
  return new Set(files.filter((file) => /^tools\/[^/]+$/.test(file)).map((file) => file.slice('tools/'.length)));
}

/**
 * The plugins' tools with the platform in their call context (a timeline wake's client and
 * timeline, as the seed's platform-aware tools get them); unchanged off a timeline. acx's own
 * tools are built with what they need, so only plugins are bound this way.
 */
export function withPlatform(load: PluginLoad, platform: ToolPlatform | undefined): PluginLoad {
  if (!platform) return load;
  const bind = (tool: Tool): Tool => (tool.execute ? { ...tool, execute: (input, context) => tool.execute!(input, { ...context, platform }) } : tool);
  return { ...load, plugins: load.plugins.map((plugin) => ({ ...plugin, tools: plugin.tools.map(bind) })) };
}
