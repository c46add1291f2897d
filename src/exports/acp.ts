/**
 * `acx/acp` — drive any ACP v1 coding agent behind HarnessAgent, and serve acx as one.
 *
 * - `createACP(settings)`: a Harness for any ACP agent (install recipe, launch, auth, model and
 *   permission mapping, sandbox, credential broker).
 * - The six ready profiles: `createClaudeCodeACP`, `createCodexACP`, `createGeminiCliACP`,
 *   `createOpenCodeACP`, `createCursorACP`, `createGrokBuildACP` (and their settings objects, to
 *   extend), plus `createProfileHarness(name)` by name.
 * - The ACP server for embedding (`createAcpServer`, `serveAcp`): what `acx acp` runs, to put an
 *   acx agent behind an editor's ACP client from your own process.
 */
import '../node-guard.ts';
export * from '../harness/acp/index.ts';
export { createAcpServer, serveAcp, type AcpServer, type AcpServerOptions, type ServeAcpOptions } from '../frontends/acp-server/index.ts';
