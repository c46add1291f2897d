// The agent process's stdout filter, on a real child process: JSON-object lines reach the ACP
// connection (parsed once, validated by the SDK), other lines are dropped as noise without any
// parse error sent back, and a line over the size limit closes the connection with a clear error.
import { spawn } from 'node:child_process';
import type * as acp from '@agentclientprotocol/sdk';
import { describe, expect, it } from 'vitest';
import { connectAgentProcess } from '../../../src/harness/acp/agent-process.ts';
import { silentLogger } from '../../../src/util/logger.ts';

/** A child that runs `script`, echoing whatever it receives on stdin to stderr (as `got:` lines). */
function child(script: string) {
  const source = `process.stdin.on('data', (d) => process.stderr.write('got:' + d)); ${script}`;
  return spawn(process.execPath, ['-e', source], { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
}

const update = (text: string) => JSON.stringify({ jsonrpc: '2.0', method: 'session/update', params: { sessionId: 's1', update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } } } });

describe('agent process stdout', () => {
  it('passes JSON-object lines, split anywhere (even inside a character), and drops the rest as noise without answering it', async () => {
    const line = update('héllo wörld ✓');
    const bytes = Buffer.from(`${line}\n`);
    const cut = bytes.indexOf(Buffer.from('✓')) + 1; // inside the three bytes of ✓
    const script = [
      `const w = (s) => process.stdout.write(s);`,
      `w('banner: not JSON\\n');`,
      `w('{not json either\\n');`,
      `w('[1, 2]\\n');`,
      `w('\\n   \\n');`,
      `process.stdout.write(Buffer.from(${JSON.stringify(bytes.subarray(0, cut).toString('base64'))}, 'base64'));`,
      `setTimeout(() => { process.stdout.write(Buffer.from(${JSON.stringify(bytes.subarray(cut).toString('base64'))}, 'base64')); w(${JSON.stringify(update('second') + '\n' + update('third'))}); }, 50);`,
      `setTimeout(() => w('\\n'), 100);`,
      `setInterval(() => {}, 1000);`,
    ].join('\n');
    const texts: string[] = [];
    let seen!: () => void;
    const three = new Promise<void>((resolve) => (seen = resolve));
    const proc = connectAgentProcess(
      child(script),
      {
        onUpdate: (params: acp.SessionNotification) => {
          if (params.update.sessionUpdate === 'agent_message_chunk' && params.update.content.type === 'text') texts.push(params.update.content.text);
          if (texts.length === 3) seen();
        },
        onPermission: async () => ({ outcome: { outcome: 'cancelled' } }),
      },
      { label: 'test-agent', logger: silentLogger },
    );
    await three;
    expect(texts).toEqual(['héllo wörld ✓', 'second', 'third']);
    expect(proc.noiseLines).toBe(3);
    await new Promise((r) => setTimeout(r, 100));
    expect(proc.stderrTail()).toBe(''); // nothing was sent back: no parse-error responses
    await proc.stop();
  });

  it('closes the connection with a clear error on a line longer than the limit, even one that never ends', async () => {
    const script = `process.stdout.write('{"jsonrpc":"2.0","method":"x","params":"' + 'a'.repeat(5000)); setInterval(() => {}, 1000);`;
    const proc = connectAgentProcess(child(script), { onUpdate: () => {}, onPermission: async () => ({ outcome: { outcome: 'cancelled' } }) }, { label: 'test-agent', logger: silentLogger, maxMessageBytes: 1000 });
    const answer = proc.connection.agent.request('initialize' as never, { protocolVersion: 1 } as never);
    await expect(answer).rejects.toThrow(/longer than 1000 bytes/);
    await proc.stop();
  });
});
