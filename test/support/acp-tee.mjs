// An ACP agent command that records its own wire: `node acp-tee.mjs <dir> -- <command…>` runs the
// command with stdio passed through, and appends what the client sent to <dir>/<pid>.client and
// what the agent sent to <dir>/<pid>.agent, so a test can check every message a third-party
// client exchanged with acx.
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';

const [dir, separator, command, ...args] = process.argv.slice(2);
if (!dir || separator !== '--' || !command) {
  process.stderr.write('usage: acp-tee.mjs <dir> -- <command> [args…]\n');
  process.exit(2);
}
const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
const base = join(dir, String(process.pid));
process.stdin.on('data', (chunk) => {
  appendFileSync(`${base}.client`, chunk);
  child.stdin.write(chunk);
});
process.stdin.on('end', () => child.stdin.end());
child.stdout.on('data', (chunk) => {
  appendFileSync(`${base}.agent`, chunk);
  process.stdout.write(chunk);
});
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => child.kill(signal));
child.on('close', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
