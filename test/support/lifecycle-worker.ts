// A second process for the lifecycle tests: opens the same journal home as the test, lists the
// sessions paused for approval, and answers one — continuing its turn here. It prints one JSON
// line: what it listed, and the continued turn's result. Its one tool writes a file, so the test
// can see where the approved call ran.
//   node test/support/lifecycle-worker.ts '{"home":…,"baseURL":…,"marker":…,"approve":true}'
import { createEngineHarness } from '../../src/harness/engine-harness.ts';
import { HarnessAgent } from '../../src/harness/harness-agent.ts';
import { resolveModel } from '../../src/model/providers.ts';
import { deployTool } from './deploy-tool.ts';

const args = JSON.parse(process.argv[2]!) as { home: string; baseURL: string; marker: string; approve: boolean };

const model = await resolveModel({ spec: 'openai:m', env: { OPENAI_API_KEY: 'sk-test-worker', OPENAI_BASE_URL: args.baseURL } });
const harness = createEngineHarness({ model, home: args.home, retryBaseMs: 1 });
const agent = new HarnessAgent({ harness, id: 'ops', tools: [deployTool(args.marker)] });
const listed = await agent.listSuspended();
const entry = listed[0]!;
const session = await agent.createSession({ continueFrom: entry.state });
const result = await agent.continueGenerate({
  session,
  approvals: entry.pendingApprovals.map((a) => ({ approvalId: a.approvalId, approved: args.approve })),
});
process.stdout.write(
  `${JSON.stringify({ pid: process.pid, listed: listed.map(({ sessionId, turnId, suspendedBy, pendingApprovals }) => ({ sessionId, turnId, suspendedBy, pendingApprovals })), text: result.text, finishReason: result.finishReason })}\n`,
);
await harness.close?.();
