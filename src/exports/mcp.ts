/**
 * `acx/mcp` — MCP both ways: the client for drop-in servers (`loadMcpConfigs`,
 * `connectMcpServers`, `bridgeMcpTool`; `loginMcpServer` / `logoutMcpServer` with a
 * `McpCredentialStore` for OAuth servers) and the server that exposes acx tools to any MCP client
 * (`createHostToolServer` with `serveStdio` / `serveHttp`, bearer-token protected).
 */
import '../node-guard.ts';
export * from '../mcp/index.ts';
