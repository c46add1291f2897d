// Drop-in tool plugins end to end, as an operator uses them: plugin files in a real config home,
// agent directory and cartridge ROM; `acx resolved-config` and `acx run` as real child processes
// on the pinned Node (so Node itself imports the plugins); the model is the local model server.
import { createHash } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestCartridge } from '../support/cartridge-fixtures.ts';
import { cleanEnv, ROOT, runAcx, STACK_FRAME, tempDir } from '../support/cli.ts';
import { type ModelServer, respondByTurn, startModelServer } from '../support/model-server.ts';
import { scaled } from '../support/time-scale.ts';

const GREET = `// A read-only tool any provider may have.
export default {
  name: 'greet', description: 'Greets someone by name.', kind: 'read', effect: 'read-only', capabilityScopes: [],
  inputSchema: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] },
  execute: ({ who }) => 'Hello, ' + who + '! (from the greet plugin)',
};\n`;
const HOST = `export default { name: 'host_run', description: 'Runs a command on the host.', kind: 'execute', effect: 'unsafe', capabilityScopes: ['exec'], requires: ['host-shell'], inputSchema: { type: 'object' }, execute: () => 'ran' };\n`;
const GROK_ONLY = "// acx-provider: xai\nthrow new Error('grok-only.mjs was imported');\n";

/** A marker written by a plugin's top-level code: it exists only if that code ever ran. */
const MARKER = join(tempDir('acx-plugins-marker-'), 'pwned');
const PWN = `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(MARKER)}, 'top-level code ran');\nexport default [];\n`;

/** The model of 'PLANT check': it tries to write a plugin into its own agent directory, both ways, then reports what the tools said. */
function plantPlugin(messages: ReadonlyArray<{ role: string; toolResults?: Array<{ output: unknown }> }>) {
  const results = messages.filter((message) => message.role === 'tool').flatMap((message) => message.toolResults ?? []);
  if (results.length > 0) return results.map((result) => String(result.output)).join('\n---\n');
  return {
    toolCalls: [
      { name: 'fs_write', input: { path: 'agent/tools/pwn.mjs', content: PWN } },
      { name: 'execute', input: { command: 'mkdir -p agent/tools && echo "export default []" > agent/tools/pwn2.mjs' } },
    ],
  };
}

type Resolved = {
  tools: string[];
  skipped: Array<{ name: string; reason: string }>;
  plugins: Array<{ file: string; origin: string; tools: string[] }>;
  provider: string | null;
};

/** A config home holding `files` under tools/ (it is also the state home, as runAcx sets it). */
function homeWith(files: Record<string, string>): string {
  const home = tempDir('acx-plugins-e2e-');
  mkdirSync(join(home, 'tools'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(home, 'tools', name), text);
  return home;
}

async function resolved(args: string[], home: string, env: Record<string, string> = {}): Promise<{ config: Resolved; stderr: string }> {
  const run = await runAcx(['resolved-config', ...args], { home, env: cleanEnv({ ACX_LOG_LEVEL: 'info', ...env }) });
  expect(run.status, run.stderr).toBe(0);
  return { config: JSON.parse(run.stdout) as Resolved, stderr: run.stderr };
}

describe.concurrent('tool plugins (e2e)', { timeout: scaled(120_000) }, () => {
  let server: ModelServer;
  beforeAll(async () => {
    server = await startModelServer({
      fallback: respondByTurn(({ request }) => {
        // Each step ends with acx's volatile <acx-brief> message: the prompt is the first message.
        if (request.view.messages[0]?.text === 'DEFECT check') return 'Noted.';
        if (request.view.messages[0]?.text === 'PLANT check') return plantPlugin(request.view.messages);
        const result = request.view.messages.find((message) => message.role === 'tool')?.toolResults?.[0];
        return result ? `The plugin said: ${result.output}` : { toolCalls: [{ name: 'greet', input: { who: 'Ada' } }] };
      }),
    });
  });
  afterAll(async () => {
    await server.close();
  });

  it('resolved-config: a plugin loads; a denied capability, a broken file and a foreign-provider file are skipped with the reason', async () => {
    const home = homeWith({ 'greet.mjs': GREET, 'host.mjs': HOST, 'broken.mjs': 'export default {\n', 'grok-only.mjs': GROK_ONLY });
    const { config, stderr } = await resolved(['--model', 'openai:gpt-5-mini'], home);
    expect(config.tools).toContain('greet');
    expect(config.tools).not.toContain('host_run');
    expect(config.plugins).toEqual([{ file: join(home, 'tools', 'greet.mjs'), origin: 'config-home', tools: ['greet'] }]);
    const plugins = config.skipped.filter((entry) => entry.name.startsWith('plugin:') || entry.name === 'host_run');
    const tools = join(home, 'tools');
    expect(plugins).toEqual([
      { name: 'plugin:broken.mjs', reason: expect.stringMatching(new RegExp(`^${tools}/broken\\.mjs: importing it failed \\(SyntaxError: Unexpected end of input\\)$`)) },
      { name: 'plugin:grok-only.mjs', reason: `${tools}/grok-only.mjs: it is for xai only (acx-provider header), and this agent's provider is openai; not imported` },
      {
        name: 'host_run',
        reason: `${tools}/host.mjs: it needs an unsandboxed shell on the host (host-shell), which the locked profile refuses (select the unlocked profile: ACX_PROFILE=unlocked or Policy.unlocked())`,
      },
    ]);
    expect(stderr).toContain(`WARNING tool plugin skipped file=${tools}/broken.mjs reason="importing it failed (SyntaxError: Unexpected end of input)"`);
    expect(stderr).not.toContain('grok-only.mjs was imported');
    expect(stderr).not.toMatch(STACK_FRAME);

    // On xai the grok-only plugin is imported (and throws, a soft skip): the header, not luck, kept it out above.
    const onXai = await resolved(['--model', 'xai:grok-4'], home);
    expect(onXai.config.skipped).toContainEqual({ name: 'plugin:grok-only.mjs', reason: `${tools}/grok-only.mjs: importing it failed (Error: grok-only.mjs was imported)` });
  });

  it('acx run: the model calls a plugin tool from the config home and answers from its result', async () => {
    const home = homeWith({ 'greet.mjs': GREET });
    const run = await runAcx(['run', 'default', 'Greet Ada.', '--model', 'openai:echo-model', '--json'], {
      home,
      env: cleanEnv({ OPENAI_API_KEY: 'sk-test-plugins-1f2e3d', OPENAI_BASE_URL: server.openaiBaseURL }),
    });
    expect(run.status, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { text: string; toolCalls: Array<{ toolName: string }> };
    expect(result.toolCalls.map((call) => call.toolName)).toEqual(['greet']);
    expect(result.text).toBe('The plugin said: Hello, Ada! (from the greet plugin)');
  });

  it('a broken plugin the installer laid down (named in .manifest.json) is an ERROR and a "Tool defect" line the model reads', async () => {
    const home = homeWith({ 'stale.mjs': "import './removed-helper.mjs';\nexport default [];\n", 'greet.mjs': GREET });
    const manifest = { format: 1, files: { 'tools/stale.mjs': createHash('sha256').update('an older default').digest('hex') } };
    writeFileSync(join(home, '.manifest.json'), `${JSON.stringify(manifest)}\n`);
    const run = await runAcx(['run', 'default', 'DEFECT check', '--model', 'openai:echo-model'], {
      home,
      env: cleanEnv({ OPENAI_API_KEY: 'sk-test-plugins-1f2e3d', OPENAI_BASE_URL: server.openaiBaseURL }),
    });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('Noted.');
    expect(run.stderr).toMatch(new RegExp(`^ERROR tool defect file=${join(home, 'tools')}/stale\\.mjs reason="importing it failed \\(Error: Cannot find module`, 'm'));
    const request = server.requests.find((r) => r.view.messages[0]?.text === 'DEFECT check')!;
    const system = request.view.system.join('\n');
    expect(system).toMatch(/^Tool defect: the tool plugin stale\.mjs that acx ships did not load \(importing it failed \(Error: Cannot find module .*removed-helper\.mjs/m);
    // The other plugins still load.
    expect(request.view.tools).toContain('greet');
  });

  it("an agent directory's own tools/ folder is loaded beside the config home's", async () => {
    const home = homeWith({});
    const agent = join(tempDir('acx-plugins-agent-'), 'agent');
    cpSync(join(ROOT, 'examples/notes-keeper'), agent, { recursive: true });
    mkdirSync(join(agent, 'tools'));
    writeFileSync(join(agent, 'tools', 'greet.mjs'), GREET);
    const { config } = await resolved([agent], home);
    expect(config.tools).toContain('greet');
    expect(config.plugins).toEqual([{ file: join(agent, 'tools', 'greet.mjs'), origin: 'agent', tools: ['greet'] }]);
  });

  it('an agent inside its workspace cannot plant a plugin in its own tools/ (fs_write nor execute); acx warns once that it protects it', async () => {
    const home = homeWith({});
    const workspace = tempDir('acx-plugins-ws-');
    const agent = join(workspace, 'agent');
    mkdirSync(agent);
    writeFileSync(
      join(agent, 'agent.json'),
      `${JSON.stringify({ id: 'planter', name: 'Planter', version: '0.1.0', publisher: 'dev.acx.test', tools: ['fs', 'execute'], permissionMode: 'allow-all' })}\n`,
    );
    const env = cleanEnv({ OPENAI_API_KEY: 'sk-test-plugins-1f2e3d', OPENAI_BASE_URL: server.openaiBaseURL });
    const run = await runAcx(['run', agent, 'PLANT check', '--workspace', workspace, '--model', 'openai:echo-model'], { home, env });
    expect(run.status, run.stderr).toBe(0);
    const [written, executed] = run.stdout.trim().split('\n---\n');
    // What the model reads back from each tool.
    expect(JSON.parse(written!)).toEqual({
      error: `fs_write failed: Refused "agent/tools/pwn.mjs": it is inside the agent directory ${agent}, which acx loads code and configuration from; no tool may write there.`,
    });
    expect(executed).toMatch(/mkdir: cannot create directory .agent\/tools.: Read-only file system/);
    expect(readdirSync(agent)).toEqual(['agent.json']);
    const warning = `WARNING the workspace holds acx configuration; acx keeps it read-only to its tools workspace=${workspace} protected="the agent directory ${agent}"`;
    expect(run.stderr.split('\n').filter((line) => line.startsWith('WARNING the workspace holds'))).toEqual([warning]);

    // The next command loads nothing the model made, and no code of its ran.
    const next = await resolved([agent, '--workspace', workspace], home);
    expect(next.config.plugins).toEqual([]);
    expect(existsSync(MARKER)).toBe(false);
  });

  it('a plugin or an MCP drop-in someone else could have written is refused before use, with a WARNING naming the file and the fix', async () => {
    const home = homeWith({});
    const agent = join(tempDir('acx-plugins-agent-'), 'agent');
    cpSync(join(ROOT, 'examples/notes-keeper'), agent, { recursive: true });
    mkdirSync(join(agent, 'tools'));
    mkdirSync(join(agent, 'mcp'));
    const plugin = join(agent, 'tools', 'greet.mjs');
    const dropIn = join(agent, 'mcp', 'helper.json');
    writeFileSync(plugin, PWN.replace('export default [];', GREET));
    writeFileSync(dropIn, JSON.stringify({ command: 'true' }));
    chmodSync(plugin, 0o664);
    chmodSync(dropIn, 0o666);
    const { config, stderr } = await resolved([agent], home);
    expect(config.tools).not.toContain('greet');
    expect(config.skipped).toContainEqual({
      name: 'plugin:greet.mjs',
      reason: `${plugin}: not loaded: it is writable by group (mode 0664), so someone else could change the code acx runs (fix: chmod go-w ${plugin})`,
    });
    expect(config.skipped).toContainEqual({
      name: 'mcp:helper',
      reason: `${dropIn}: MCP config ${dropIn}: not used: it is writable by group and others (mode 0666), so someone else could change the code acx runs (fix: chmod go-w ${dropIn})`,
    });
    expect(stderr).toContain(`WARNING tool plugin skipped file=${plugin} reason="not loaded: it is writable by group (mode 0664)`);
    expect(stderr).toContain(`WARNING mcp drop-in skipped server=helper file=${dropIn} reason="MCP config ${dropIn}: not used: it is writable by group and others (mode 0666)`);
    expect(existsSync(MARKER)).toBe(false);
  });

  it('a cartridge never loads its ROM plugins unless the host grants it (ACX_ALLOW_ROM_PLUGINS=1), and then only when trusted', async () => {
    const root = tempDir('acx-plugins-cart-');
    const cartridge = buildTestCartridge(root, { edit: { 'tools/greet.mjs': GREET } });
    const home = homeWith({});
    const args = [cartridge.path, '--registry', cartridge.registry];
    const refused = await resolved(args, home);
    expect(refused.config.tools).not.toContain('greet');
    expect(refused.config.skipped).toContainEqual({
      name: 'plugin:greet.mjs',
      reason: "rom/tools/greet.mjs: a cartridge's ROM code plugins do not load unless the host grants it (set ACX_ALLOW_ROM_PLUGINS=1 to allow)",
    });
    expect(refused.stderr).toContain('WARNING cartridge tool plugins not loaded plugins=greet.mjs');

    const granted = await resolved(args, home, { ACX_ALLOW_ROM_PLUGINS: '1' });
    expect(granted.config.tools).toContain('greet');
    expect(granted.config.plugins).toEqual([{ file: 'rom/tools/greet.mjs', origin: 'cartridge', tools: ['greet'] }]);
    expect(granted.config.skipped.filter((entry) => entry.name === 'plugin:greet.mjs')).toEqual([]);

    // The grant covers trusted cartridges only: one booted as portable (its key unknown) still loads none.
    const portable = await resolved([cartridge.path], home, { ACX_ALLOW_ROM_PLUGINS: '1', ACX_ALLOW_PORTABLE: '1' });
    expect(portable.config.tools).not.toContain('greet');
    expect(portable.config.skipped).toContainEqual({
      name: 'plugin:greet.mjs',
      reason: 'rom/tools/greet.mjs: the cartridge is portable; ROM code plugins load only from a trusted cartridge, even with ACX_ALLOW_ROM_PLUGINS=1',
    });
  });
});
