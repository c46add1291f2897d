// The smallest ACP agent the SDK makes: it answers initialize and nothing else useful. The
// start-up anchor of bench/acp-start.ts when claude-agent-acp is not installed here: what any
// Node ACP agent pays (Node start, the SDK's import, stdio wiring) before it can answer.
import { Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk';

acp
  .agent({ name: 'minimal-acp-agent' })
  .onRequest(acp.methods.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: {},
    authMethods: [],
    agentInfo: { name: 'minimal-acp-agent', version: '1.0.0' },
  }))
  .connect(acp.ndJsonStream(Writable.toWeb(process.stdout) as WritableStream<Uint8Array>, Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>));
