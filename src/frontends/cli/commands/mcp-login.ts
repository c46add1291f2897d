import type { Command } from 'commander';
import { agentMcpConfigs } from '../../../app/mcp-drop-ins.ts';
import { resolveSettings } from '../../../app/settings.ts';
import { AcxError } from '../../../core/errors.ts';
import type { McpServerConfig } from '../../../mcp/config.ts';
import type { Logger } from '../../../util/logger.ts';
import { commandLogger } from '../command-logger.ts';
import { addRunOptions, runFlags } from '../run-options.ts';

/**
 * `acx mcp login <server> [agent]`: authorizes acx for an HTTP drop-in that uses OAuth, once,
 * in the foreground — prints the authorization URL, catches the code on a loopback redirect
 * (127.0.0.1, any free port unless the drop-in's "oauth.redirectPort" says), and keeps the
 * tokens in the config home (mcp-auth/<server>.json, mode 0600). Runs, wakes and workers use
 * them from then on and refresh them before they expire.
 *
 * `acx mcp logout <server> [agent]`: revokes the tokens at the authorization server (RFC 7009,
 * where it has a revocation endpoint) and deletes them.
 *
 * The server is looked up among the drop-ins a run of the agent would connect (the config
 * home's, the agent's own, a trusted cartridge's, `--mcp`).
 */
export function registerMcpLoginCommands(mcp: Command): void {
  serverCommand(mcp, 'login', 'authorize acx for an MCP server that uses OAuth (prints the authorization URL, waits for the browser)').action(async (server: string, agent: string | undefined, options: Record<string, unknown>) => {
    const logger = commandLogger('answer');
    const { config, credentials } = await locate(server, agent, options, logger);
    const { loginMcpServer } = await import('../../../mcp/oauth/login.ts');
    const out = process.stdout;
    const cancel = new AbortController();
    const onSigint = () => cancel.abort(new AcxError('mcp-auth-failed', 'The login was cancelled'));
    process.once('SIGINT', onSigint);
    try {
      const result = await loginMcpServer({
        config,
        credentials,
        logger,
        signal: cancel.signal,
        open: (url) => {
          out.write(`Open this address in a browser to authorize acx for "${config.name}":\n\n  ${url.href}\n\nWaiting for the browser to come back (Ctrl-C cancels)...\n`);
        },
      });
      const file = credentials.fileOf({ name: config.name, url: (config as { url: string }).url });
      const granted = result.scope ? ` with scope "${result.scope}"` : '';
      const how = result.authorizations > 0 ? `Logged in to "${config.name}"${granted}` : `"${config.name}" let acx in without an authorization`;
      out.write(`${how}: ${result.toolCount} tool${result.toolCount === 1 ? '' : 's'} over ${result.transport}. The login is kept in ${file} (mode 0600).\n`);
    } finally {
      process.off('SIGINT', onSigint);
    }
  });

  serverCommand(mcp, 'logout', 'revoke and delete the tokens acx mcp login stored for an MCP server').action(async (server: string, agent: string | undefined, options: Record<string, unknown>) => {
    const logger = commandLogger('answer');
    const { config, credentials } = await locate(server, agent, options, logger);
    const { logoutMcpServer } = await import('../../../mcp/oauth/login.ts');
    const result = await logoutMcpServer({ config, credentials, logger });
    if (!result.removed) {
      process.stdout.write(`acx holds no login for "${config.name}"; nothing to do.\n`);
      return;
    }
    const revoked = result.revoked.length > 0 ? `revoked its ${result.revoked.map((kind) => kind.replace('_', ' ')).join(' and ')}` : `not revoked (${result.notRevoked ?? 'no token to revoke'})`;
    process.stdout.write(`Logged out of "${config.name}": ${revoked}; the stored login is deleted.\n`);
  });
}

/** `acx mcp <name> <server> [agent]` with the flags of acx run (which agent, which config home, --mcp). */
function serverCommand(mcp: Command, name: string, description: string): Command {
  return addRunOptions(
    mcp
      .command(name)
      .description(description)
      .argument('<server>', 'the drop-in\'s name (its file name without .json)')
      .argument('[agent]', 'the agent whose drop-in it is: its directory, .acx cartridge, or "default" for the config home\'s own agent (default "default")'),
  );
}

async function locate(server: string, agent: string | undefined, options: Record<string, unknown>, logger: Logger) {
  const settings = await resolveSettings(runFlags(agent, options), { logger });
  const { configs } = agentMcpConfigs(settings, logger);
  const config: McpServerConfig | undefined = configs.find((candidate) => candidate.name === server) ?? configs.find((candidate) => candidate.name.toLowerCase() === server.toLowerCase());
  if (!config) {
    const remote = configs.filter((candidate) => candidate.transport !== 'stdio').map((candidate) => candidate.name);
    throw new AcxError('usage', `No MCP server named "${server}" among ${agent ? `${agent}'s` : 'the config home\'s'} drop-ins`, {
      hint: remote.length > 0 ? `HTTP servers there: ${remote.join(', ')}.` : 'Add a drop-in (mcp/<name>.json with a "url"), or name the agent it belongs to: acx mcp login <server> <agent>.',
    });
  }
  const { McpCredentialStore } = await import('../../../mcp/oauth/store.ts');
  return { config, credentials: McpCredentialStore.inConfigHome(settings.configHome) };
}
