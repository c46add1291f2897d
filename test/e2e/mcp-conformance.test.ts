import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startBearerProxy, type BearerProxy } from '../support/bearer-proxy.ts';
import { scaled } from '../support/time-scale.ts';

/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance, pinned) against acx:
 * its server scenarios against `acx mcp --http` (a real child process), its client scenarios
 * against acx's MCP client. Which scenarios are run, and which may fail, is stated with reasons
 * in test/mcp/conformance-baseline.yaml. Everything stays on 127.0.0.1.
 */
const ROOT = join(import.meta.dirname, '../..');
const SUITE = join(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const CLIENT_ENTRY = join(ROOT, 'test/support/mcp-conformance-client.ts');

interface Side {
  expected_failures: Record<string, string>;
  not_applicable: Record<string, string>;
}
const baseline = parse(readFileSync(join(ROOT, 'test/mcp/conformance-baseline.yaml'), 'utf8')) as { server: Side; client: Side };

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | string;
  errorMessage?: string;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = scaled(60_000)): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(command, args, { env, cwd: ROOT });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

const home = mkdtempSync(join(tmpdir(), 'acx-conformance-'));
const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '', HOME: home, ACX_HOME: join(home, 'state'), ACX_CONFIG_HOME: join(home, 'config') };
const suite = (args: string[]) => run(process.execPath, [SUITE, ...args], env);

/** The scenarios the pinned suite lists, per side, from `conformance list`. */
async function listedScenarios(): Promise<{ server: string[]; client: string[] }> {
  const listed = await suite(['list']);
  expect(listed.code, listed.stderr).toBe(0);
  const sides = { server: [] as string[], client: [] as string[] };
  let side: 'server' | 'client' | undefined;
  for (const line of listed.stdout.split('\n')) {
    if (/^Server scenarios/.test(line)) side = 'server';
    else if (/^Client scenarios/.test(line)) side = 'client';
    const item = /^\s+-\s+(\S+)/.exec(line);
    if (item && side) sides[side].push(item[1]!);
  }
  return sides;
}

type Outcomes = Map<string, { checks: Check[]; output: string }>;

/**
 * Runs the suite with `args` and returns each scenario's checks, from the checks.json the suite
 * writes into `<server-|><scenario>-<timestamp>/`. A scenario in `expect` with no result fails.
 */
async function runSuite(args: string[], expected: readonly string[]): Promise<Outcomes> {
  const out = mkdtempSync(join(home, 'results-'));
  const result = await suite([...args, '-o', out]);
  const output = `${result.stdout}\n${result.stderr}`;
  const outcomes: Outcomes = new Map();
  // A scenario named `group/name` (auth/…) writes into `group/name-<timestamp>/`.
  const dirs = readdirSync(out).flatMap((dir) => (existsSync(join(out, dir, 'checks.json')) ? [dir] : readdirSync(join(out, dir)).map((inner) => `${dir}/${inner}`)));
  for (const dir of dirs) {
    const scenario = dir.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, '');
    outcomes.set(scenario, { checks: JSON.parse(readFileSync(join(out, dir, 'checks.json'), 'utf8')) as Check[], output });
  }
  for (const scenario of expected) {
    if (!outcomes.has(scenario)) outcomes.set(scenario, { checks: [{ id: 'no-result', status: 'FAILURE', errorMessage: `the suite wrote no result (exit ${result.code})` }], output });
  }
  return outcomes;
}

function failures(checks: readonly Check[]): string[] {
  return checks.filter((check) => check.status === 'FAILURE').map((check) => `${check.id}: ${check.errorMessage ?? 'failed'}`);
}

/** The baseline names only scenarios the suite lists, and none both ways. */
function checkBaselineAgainst(side: Side, listed: readonly string[]): string[] {
  const named = [...Object.keys(side.not_applicable), ...Object.keys(side.expected_failures)];
  expect(named.filter((name) => !listed.includes(name)), 'baseline entries the suite does not list').toEqual([]);
  expect(Object.keys(side.expected_failures).filter((name) => name in side.not_applicable), 'both expected to fail and not applicable').toEqual([]);
  return listed.filter((name) => !(name in side.not_applicable));
}

/** Every run scenario passes unless the baseline expects it to fail; an expected failure that passes is stale. */
function expectMatchesBaseline(side: Side, outcomes: Outcomes, toRun: readonly string[]): void {
  const unexpected: string[] = [];
  const stale: string[] = [];
  for (const scenario of toRun) {
    const { checks, output } = outcomes.get(scenario)!;
    const failed = failures(checks);
    if (failed.length > 0 && !(scenario in side.expected_failures)) unexpected.push(`${scenario}: ${failed.join('; ')}\n${output.slice(-1500)}`);
    if (failed.length === 0 && scenario in side.expected_failures) stale.push(scenario);
  }
  expect(unexpected, 'scenarios that failed and are not in the baseline').toEqual([]);
  expect(stale, 'baseline expected failures that now pass (remove them from conformance-baseline.yaml)').toEqual([]);
}

let listed: { server: string[]; client: string[] };
beforeAll(async () => {
  listed = await listedScenarios();
}, scaled(60_000));

describe('MCP conformance: acx mcp --http (server scenarios)', { timeout: scaled(240_000) }, () => {
  let child: ChildProcess | undefined;
  let proxy: BearerProxy | undefined;

  beforeAll(async () => {
    mkdirSync(env.ACX_HOME!, { recursive: true });
    child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', join(ROOT, 'bin/acx.js'), 'mcp', join(ROOT, 'examples/notes-keeper'), '--http'], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk) => (stderr += chunk));
    const line = await new Promise<string>((resolve, reject) => {
      let text = '';
      child!.stdout!.on('data', (chunk) => {
        text += chunk;
        if (text.includes('\n')) resolve(text.split('\n')[0]!);
      });
      child!.once('exit', (code) => reject(new Error(`acx mcp --http exited ${code} before serving: ${stderr}`)));
    });
    const { url, token } = JSON.parse(line) as { url: string; token: string };
    proxy = await startBearerProxy(url, token);
  }, scaled(60_000));

  afterAll(async () => {
    await proxy?.close();
    child?.kill('SIGTERM');
  });

  it("passes every server scenario that needs none of the suite's fixture tools, prompts or resources, as the baseline states", async () => {
    const toRun = checkBaselineAgainst(baseline.server, listed.server);
    expect(toRun).toEqual(expect.arrayContaining(['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection', 'prompts-list', 'resources-list', 'logging-set-level']));
    // One run of the whole suite (each invocation costs seconds of start-up); the results of
    // not-applicable scenarios are not judged.
    const outcomes = await runSuite(['server', '--url', proxy!.url, '--suite', 'all'], toRun);
    // The scenarios really reached acx: tools-list saw the agent's tools.
    const listing = outcomes.get('tools-list')!.checks.find((check) => check.id === 'tools-list') as Check & { details?: { tools?: string[] } };
    expect(listing.details?.tools).toEqual(['memory_write', 'memory_read', 'memory_list', 'memory_search', 'memory_delete', 'load_skill']);
    // …and prompts-list the agent's skills, resources-list its instructions and memories.
    const detail = <T,>(scenario: string) => (outcomes.get(scenario)!.checks.find((check) => check.id === scenario) as Check & { details?: T }).details;
    expect(detail<{ prompts?: string[] }>('prompts-list')?.prompts).toEqual(['release-notes']);
    expect(detail<{ resources?: string[] }>('resources-list')?.resources).toEqual(['acx://instructions', 'acx://memory/team/deploy-policy', 'acx://memory/team/on-call']);
    expectMatchesBaseline(baseline.server, outcomes, toRun);
  });
});

describe('MCP conformance: acx MCP client (client scenarios)', { timeout: scaled(900_000) }, () => {
  it('passes every client scenario (the transports, elicitation, OAuth), as the baseline states', async () => {
    const toRun = checkBaselineAgainst(baseline.client, listed.client);
    expect(toRun).toEqual(expect.arrayContaining(['initialize', 'tools_call', 'sse-retry', 'elicitation-sep1034-client-defaults', 'auth/metadata-default', 'auth/scope-step-up', 'auth/pre-registration']));
    const command = `"${process.execPath}" --disable-warning=ExperimentalWarning "${CLIENT_ENTRY}"`;
    const outcomes: Outcomes = new Map();
    for (const scenario of toRun) {
      for (const [name, outcome] of await runSuite(['client', '--command', command, '--scenario', scenario, '--timeout', '30000'], [scenario])) outcomes.set(name, outcome);
    }
    // tools_call is passed only when the suite's server saw acx's client call add_numbers(2, 3).
    expect(outcomes.get('tools_call')!.checks.find((check) => check.id === 'tool-add-numbers')?.status).toBe('SUCCESS');
    // The step-up was a second authorization asking for the scope the server refused the call for.
    expect(outcomes.get('auth/scope-step-up')!.checks.find((check) => check.id === 'scope-step-up-escalation')?.status).toBe('SUCCESS');
    expectMatchesBaseline(baseline.client, outcomes, toRun);
  });
});
