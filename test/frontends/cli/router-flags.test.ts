// The router's own flags, as a user mistypes them: a clear usage error (exit 2, no stack trace)
// before anything starts, from `acx router` and from `acx platform serve --agents` alike.
import { describe, expect, it } from 'vitest';
import { cleanEnv, runAcx, STACK_FRAME } from '../../support/cli.ts';

describe('acx router --pass-env / --replay-window', { timeout: 60_000 }, () => {
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
