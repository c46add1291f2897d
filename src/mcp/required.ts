import { AcxError } from '../core/errors.ts';
import type { McpServerStatus } from './client.ts';

/**
 * A turn never starts without a required MCP server (McpServerConfig.required): an agent that
 * answers without the tool it was built around loses the effect the event asked for, and its
 * event would be marked done all the same. Returns the error that stops the run, wake or worker
 * job before its turn — naming each server, why it did not start and what to do — or undefined
 * when every required server is up. Optional servers that failed were each logged as a WARNING.
 */
export function requiredServersDown(servers: readonly McpServerStatus[]): AcxError | undefined {
  const down = servers.filter((server) => server.required && server.status !== 'ok');
  if (down.length === 0) return undefined;
  const names = down.map((server) => `"${server.name}"`).join(', ');
  const why = down.map((server) => `${server.name} (${server.source}): ${server.reason ?? 'it did not start'}`).join('; ');
  const optional = down.map(withoutIt).join('; ');
  return new AcxError('mcp-unavailable', `No turn was started: the required MCP server${down.length > 1 ? 's' : ''} ${names} did not start. ${why}.`, {
    hint:
      `Fix the server and try again (a wake's event stays pending for the retry); if it is only slow to start, raise ACX_MCP_START_TIMEOUT (seconds). ` +
      `To let turns run without it: ${optional}.`,
  });
}

/** How a turn could go ahead without the server, by where its config came from. */
function withoutIt(server: McpServerStatus): string {
  switch (server.origin) {
    case 'cartridge':
      return `"${server.name}" is in the cartridge's signed ROM, so only its author can mark it "optional": true`;
    case 'flag':
      return `leave out ${server.source}, or give it as a .json file that says "optional": true`;
    case 'host':
      return `drop "required": true from ${server.source}`;
    case 'agent':
    case 'client':
      return `set "optional": true in ${server.source}`;
  }
}
