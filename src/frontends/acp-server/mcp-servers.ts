import type * as acp from '@agentclientprotocol/sdk';
import { fromOrigin, parseMcpServerEntry, type McpServerConfig } from '../../mcp/config.ts';
import { errorMessage } from '../../core/errors.ts';

/**
 * The MCP servers an ACP client hands over in `session/new` / `session/load`, as acx MCP
 * configs: stdio, Streamable HTTP and the legacy HTTP+SSE transport (all three advertised). A
 * server that cannot be used is told to the user in the session (and logged), never fatal: the
 * session still starts with the agent's own tools.
 */
export interface ClientMcpServers {
  configs: McpServerConfig[];
  /** The client's name of each config's server (a config's name is fitted to acx's tool names). */
  clientNames: Map<string, string>;
  rejected: UnusableServer[];
}

/** A client server acx does not use, by the client's name for it. */
export interface UnusableServer {
  name: string;
  reason: string;
}

/** MCP server names prefix tool names, so they are fitted to acx's name pattern. */
function serverName(name: string, index: number, taken: Set<string>): string {
  let fitted = name.replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^[^A-Za-z0-9]+/, '').slice(0, 64);
  if (!fitted) fitted = `server${index + 1}`;
  let candidate = fitted;
  for (let i = 2; taken.has(candidate.toLowerCase()); i++) candidate = `${fitted.slice(0, 60)}_${i}`;
  taken.add(candidate.toLowerCase());
  return candidate;
}

export function clientMcpConfigs(servers: readonly acp.McpServer[], cwd: string): ClientMcpServers {
  const configs: McpServerConfig[] = [];
  const clientNames = new Map<string, string>();
  const rejected: UnusableServer[] = [];
  const taken = new Set<string>();
  servers.forEach((server, index) => {
    const name = serverName(server.name, index, taken);
    clientNames.set(name, server.name);
    const source = `ACP client server "${server.name}"`;
    try {
      if ('url' in server) {
        const headers = Object.fromEntries(server.headers.map((h) => [h.name, h.value]));
        const type = 'type' in server && server.type === 'sse' ? 'sse' : 'http';
        configs.push(fromOrigin(parseMcpServerEntry(name, { type, url: server.url, headers }, source, cwd), 'client'));
        return;
      }
      const env = Object.fromEntries(server.env.map((e) => [e.name, e.value]));
      configs.push(fromOrigin(parseMcpServerEntry(name, { command: server.command, args: server.args, env, cwd }, source, cwd), 'client'));
    } catch (error) {
      rejected.push({ name: server.name, reason: errorMessage(error) });
    }
  });
  return { configs, clientNames, rejected };
}

/**
 * How the servers acx could not use are told to the user: a warning notice each, where the client
 * advertised that it shows notices (ACP's rule), else one agent message listing them all.
 */
export function unusableServerUpdates(unusable: readonly UnusableServer[], clientShowsNotices: boolean): acp.SessionUpdate[] {
  if (unusable.length === 0) return [];
  if (clientShowsNotices) {
    return unusable.map(({ name, reason }) => ({
      sessionUpdate: 'notice',
      severity: 'warning',
      title: `MCP server "${name}" is not available in this session`,
      description: reason,
    }));
  }
  const heading = unusable.length === 1 ? 'An MCP server from the editor is' : `${unusable.length} MCP servers from the editor are`;
  const lines = unusable.map(({ name, reason }) => `- "${name}": ${reason}`);
  return [{ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `${heading} not available in this session:\n${lines.join('\n')}\n\n` } }];
}
