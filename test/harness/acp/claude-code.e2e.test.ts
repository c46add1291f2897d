import { createClaudeCodeACP } from '../../../src/harness/acp/profiles/factories.ts';
import { describeRealAgent, REAL_KEY } from './real-agent-suite.ts';

// Claude Code (@agentclientprotocol/claude-agent-acp), installed by the adapter's npm-simple
// bootstrap into ACX_CACHE_DIR (default ~/.cache/acx); the first run downloads it from npm.
describeRealAgent({
  name: 'Claude Code',
  harness: (server, extra) => createClaudeCodeACP({ hostEnv: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: REAL_KEY }, progress: null, ...extra }),
  permissionMode: 'allow-reads',
  permissionCall: { name: 'Bash', input: { command: 'echo approved > approved.txt', description: 'Write a file' } },
  keyHeader: (r) => r.headers['x-api-key'],
});
