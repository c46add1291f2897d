import { afterAll } from 'vitest';
import { createCodexACP } from '../../../src/harness/acp/profiles/factories.ts';
import { type NamespaceProxy, startResponsesNamespaceProxy } from '../../support/model-server/responses-namespace.ts';
import { describeRealAgent, REAL_KEY } from './real-agent-suite.ts';

// Codex (@zed-industries/codex-acp), installed by the adapter's npm-simple bootstrap into
// ACX_CACHE_DIR (default ~/.cache/acx). Only 'allow-all' is supported (Codex's own sandbox must
// not run inside acx's), so Codex never asks for permission here. Codex sends MCP tools as
// Responses API namespaces; the namespace proxy lets the scripted server call them.
let proxy: NamespaceProxy | undefined;
afterAll(async () => proxy?.close());

describeRealAgent({
  name: 'Codex',
  harness: async (server) => {
    proxy = await startResponsesNamespaceProxy(server.url);
    return createCodexACP({ hostEnv: { OPENAI_BASE_URL: proxy.openaiBaseURL, OPENAI_API_KEY: REAL_KEY }, progress: null });
  },
  permissionMode: 'allow-all',
  keyHeader: (r) => r.headers.authorization,
});
