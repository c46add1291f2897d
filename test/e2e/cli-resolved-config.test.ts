import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { detectConfinement } from '../../src/harness/acp/confinement.ts';
import { describeExecute } from '../../src/tools/builtin/execute.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { scaled } from '../support/time-scale.ts';

/**
 * `acx resolved-config` must report what a run actually does: the same model, the same tools
 * (MCP drop-ins by server name), the same limits — and fail the same way on a malformed config.
 */
const ROOT = join(import.meta.dirname, '../..');

function acx(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', join(ROOT, 'bin/acx.js'), ...args], { env });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

function agentWithMcpDropIn(): { agent: string; home: string } {
  const base = mkdtempSync(join(tmpdir(), 'acx-resolved-'));
  const agent = join(base, 'agent');
  cpSync(join(ROOT, 'examples/notes-keeper'), agent, { recursive: true });
  mkdirSync(join(agent, 'mcp'), { recursive: true });
  writeFileSync(
    join(agent, 'mcp', 'fixture.json'),
    JSON.stringify({ command: process.execPath, args: ['--disable-warning=ExperimentalWarning', join(ROOT, 'test/fixtures/mcp/stdio-server.ts')] }),
  );
  const home = join(base, 'home');
  mkdirSync(home);
  return { agent, home };
}

let server: ModelServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('acx resolved-config (e2e)', { timeout: scaled(120_000) }, () => {
  it('names the model and the tools a run really sends, without a key or a network', async () => {
    const { agent, home } = agentWithMcpDropIn();
    server = await startModelServer({ script: ['hello'] });
    const base = { PATH: process.env.PATH ?? '', HOME: home };
    const resolved = await acx(['resolved-config', agent, '--model', 'openai:demo-model', '--max-steps', '7', '--home', home, '--config-home', home], base);
    expect(resolved.code, resolved.stderr).toBe(0);
    const config = JSON.parse(resolved.stdout) as Record<string, unknown> & { tools: string[]; mcp_servers: string[] };
    expect(config).toMatchObject({ provider: 'openai', model: 'demo-model', sdk_surface: 'responses', max_steps: 7, active_profile: 'locked' });
    expect(config.mcp_servers).toEqual(['fixture']);

    const run = await acx(['run', agent, 'hi', '--model', 'openai:demo-model', '--max-steps', '7', '--home', home, '--config-home', home], {
      ...base,
      ACX_LOG_LEVEL: 'info',
      OPENAI_API_KEY: 'sk-local-test',
      OPENAI_BASE_URL: server.openaiBaseURL,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('hello');
    const request = server.requests[0]!;
    expect(request.view.model).toBe('demo-model');
    const sent = request.view.tools;
    // Every tool resolved-config lists was sent; the rest come from the configured MCP server.
    expect(sent).toEqual(expect.arrayContaining(config.tools));
    expect(sent.filter((name) => !config.tools.includes(name)).every((name) => name.startsWith('fixture__'))).toBe(true);
    expect(sent.some((name) => name.startsWith('fixture__'))).toBe(true);
    expect(request.view.messages.at(-1)!.text).toContain('Step 1 of 7');
    // Leaving the safe default is loud in the log and plain to the model.
    expect(request.view.system.join('\n')).toMatch(/sanctioned for your use by the operator/);
    expect(run.stderr).toMatch(/WARNING mcp drop-ins active/);
  });

  it('tells what an execute command can reach: the tool description the model gets, for the isolation in use', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-resolved-'));
    const resolved = await acx(['resolved-config', '--model', 'openai:demo-model', '--home', home, '--config-home', home], { PATH: process.env.PATH ?? '', HOME: home });
    expect(resolved.code, resolved.stderr).toBe(0);
    const config = JSON.parse(resolved.stdout) as { tools: string[]; isolation: { kind: 'bwrap' | 'unshare' | 'none' }; execute_sandbox: string | null };
    if (config.tools.includes('execute')) {
      expect(config.execute_sandbox).toBe(describeExecute(config.isolation.kind));
    } else {
      // No OS isolation and no execute-unisolated grant: execute is skipped, and there is nothing to describe.
      expect(config.execute_sandbox).toBeNull();
    }
  });

  it('--timeline lists the platform tools a timeline wake adds; without it they are not there', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-resolved-'));
    const env = { PATH: process.env.PATH ?? '', HOME: home };
    const agent = join(ROOT, 'test/fixtures/agents/timeline-peer');
    const plain = JSON.parse((await acx(['resolved-config', agent, '--config-home', home, '--home', home], env)).stdout) as { tools: string[] };
    expect(plain.tools).not.toContain('messages_create');
    const onTimeline = await acx(['resolved-config', agent, '--timeline', '0190a5f2-0000-7000-8000-000000000001', '--config-home', home, '--home', home], env);
    expect(onTimeline.code, onTimeline.stderr).toBe(0);
    const tools = (JSON.parse(onTimeline.stdout) as { tools: string[] }).tools;
    expect(tools).toEqual(expect.arrayContaining(['messages_create', 'messages_list', 'assets_create', 'tasks_create', 'timelines_add_participant', 'trust_grant', 'lock', 'delete', 'users_me', 'webhook_endpoints_create', 'webhook_events_list']));
    const bad = await acx(['resolved-config', agent, '--timeline', 'nope', '--config-home', home, '--home', home], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--timeline must be a timeline uuid');
  });

  it('shows model_params.json verbatim, what every call gets, and what the build strips', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-resolved-'));
    const file = { temperature: 0.7, max_tokens: 4096, reasoning: { effort: 'high' }, model: 'gpt-evil' };
    writeFileSync(join(home, 'model_params.json'), JSON.stringify(file));
    const env = { PATH: process.env.PATH ?? '', HOME: home };
    const resolved = await acx(['resolved-config', join(ROOT, 'examples/notes-keeper'), '--config-home', home, '--home', home], env);
    expect(resolved.code, resolved.stderr).toBe(0);
    const config = JSON.parse(resolved.stdout) as Record<string, unknown>;
    expect(config.model_params).toEqual(file);
    expect(config.model_params_effective).toEqual({ temperature: 0.7, maxOutputTokens: 4096, reasoning: 'high' });
    expect(config.model_params_stripped).toEqual(['model']);
  });

  it('fails, non-zero and with the reason, on a malformed model_params.json — as a run would', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-resolved-'));
    writeFileSync(join(home, 'model_params.json'), '{"temperature": 0.2,');
    const env = { PATH: process.env.PATH ?? '', HOME: home };
    const resolved = await acx(['resolved-config', join(ROOT, 'examples/notes-keeper'), '--config-home', home, '--home', home], env);
    expect(resolved.code).toBe(1);
    expect(resolved.stderr).toMatch(/model_params\.json is not valid JSON/);
    const run = await acx(['run', join(ROOT, 'examples/notes-keeper'), 'hi', '--config-home', home, '--home', home], env);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/model_params\.json is not valid JSON/);
  });

  it('needs no key: a missing key only fails the run, naming the variable', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-resolved-'));
    const env = { PATH: process.env.PATH ?? '', HOME: home };
    const resolved = await acx(['resolved-config', join(ROOT, 'examples/notes-keeper'), '--home', home, '--config-home', home], env);
    expect(resolved.code, resolved.stderr).toBe(0);
    const run = await acx(['run', join(ROOT, 'examples/notes-keeper'), 'hi', '--home', home, '--config-home', home], env);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/OPENAI_API_KEY is not set/);
  });

  it('a broken MCP drop-in is skipped with its reason; the agent and its other servers still run', async () => {
    const { agent, home } = agentWithMcpDropIn();
    writeFileSync(join(agent, 'mcp', 'broken.json'), '{ "command": "x", }');
    server = await startModelServer({ script: ['still here'] });
    const base = { PATH: process.env.PATH ?? '', HOME: home };
    const resolved = await acx(['resolved-config', agent, '--home', home, '--config-home', home], base);
    expect(resolved.code, resolved.stderr).toBe(0);
    const config = JSON.parse(resolved.stdout) as { mcp_servers: string[]; skipped: Array<{ name: string; reason: string }> };
    expect(config.mcp_servers).toEqual(['fixture']);
    expect(config.skipped).toContainEqual({ name: 'mcp:broken', reason: expect.stringMatching(/broken\.json: MCP config .*is not valid JSON/) });

    const run = await acx(['run', agent, 'hi', '--model', 'openai:demo-model', '--home', home, '--config-home', home], {
      ...base,
      OPENAI_API_KEY: 'sk-local-test',
      OPENAI_BASE_URL: server.openaiBaseURL,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('still here');
    expect(run.stderr).toMatch(/WARNING mcp drop-in skipped server=broken file=\S+broken\.json reason=/);
    expect(server.requests[0]!.view.tools.some((name) => name.startsWith('fixture__'))).toBe(true);
  });

  it('opt_in_tools lists the opt-ins in effect, by grant name; a grant without an active tool is not one', async () => {
    const { agent, home } = agentWithMcpDropIn();
    const base = { PATH: process.env.PATH ?? '', HOME: home };
    const installed = await acx(['install', '--config-home', home, '--opt-in', 'system_prompt,shell'], base);
    expect(installed.code, installed.stderr).toBe(0);
    const resolved = await acx(['resolved-config', agent, '--home', home, '--config-home', home], base);
    expect(resolved.code, resolved.stderr).toBe(0);
    const config = JSON.parse(resolved.stdout) as { opt_in_tools: string[]; tools: string[]; skipped: Array<{ name: string }> };
    expect(config.tools).toEqual(expect.arrayContaining(['system_prompt_read', 'system_prompt_edit']));
    // shell is granted, but the locked profile refuses it: skipped, not in effect.
    expect(config.skipped.map((s) => s.name)).toContain('shell');
    expect(config.opt_in_tools).toEqual(['system_prompt']);
  });

  it('vision: on by default, off with --no-vision or ACX_MODEL_VISION=0 (a text-only model)', async () => {
    const { agent, home } = agentWithMcpDropIn();
    const base = { PATH: process.env.PATH ?? '', HOME: home };
    const read = async (args: string[], env: Record<string, string> = {}) => {
      const resolved = await acx(['resolved-config', agent, '--model', 'ollama:llava', ...args, '--home', home, '--config-home', home], { ...base, ...env });
      expect(resolved.code, resolved.stderr).toBe(0);
      return (JSON.parse(resolved.stdout) as { vision: boolean }).vision;
    };
    expect(await read([])).toBe(true);
    expect(await read(['--no-vision'])).toBe(false);
    expect(await read([], { ACX_MODEL_VISION: '0' })).toBe(false);
  });

  it('reports the wake-mode tuning a wake would use, and refuses a malformed value the way a wake does', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-resolved-'));
    const env = { PATH: process.env.PATH ?? '', HOME: home, ACX_WAKE_BREAKER_MAX: '4', ACX_PACE_ENABLED: '0', ACX_PACE_MAX_BUILDS: '2', ACX_CONTEXT_MESSAGES: 'all', ACX_ONBOARD: 'off' };
    const resolved = await acx(['resolved-config', join(ROOT, 'examples/notes-keeper'), '--home', home, '--config-home', home], env);
    expect(resolved.code, resolved.stderr).toBe(0);
    expect(JSON.parse(resolved.stdout).wake).toEqual({
      breaker_max: 4,
      breaker_window_seconds: 60,
      breaker_cooldown_seconds: 60,
      max_attempts: 3,
      pacing: false,
      pace_chars_per_second: 17,
      pace_floor_seconds: 20,
      pace_max_builds: 2,
      context_messages: 'all',
      onboard: false,
    });
    const bad = { ...env, ACX_WAKE_BREAKER_WINDOW: 'soon' };
    const refused = await acx(['resolved-config', join(ROOT, 'examples/notes-keeper'), '--home', home, '--config-home', home], bad);
    const woken = await acx(['wake', join(ROOT, 'examples/notes-keeper'), '--session', 's', 'hi', '--home', home, '--config-home', home], bad);
    for (const result of [refused, woken]) {
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/ACX_WAKE_BREAKER_WINDOW must be a positive number of seconds, not "soon"/);
    }
  });

  it('reports the ACP agent sandbox: bubblewrap or none (and why), and the network policy', async () => {
    const home = mkdtempSync(join(tmpdir(), 'acx-resolved-sandbox-'));
    const base = { PATH: process.env.PATH ?? '', HOME: home };
    const expected = await detectConfinement({});
    const auto = await acx(['resolved-config', '--home', home, '--config-home', home], base);
    expect(auto.code, auto.stderr).toBe(0);
    expect(JSON.parse(auto.stdout).sandbox).toEqual({ kind: expected.kind, reason: expected.reason, network_policy: 'deny-all', network_policy_enforced: expected.kind === 'bubblewrap' });

    const off = await acx(['resolved-config', '--home', home, '--config-home', home], { ...base, ACX_ACP_SANDBOX: 'none', ACX_ACP_NETWORK_POLICY: 'registry.npmjs.org,*.github.com' });
    expect(off.code, off.stderr).toBe(0);
    expect(JSON.parse(off.stdout).sandbox).toEqual({ kind: 'none', reason: 'turned off by ACX_ACP_SANDBOX=none', network_policy: 'allow registry.npmjs.org, *.github.com', network_policy_enforced: false });

    const bad = await acx(['resolved-config', '--home', home, '--config-home', home], { ...base, ACX_ACP_NETWORK_POLICY: 'https://example.com/' });
    expect(bad.code).toBe(1); // a ConfigError, with the reason and the fix
    expect(bad.stderr).toContain('ACX_ACP_NETWORK_POLICY has an invalid host "https://example.com/"');
  });
});
