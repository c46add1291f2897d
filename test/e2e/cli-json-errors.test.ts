// Issue 9 item 8: under --json every error is one JSON object on stdout,
// {"error":{"code","message","hint"}}, whatever raised it — a usage error commander found, a
// command's own refusal, a configuration error, a blocked build — and nothing else is printed
// there, so a program reading stdout always gets JSON.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, runAcx, STACK_FRAME, tempDir } from '../support/cli.ts';
import { scaled } from '../support/time-scale.ts';

const AGENT = join(ROOT, 'examples/notes-keeper');

describe.concurrent('errors under --json (e2e)', { timeout: scaled(120_000) }, () => {
  it('a usage error found by the argument parser', async () => {
    const run = await runAcx(['run', AGENT, 'hi', '--json', '--no-such-flag']);
    expect(run.status).toBe(2);
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({ error: { code: 'usage', message: 'unknown option --no-such-flag for acx run', hint: 'run `acx run --help` for its usage' } });
  });

  it("a command's own refusal (no prompt)", async () => {
    const run = await runAcx(['run', AGENT, '--json', '--replay', join(AGENT, 'cassettes/quickstart.json')]);
    expect(run.status).toBe(2);
    expect(JSON.parse(run.stdout)).toEqual({ error: { code: 'usage', message: 'give a prompt as an argument or on stdin.', hint: 'run `acx run --help` for its usage' } });
  });

  it('a configuration error, with its hint', async () => {
    const run = await runAcx(['run', '/nonexistent/agent', 'hi', '--json']);
    expect(run.status).toBe(1);
    const { error } = JSON.parse(run.stdout) as { error: { code: string; message: string; hint: string } };
    expect(error.code).toBe('config');
    expect(error.message).toBe('/nonexistent/agent does not exist.');
    expect(error.hint).toBe(`Give an agent directory or a .acx cartridge; \`acx init /nonexistent/agent\` creates an agent there (the layout: ${join(ROOT, 'docs/agent-layout.md')}).`);
    const notAnAgent = JSON.parse((await runAcx(['run', join(ROOT, 'docs'), 'hi', '--json'])).stdout) as { error: { message: string; hint: string } };
    expect(notAnAgent.error).toEqual({
      code: 'config',
      message: `${join(ROOT, 'docs')} is not an acx agent directory (no agent.json).`,
      hint: `Create one with \`acx init ${join(ROOT, 'docs')}\`, or run the example agent at ${join(ROOT, 'examples/notes-keeper')} (the layout: ${join(ROOT, 'docs/agent-layout.md')}).`,
    });
    // Naming the agent's agent.json instead of its directory: said plainly, with the directory to pass.
    const file = JSON.parse((await runAcx(['run', 'examples/notes-keeper/agent.json', 'hi', '--json'])).stdout) as { error: { message: string; hint: string } };
    expect(file.error).toEqual({ code: 'config', message: "examples/notes-keeper/agent.json is the agent's agent.json; acx takes the agent's directory.", hint: 'Pass the directory that holds it: examples/notes-keeper.' });
    expect(run.stderr).not.toMatch(STACK_FRAME);
  });

  it('a refused handshake: stdout holds the one descriptor, the JSON-RPC refusal goes to stderr', async () => {
    const run = await runAcx(['handshake', join(ROOT, 'examples/cartridges/notes-keeper/harness-requirements.json'), '--no-builtins', '--context-window', '200000', '--json']);
    expect(run.status).toBe(3);
    const descriptor = JSON.parse(run.stdout) as { schemaVersion: string };
    expect(descriptor.schemaVersion).toBe('acx.harness.compliance.v1');
    expect(JSON.parse(run.stderr)).toMatchObject({ code: -32602, message: 'Unsupported harness' });
  });

  it('a build the scrub gate blocks: the error carries the findings', async () => {
    const root = tempDir('acx-json-build-');
    const agent = join(root, 'agent');
    mkdirSync(join(agent, 'prompts'), { recursive: true });
    writeFileSync(join(agent, 'agent.json'), JSON.stringify({ id: 'leaky', name: 'Leaky', version: '0.1.0', description: 'Leaks a key.' }));
    writeFileSync(join(agent, 'prompts/system-prompt.md'), 'AWS key AKIAIOSFODNN7EXAMPLE\n');
    const keys = await runAcx(['keygen', '-o', join(root, 'keys')]);
    expect(keys.status, keys.stderr).toBe(0);
    const run = await runAcx(['build', agent, '-o', join(root, 'x.acx'), '--key', join(root, 'keys/acx-signing.key.pem'), '--publisher', 'dev.acx.test', '--json']);
    expect(run.status).toBe(3);
    const { error } = JSON.parse(run.stdout) as { error: { code: string; findings: Array<{ file: string; ruleId: string }> } };
    expect(error.code).toBe('scrub-blocked');
    expect(error.findings.map((f) => [f.file, f.ruleId])).toEqual([['prompts/system-prompt.md', 'aws-access-key']]);
  });
});
