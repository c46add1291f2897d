// What a router's wake is given: its own agent's platform values and what it needs to run, never
// another agent's token or a signing secret. A real router runs a stand-in wake process that
// writes down the environment it got; the rule itself (src/frontends/router/wake-env.ts) is also
// checked directly, as are the names --pass-env refuses.
import { afterEach, describe, expect, it } from 'vitest';
import { checkPassEnvName, parsePassEnv, wakeEnvironment, warmWakeEnvironment } from '../../../src/frontends/router/wake-env.ts';
import type { RoutedAgent } from '../../../src/frontends/router/router.ts';
import { filesHolding } from '../../support/files.ts';
import { type StandInRouter, startStandInRouter } from '../../support/stand-in-router.ts';

const NOVA: RoutedAgent = { name: 'nova', dir: '/agents/nova', token: 'bc_uat_nova_token', uuid: '0190a5f2-0000-7000-8000-00000000000a', secret: 'nova-signing-secret-0123' };
const ADA: RoutedAgent = { name: 'ada', dir: '/agents/ada', token: 'bc_uat_ada_token', uuid: '0190a5f2-0000-7000-8000-00000000000b', secret: 'ada-signing-secret-0123' };

/** The router's own environment, as an operator running two agents would have it. */
const ROUTER_ENV: NodeJS.ProcessEnv = {
  PATH: '/usr/bin:/bin',
  HOME: '/home/op',
  LANG: 'C.UTF-8',
  LC_ALL: 'C.UTF-8',
  https_proxy: 'http://proxy.internal:3128',
  NODE_EXTRA_CA_CERTS: '/etc/ssl/internal.pem',
  ACX_HOME: '/srv/acx',
  ACX_LOG_LEVEL: 'debug',
  OPENAI_API_KEY: 'sk-model-key',
  ANTHROPIC_BASE_URL: 'http://127.0.0.1:8123',
  BASECRADLE_TOKEN_NOVA: 'bc_uat_nova_token',
  BASECRADLE_TOKEN_ADA: 'bc_uat_ada_token',
  BASECRADLE_TOKEN: 'bc_uat_someone_else',
  BASECRADLE_ROUTER_BASECRADLE_WEBHOOK_SECRET_NOVA: 'nova-signing-secret-0123',
  BASECRADLE_ROUTER_BASECRADLE_WEBHOOK_SECRET_ADA: 'ada-signing-secret-0123',
  ACX_ROUTER_WEBHOOK_SECRET: 'shared-signing-secret-0123',
  ACX_PLATFORM_WEBHOOK_SECRET_ADA: 'platform-ada-secret-0123',
  ACX_MCP_TOKEN: 'mcp-bearer-token-0123456789',
  DATABASE_PASSWORD: 'db-password',
  SEARCH_TOOL_KEY: 'search-key',
};

let running: StandInRouter | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

describe("a router's wake environment", () => {
  it.each([
    ['started for its event', false],
    ['warm: started ahead and handed its event', true],
  ])("a wake (%s) gets its own token and what it needs, never another agent's token or a signing secret; --pass-env adds a variable", async (_, warm) => {
    running = await startStandInRouter({ agents: [NOVA, ADA], env: ROUTER_ENV, passEnv: ['SEARCH_TOOL_KEY'], platformUrl: 'http://platform.test', warm });
    const body = JSON.stringify({ event: 'message.created', event_id: 'e-1', occurred_at: new Date().toISOString(), recipient_uuid: NOVA.uuid, timeline_uuid: 't-1', resource: { type: 'message', uuid: 'm-1' } });
    expect((await running.post(body)).status).toBe(202);
    await running.router.idle();
    const [wake] = running.wakes();
    expect(wake!.argv).toEqual([...(warm ? ['--warm-wake'] : []), 'wake', '/agents/nova', '--timeline', 't-1', '--message', 'm-1']);
    // What it needs from the router's environment, as it was there, and its own values: nothing else.
    const needed = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'https_proxy', 'NODE_EXTRA_CA_CERTS', 'ACX_HOME', 'ACX_LOG_LEVEL', 'OPENAI_API_KEY', 'ANTHROPIC_BASE_URL', 'SEARCH_TOOL_KEY'];
    expect(wake!.env).toEqual({
      ...Object.fromEntries(needed.map((name) => [name, ROUTER_ENV[name]])),
      BASECRADLE_BASE_URL: 'http://platform.test',
      BASECRADLE_TOKEN: 'bc_uat_nova_token',
      BASECRADLE_DELIVERY_ID: 'e-1',
    });
    // Nor does any of it land in the router's own files.
    for (const secret of ['bc_uat_ada_token', 'ada-signing-secret-0123', 'shared-signing-secret-0123']) expect(filesHolding(running.home, secret)).toEqual([]);
  });

  it('warns at start about a --pass-env name that is not set', async () => {
    running = await startStandInRouter({ agents: [NOVA], env: ROUTER_ENV, passEnv: ['SEARCH_TOOL_KEY', 'NOT_SET_HERE'] });
    expect(running.logger.lines.filter((line) => line.includes('router pass-env not set'))).toEqual([expect.stringContaining('names=NOT_SET_HERE')]);
  });

  it('the rule on its own: ACX_* settings pass, ACX_* secrets and everything unlisted do not', () => {
    const env = wakeEnvironment(
      { ACX_STORE: 'postgres://db/acx', ACX_SIGNING_KEY: '/keys/k.pem', ACX_PLATFORM_WEBHOOK_SECRET: 's', ACX_API_KEY: 'local-key', XDG_STATE_HOME: '/state', EDITOR: 'vi' },
      { baseUrl: 'http://p', token: 't', deliveryId: 'd' },
    );
    expect(env).toEqual({ ACX_STORE: 'postgres://db/acx', ACX_API_KEY: 'local-key', XDG_STATE_HOME: '/state', BASECRADLE_BASE_URL: 'http://p', BASECRADLE_TOKEN: 't', BASECRADLE_DELIVERY_ID: 'd' });
  });

  it("a warm process starts with its own token and the platform's URL, or no URL while none is known; nothing of the fleet's", () => {
    const source = { PATH: '/bin', ACX_WEBHOOK_SECRET: 'whsec', BASECRADLE_TOKEN: 'another-agents-token' };
    expect(warmWakeEnvironment(source, 'own-token', 'http://127.0.0.1:4700')).toEqual({ PATH: '/bin', BASECRADLE_TOKEN: 'own-token', BASECRADLE_BASE_URL: 'http://127.0.0.1:4700' });
    expect(warmWakeEnvironment(source, 'own-token', '')).toEqual({ PATH: '/bin', BASECRADLE_TOKEN: 'own-token' });
  });

  it('--pass-env refuses BASECRADLE_* names and webhook secrets, and anything that is not a variable name', () => {
    expect(parsePassEnv('SEARCH_TOOL_KEY, OTHER')).toEqual(['SEARCH_TOOL_KEY', 'OTHER']);
    expect(parsePassEnv(undefined)).toEqual([]);
    expect(() => checkPassEnvName('BASECRADLE_TOKEN_ADA')).toThrow(/--pass-env cannot pass BASECRADLE_TOKEN_ADA: .*never another agent's token or a webhook signing secret/);
    expect(() => checkPassEnvName('ACX_ROUTER_WEBHOOK_SECRET')).toThrow(/cannot pass ACX_ROUTER_WEBHOOK_SECRET/);
    expect(() => parsePassEnv('A=B')).toThrow('--pass-env takes variable names separated by commas, not "A=B".');
    // A library caller's list is held to the same rule, and the value never reaches a wake.
    expect(wakeEnvironment({ BASECRADLE_TOKEN_ADA: 'x' }, { baseUrl: 'u', token: 't', deliveryId: 'd' }, ['BASECRADLE_TOKEN_ADA']).BASECRADLE_TOKEN_ADA).toBeUndefined();
  });
});
