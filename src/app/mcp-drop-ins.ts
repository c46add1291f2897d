import { join } from 'node:path';
import { fromOrigin, loadMcpConfigs, type McpDropInDocument, type McpServerConfig, parseMcpDropIns, readMcpDropInDir, untrustedDropIn } from '../mcp/config.ts';
import type { SkippedTool } from '../tools/registry.ts';
import type { Logger } from '../util/logger.ts';
import { agentMcpDir, type ResolvedSettings } from './settings.ts';

/**
 * The MCP servers an agent's runs connect, in the order they are connected: the config home's
 * drop-ins, then a directory agent's own (from its definition), a trusted cartridge's ROM
 * drop-ins, then `--mcp` flags. Drop-ins are read forgivingly (a broken file is skipped, loudly);
 * flags strictly. Each knows its origin, which decides whether a turn may start without it when
 * its file does not say (fromOrigin). `acx mcp login` finds the server it logs in to here too.
 */
export function agentMcpConfigs(
  settings: Pick<ResolvedSettings, 'configHome' | 'definition' | 'cartridge' | 'mcp'>,
  logger: Logger,
): { configs: McpServerConfig[]; skipped: SkippedTool[] } {
  const home = readMcpDropInDir(join(settings.configHome, 'mcp'));
  const dropIns = parseMcpDropIns([...home.documents, ...agentDropIns(settings)], home.skipped);
  const skipped: SkippedTool[] = [];
  for (const bad of dropIns.skipped) {
    logger.warn('mcp drop-in skipped', { server: bad.name, file: bad.source, reason: bad.reason });
    skipped.push({ name: `mcp:${bad.name}`, reason: `${bad.source}: ${bad.reason}` });
  }
  const specs = loadMcpConfigs({ specs: settings.mcp }).map((config) => fromOrigin(config, 'flag'));
  return { configs: [...dropIns.configs, ...cartridgeMcpConfigs(settings), ...specs], skipped };
}

/** A cartridge's ROM drop-ins, when it is trusted enough to start them (with the host variables granted to it). */
export function cartridgeMcpConfigs(settings: Pick<ResolvedSettings, 'cartridge'>): McpServerConfig[] {
  const cartridge = settings.cartridge;
  if (!cartridge?.romMcpAllowed) return [];
  return cartridge.rom.mcp.map((config) => ({ ...fromOrigin(config, 'cartridge'), envGrant: cartridge.envGrant }));
}

/** The `acx mcp login` that logs in to a server of this agent: its agent argument, and the `--mcp` flag a flag's server came from. */
export function mcpLoginCommand(settings: Pick<ResolvedSettings, 'agent'>, configs: readonly McpServerConfig[]): (server: string) => string {
  return (server) => {
    const config = configs.find((candidate) => candidate.name === server);
    const agent = settings.agent.path ? ` ${JSON.stringify(settings.agent.path)}` : '';
    return `acx mcp login ${server}${agent}${config?.origin === 'flag' ? ` ${config.source}` : ''}`;
  };
}

/**
 * A directory agent's drop-ins as its definition read them (relative paths resolve against its
 * mcp/), each refused when someone else could have written its file.
 */
function agentDropIns(settings: Pick<ResolvedSettings, 'definition'>): McpDropInDocument[] {
  const dir = agentMcpDir(settings);
  if (!dir) return [];
  return settings.definition!.mcp.map((dropIn) => {
    const source = join(dir, `${dropIn.name}.json`);
    return { name: dropIn.name, source, text: untrustedDropIn(source) ?? dropIn.text, baseDir: dir, origin: 'agent' as const };
  });
}
