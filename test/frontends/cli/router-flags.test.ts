// The router's own flags, as a user mistypes them: a clear usage error (exit 2, no stack trace)
// before anything starts, from `acx router` and from `acx platform serve --agents` alike.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ACX_BIN, cleanEnv, ROOT, runAcx, STACK_FRAME, tempDir } from '../../support/cli.ts';
import { scaled } from '../../support/time-scale.ts';

describe('acx router --pass-env / --replay-window', { timeout: scaled(60_000) }, () => {
  it("refuses to pass another agent's token or a signing secret to wakes", async () => {
    const run = await runAcx(['router', '--agents', 'nova=examples/nova', '--pass-env', 'SEARCH_KEY,BASECRADLE_TOKEN_ADA']);
    expect(run.status).toBe(2);
    expect(run.stderr.trim()).toBe(
      "acx: --pass-env cannot pass BASECRADLE_TOKEN_ADA: a wake gets its own agent's BASECRADLE_TOKEN, BASECRADLE_BASE_URL and BASECRADLE_DELIVERY_ID from the router, and never another agent's token or a webhook signing secret.\n  → run `acx router --help` for its usage",
    );
    const fromEnv = await runAcx(['platform', 'serve', '--port', '0', '--agents', 'nova=examples/nova'], { env: cleanEnv({ ACX_ROUTER_PASS_ENV: 'ACX_PLATFORM_WEBHOOK_SECRET' }) });
    expect(fromEnv.status).toBe(2);
    expect(fromEnv.stderr).toMatch(/^acx: --pass-env cannot pass ACX_PLATFORM_WEBHOOK_SECRET: .*\n {2}→ run `acx platform serve --help` for its usage\n$/);
    expect(fromEnv.stderr).not.toMatch(STACK_FRAME);
  });

  it('a replay window must be a positive number of seconds', async () => {
    const run = await runAcx(['router', '--agents', 'nova=examples/nova', '--replay-window', '1d']);
    expect(run.status).toBe(2);
    expect(run.stderr.trim()).toBe('acx: --replay-window must be a positive number of seconds, not "1d" (leave it out for 24 h).\n  → run `acx router --help` for its usage');
    const fromEnv = await runAcx(['router', '--agents', 'nova=examples/nova'], { env: cleanEnv({ ACX_ROUTER_REPLAY_WINDOW: '0' }) });
    expect(fromEnv.status).toBe(2);
    expect(fromEnv.stderr.trim()).toBe('acx: ACX_ROUTER_REPLAY_WINDOW must be a positive number of seconds, not "0" (leave it out for 24 h).\n  → run `acx router --help` for its usage');
    const serve = await runAcx(['platform', 'serve', '--port', '0', '--agents', 'nova=examples/nova', '--replay-window', '-5']);
    expect(serve.status).toBe(2);
    expect(serve.stderr).toMatch(/^acx: --replay-window must be a positive number of seconds, not "-5"/);
    expect(serve.stderr).not.toMatch(STACK_FRAME);
  });
});

describe('acx router --registry-file / --poll', { timeout: scaled(60_000) }, () => {
  const JT = '0190a5f2-0000-7000-8000-00000000000b';
  const registry = (text: string): string => {
    const file = join(tempDir('acx-router-registry-'), 'fleet');
    writeFileSync(file, text);
    return file;
  };
  const usage = async (args: string[], env: Record<string, string> = {}) => {
    const run = await runAcx(['router', '--port', '0', ...args], { env: cleanEnv(env) });
    expect(run.stderr).not.toMatch(STACK_FRAME);
    return { status: run.status, message: run.stderr.trim().split('\n')[0] };
  };

  it('says what is missing or wrong, before anything starts', async () => {
    expect(await usage([])).toEqual({ status: 2, message: 'acx: name the agents to host with --agents handle=DIR,… or --registry-file FILE.' });
    const missing = join(tempDir(), 'nope');
    expect(await usage(['--registry-file', missing])).toEqual({ status: 2, message: `acx: cannot read the registry file ${missing}: ENOENT.` });
    const bad = registry(`jt ${JT} JT_TOKEN\n`);
    expect(await usage(['--registry-file', bad])).toEqual({ status: 2, message: `acx: ${bad} line 1: expected "handle recipient-uuid token-variable wake command…", got 3 field(s).` });
    expect(await usage(['--agents', 'nova=examples/nova', '--poll', '30ms'])).toEqual({ status: 2, message: 'acx: --poll takes an interval of at least 1s, such as 30s, 5m or 1h, not "30ms".' });
    expect(await usage(['--agents', 'nova=examples/nova'], { ACX_ROUTER_POLL: 'often' })).toEqual({ status: 2, message: 'acx: ACX_ROUTER_POLL takes an interval of at least 1s, such as 30s, 5m or 1h, not "often".' });
    const fleet = registry(`jt ${JT} JT_TOKEN /usr/local/bin/basecradle-harness-wake\n`);
    expect(await usage(['--registry-file', fleet])).toEqual({ status: 2, message: "acx: set JT_TOKEN to @jt's platform token (acx platform user add prints one)." });
    expect(await usage(['--registry-file', fleet], { JT_TOKEN: 'bc_uat_jt' })).toEqual({
      status: 2,
      message: "acx: set ACX_ROUTER_WEBHOOK_SECRET or BASECRADLE_ROUTER_BASECRADLE_WEBHOOK_SECRET_JT to the secret the platform signs @jt's deliveries with, or give --poll to read the platform instead.",
    });
  });

  it("refuses a token variable that would reach every wake: no wake may hold another agent's token", async () => {
    const listed = registry(`jt ${JT} JT_TOKEN /usr/local/bin/basecradle-harness-wake\n`);
    expect(await usage(['--registry-file', listed, '--pass-env', 'JT_TOKEN'], { JT_TOKEN: 'bc_uat_jt', ACX_ROUTER_WEBHOOK_SECRET: 's' })).toEqual({
      status: 2,
      message: "acx: @jt's token variable JT_TOKEN would reach every wake (a variable wakes get, or listed in --pass-env); keep the token in one only the router reads, e.g. BASECRADLE_TOKEN_JT.",
    });
    const provider = registry(`jt ${JT} OPENAI_API_KEY /usr/local/bin/basecradle-harness-wake\n`);
    expect((await usage(['--registry-file', provider], { OPENAI_API_KEY: 'bc_uat_jt', ACX_ROUTER_WEBHOOK_SECRET: 's' })).message).toMatch(/^acx: @jt's token variable OPENAI_API_KEY would reach every wake/);
  });

  it('with a registry it starts without asking the platform who each token is (the file says)', async () => {
    const fleet = registry(`jt ${JT} JT_TOKEN /usr/local/bin/basecradle-harness-wake\n`);
    const home = tempDir();
    // Nothing listens on port 9: a lookup would fail.
    const env = { ...cleanEnv({ JT_TOKEN: 'bc_uat_jt', ACX_ROUTER_WEBHOOK_SECRET: 'shared-secret' }), ACX_HOME: home, ACX_CONFIG_HOME: home, HOME: home };
    const child = spawn(process.execPath, [ACX_BIN, 'router', '--registry-file', fleet, '--platform', 'http://127.0.0.1:9', '--port', '0', '--home', home], { cwd: ROOT, env });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    const url = await Promise.race([new Promise<string>((resolve) => child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()))), exited.then((code) => `exited ${code}: ${stderr}`)]);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await fetch(`${url}/up`)).status).toBe(200);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr).toMatch(/^INFO router listening url=\S+ agents=jt$/m);
  });
});
