// A third-party ACP client drives `acx acp`: acpx (npm), as a user runs it, against the local
// model server. A one-shot exec, a named session reopened by a second acpx invocation, set-mode,
// and a cancel from another acpx process; every message acx sent on those runs is checked against
// the ACP SDK's v1 schemas (test/support/acp-tee.mjs records the wire).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResponseChecker } from '../fixtures/acp-server/response-schemas.ts';
import { cleanEnv, ROOT } from '../support/cli.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { scaled } from '../support/time-scale.ts';
import { waitFor } from '../support/wait.ts';

// acpx is installed by .ci/run (ACX_TEST_ACPX); locally: `npm i --prefix /tmp/acpx acpx@0.19.1` and point ACX_TEST_ACPX at its bin.
const ACPX = process.env.ACX_TEST_ACPX ?? join(ROOT, 'node_modules/.bin/acpx');
const AGENT = join(ROOT, 'examples/notes-keeper');
const wire = mkdtempSync(join(tmpdir(), 'acx-acpx-wire-'));
const home = mkdtempSync(join(tmpdir(), 'acx-acpx-home-'));
const project = mkdtempSync(join(tmpdir(), 'acx-acpx-project-'));
let model: ModelServer;

beforeAll(async () => {
  model = await startModelServer();
});
afterAll(() => model.close());

interface Run {
  code: number | null;
  out: string;
}

function acpx(args: string[]): { done: Promise<Run> } {
  const agent = `${process.execPath} ${join(ROOT, 'test/support/acp-tee.mjs')} ${wire} -- ${process.execPath} ${join(ROOT, 'bin/acx.js')} acp ${AGENT}`;
  const env = { ...cleanEnv({ OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: model.openaiBaseURL }), HOME: home, ACX_HOME: home, ACX_CONFIG_HOME: home };
  const child = spawn(ACPX, ['--ttl', '1', '--cwd', project, '--agent', agent, ...args], { cwd: project, env });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
  return { done: new Promise((resolve) => child.on('close', (code) => resolve({ code, out }))) };
}
/**
 * One acpx invocation, as a script would run it: acpx answers "Queue owner is shutting down"
 * (QUEUE_OWNER_SHUTTING_DOWN, which it marks retryable: the prompt was not sent) when it reaches
 * the previous invocation's queue owner while that one is exiting (--ttl 1), so that answer is
 * retried, a few times at most.
 */
async function run(args: string[]): Promise<Run> {
  for (let attempt = 1; ; attempt++) {
    const result = await acpx(args).done;
    if (result.code === 0 || attempt === 5 || !/Queue owner (is )?shutting down/.test(result.out)) return result;
  }
}

describe.skipIf(!existsSync(ACPX))(existsSync(ACPX) ? 'acpx drives acx acp (e2e)' : 'acpx drives acx acp (skipped: acpx is not installed; .ci/run installs it, or set ACX_TEST_ACPX to an acpx 0.19.1 bin)', { timeout: scaled(180_000) }, () => {
  it('a one-shot exec answers', async () => {
    model.enqueue('Hello from acx.');
    const exec = await run(['exec', 'say hello']);
    expect(exec.code, exec.out).toBe(0);
    expect(exec.out).toContain('Hello from acx.');
  });

  it('a named session keeps its conversation across two acpx invocations; set-mode applies', async () => {
    const created = await run(['sessions', 'new', '--name', 'demo']);
    expect(created.code, created.out).toBe(0);
    model.enqueue('Noted: heron.');
    const first = await run(['prompt', '-s', 'demo', 'The code word is heron.']);
    expect(first.code, first.out).toBe(0);
    expect(first.out).toContain('Noted: heron.');
    model.enqueue('It is heron.');
    const second = await run(['prompt', '-s', 'demo', 'What is the code word?']);
    expect(second.code, second.out).toBe(0);
    expect(second.out).toContain('It is heron.');
    // The second turn was sent with the first one's conversation: the session was reopened, not new.
    expect(JSON.stringify(model.requests.at(-1)!.body)).toContain('The code word is heron.');
    const mode = await run(['set-mode', '-s', 'demo', 'allow-reads']);
    expect(mode.code, mode.out).toBe(0);
    expect(mode.out).toContain('mode set: allow-reads');
  });

  it('a cancel from another acpx process ends the running prompt', async () => {
    // A session of its own: the previous test's last acpx call on "demo" may still be shutting
    // its queue owner down (--ttl 1), and a prompt racing that exit was seen to hang under load.
    const created = await run(['sessions', 'new', '--name', 'cancel-demo']);
    expect(created.code, created.out).toBe(0);
    let release: () => void = () => {};
    const seen = model.requests.length;
    model.enqueue({ text: 'too late', pauseUntil: new Promise<void>((resolve) => (release = resolve)) });
    const prompt = acpx(['prompt', '-s', 'cancel-demo', 'Think about it for a long time.']);
    await waitFor('the prompt never reached the model', () => model.requests.length > seen, { withinMs: 60_000, everyMs: 50 });
    const cancel = await run(['cancel', '-s', 'cancel-demo']);
    expect(cancel.code, cancel.out).toBe(0);
    const ended = await prompt.done;
    release();
    expect(ended.out).toMatch(/cancel/i);
    expect(ended.out).not.toContain('too late');
  });

  it('every message acx sent on those runs is valid ACP v1', () => {
    const checker = new ResponseChecker({ agentMessages: true });
    const pids = [...new Set(readdirSync(wire).map((file) => file.split('.')[0]!))];
    expect(pids.length).toBeGreaterThanOrEqual(3);
    for (const pid of pids) {
      const per = new ResponseChecker({ agentMessages: true });
      if (existsSync(join(wire, `${pid}.client`))) per.clientBytes(readFileSync(join(wire, `${pid}.client`)));
      if (existsSync(join(wire, `${pid}.agent`))) per.agentBytes(readFileSync(join(wire, `${pid}.agent`)));
      checker.problems.push(...per.problems);
      for (const [method, n] of per.checked) checker.checked.set(method, (checker.checked.get(method) ?? 0) + n);
    }
    expect(checker.problems).toEqual([]);
    for (const method of ['initialize', 'session/new', 'session/prompt', 'session/set_mode', 'session/update']) expect(checker.checked.get(method), method).toBeGreaterThan(0);
    expect((checker.checked.get('session/resume') ?? 0) + (checker.checked.get('session/load') ?? 0)).toBeGreaterThan(0);
  });
});
