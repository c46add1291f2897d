import { readFileSync } from 'node:fs';

const ACX_VERSION: string = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/**
 * How acx names itself to an ACP agent (clientInfo) and in attribution headers. Its own module so
 * that checking a profile's credentials does not load the ACP client (the SDK, the MCP server).
 */
export const DEFAULT_CLIENT_APP = { name: 'acx/harness-acp', version: ACX_VERSION };
