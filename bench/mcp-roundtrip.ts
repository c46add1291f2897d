/**
 * MCP drop-in cost, measured in one run. Run: `npx node bench/mcp-roundtrip.ts [calls] [starts]`.
 *
 * 1. Tool-call round trip through a stdio MCP drop-in (the bridged acx Tool → SDK client →
 *    child process → SDK server → back, including argument validation and result mapping),
 *    against calling the same function in-process. Prints both and the ratio.
 * 2. Server start-up (spawn + initialize + tools/list, as connectMcpServers does it on every
 *    wake) against one round trip: how many calls a start-up costs.
 * No thresholds; the numbers are for reading.
 */
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectMcpServers } from '../src/mcp/client.ts';
import { parseMcpServerEntry } from '../src/mcp/config.ts';
import type { ToolContext } from '../src/tools/tool.ts';
import { silentLogger } from '../src/util/logger.ts';

const CALLS = Number(process.argv[2] ?? 2000);
const STARTS = Number(process.argv[3] ?? 10);
const fixture = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../test/fixtures/mcp/stdio-server.ts');
const config = parseMcpServerEntry('bench', { command: process.execPath, args: [fixture] }, 'bench', process.cwd());
const context: ToolContext = {
  toolCallId: 'bench',
  sessionId: 'bench',
  idempotencyKey: 'bench',
  abortSignal: new AbortController().signal,
  logger: silentLogger,
};

// The same work the fixture's `echo` tool does, as a local async tool would run it.
async function echoInProcess(input: { text: string }): Promise<string> {
  return `echo: ${input.text}`;
}

function fmt(ms: number): string {
  return ms >= 1 ? `${ms.toFixed(2)} ms` : `${(ms * 1000).toFixed(1)} µs`;
}

async function timeLoop(n: number, fn: (i: number) => Promise<unknown>): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < n; i++) await fn(i);
  return (performance.now() - start) / n;
}

const connection = await connectMcpServers([config], { logger: silentLogger });
const echo = connection.tools.find((t) => t.name === 'bench__echo');
if (!echo?.execute) throw new Error(`the fixture server did not start: ${JSON.stringify(connection.servers)}`);

// Warm up both paths (JIT, validator compile, pipe buffers).
await timeLoop(100, (i) => Promise.resolve(echo.execute!({ text: `w${i}` }, context)));
await timeLoop(1000, (i) => echoInProcess({ text: `w${i}` }));

const viaMcp = await timeLoop(CALLS, (i) => Promise.resolve(echo.execute!({ text: `call ${i}` }, context)));
const inProcess = await timeLoop(CALLS * 10, (i) => echoInProcess({ text: `call ${i}` }));
await connection.close();

let startTotal = 0;
for (let i = 0; i < STARTS; i++) {
  const start = performance.now();
  const c = await connectMcpServers([config], { logger: silentLogger });
  startTotal += performance.now() - start;
  if (c.servers[0]?.status !== 'ok') throw new Error(`start ${i} failed: ${c.servers[0]?.reason}`);
  await c.close();
}
const startup = startTotal / STARTS;

console.log(`MCP round trip (stdio drop-in, ${CALLS} sequential calls)`);
console.log(`  through MCP:       ${fmt(viaMcp)} per call`);
console.log(`  in-process:        ${fmt(inProcess)} per call`);
console.log(`  ratio MCP / local: ${(viaMcp / inProcess).toFixed(0)}x`);
console.log(`MCP server start-up (spawn + initialize + tools/list, ${STARTS} runs)`);
console.log(`  start-up:          ${fmt(startup)}`);
console.log(`  = ${(startup / viaMcp).toFixed(0)} round trips`);
