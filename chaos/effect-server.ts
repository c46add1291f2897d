// The chaos fleet's MCP drop-in: one unsafe tool, `append`, that appends its line to the effect
// file (O_APPEND, one write per call), so every side effect the fleet performs can be counted.
// Its faults are files in the control directory the chaos run writes:
//   slow-start  — holds its MCP handshake this many milliseconds (the file's content);
//   die-mid-call — the next call performs its effect, then the process dies before answering
//                  (the worst case: the work is done and the caller cannot know it).
import { appendFileSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const effectFile = process.env.CHAOS_EFFECT_FILE ?? '';
const control = process.env.CHAOS_CONTROL_DIR ?? '';
if (!effectFile || !control) {
  process.stderr.write('effect-server: CHAOS_EFFECT_FILE and CHAOS_CONTROL_DIR must be set\n');
  process.exit(2);
}

/** Takes a one-shot fault: renaming is atomic, so of several servers exactly one takes it. */
function take(fault: string): boolean {
  try {
    renameSync(join(control, fault), join(control, `${fault}.taken-${process.pid}`));
    return true;
  } catch {
    return false;
  }
}

function slowStartMs(): number {
  try {
    return Number(readFileSync(join(control, 'slow-start'), 'utf8')) || 0;
  } catch {
    return 0;
  }
}

const server = new McpServer({ name: 'chaos-effects', version: '1.0.0' });
server.registerTool('append', { description: 'Appends one line to the effect file (not idempotent).', inputSchema: { line: z.string() } }, async ({ line }) => {
  appendFileSync(effectFile, `${line}\n`);
  if (take('die-mid-call')) process.exit(9);
  return { content: [{ type: 'text', text: `appended ${line}` }] };
});

const delay = slowStartMs();
if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
await server.connect(new StdioServerTransport());
process.stdin.on('end', () => process.exit(0));
