import { ACX_VERSION } from '../../util/version.ts';

/**
 * How acx names itself to an ACP agent (clientInfo) and in attribution headers. Its own module so
 * that checking a profile's credentials does not load the ACP client (the SDK, the MCP server).
 */
export const DEFAULT_CLIENT_APP = { name: 'acx/harness-acp', version: ACX_VERSION };
