/** MCP: the client for drop-in servers and the server that exposes acx host tools (and an agent's prompts, resources and log lines). */
export {
  loadMcpConfigDir,
  loadMcpConfigFile,
  loadMcpConfigs,
  parseMcpConfigDocument,
  parseMcpServerEntry,
  parseMcpSpec,
  splitCommandLine,
  expandEnvReferences,
  type McpServerConfig,
  type McpStdioServerConfig,
  type McpHttpServerConfig,
} from './config.ts';
export type { McpOAuthConfig, McpOAuthGrant } from './oauth-config.ts';
export { loginMcpServer, logoutMcpServer, type LoginOptions, type LoginResult, type LogoutResult } from './oauth/login.ts';
export { McpCredentialStore } from './oauth/store.ts';
export {
  connectMcpServers,
  resolveMcpTimeoutMs,
  DEFAULT_MCP_TIMEOUT_MS,
  type ConnectMcpOptions,
  type McpConnection,
  type McpServerStatus,
} from './client.ts';
export { bridgeMcpTool, prepareInputSchema } from './bridge.ts';
export { bridgedToolName } from './names.ts';
export {
  describeImageForTextModel,
  base64ByteLength,
  fromMcpContent,
  mapCallToolResult,
  toCallToolResult,
  McpToolError,
  type McpToolOutput,
} from './content.ts';
export { mcpAuditNotice, type McpAuditNotice } from './audit.ts';
export { createHostToolServer, type HostToolServer, type HostToolServerOptions, type HostToolCall } from './host-server.ts';
export { serveStdio, serveHttp, generateToken, tokenMatches, type HttpServing, type StdioServing, type ServeHttpOptions } from './serve.ts';
export { createClientLogFeed, type ClientLogFeed } from './client-log.ts';
export { type ServedPrompt, type ServedPromptArgument } from './prompts.ts';
export { type ServedMemory, type ServedResources } from './resources.ts';
