export { createAcpServer, type AcpServer, type AcpServerOptions } from './server.ts';
export { serveAcp, type ServeAcpOptions } from './serve.ts';
export { takeStdio, type AcpStdio } from './stdio.ts';
export { AcpSession, type AcpSessionOptions } from './session.ts';
export { sessionModes, parseModeId } from './modes.ts';
export { toUserContent, promptCapabilities, type PromptAcceptance } from './prompt-content.ts';
export { clientMcpConfigs, type ClientMcpServers } from './mcp-servers.ts';
export { replayUpdates } from './replay.ts';
export { TurnTranslator, stopReasonOf, toolTitle, toolOutputContent, acpToolKind, promptUsage, STEP_BUDGET_STOP_REASON } from './updates.ts';
