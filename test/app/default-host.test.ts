import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkSpecOnDefaultHost, defaultHostProblems, defaultHostTools } from '../../src/app/default-host.ts';
import { grantedAreaScopes } from '../../src/app/boot-cartridge.ts';
import { buildCartridge } from '../../src/cartridge/build.ts';
import { harnessRequirementsFor } from '../../src/agent-def/defaults.ts';
import { readAgentDir } from '../../src/cartridge/layout.ts';
import { parseHarnessRequirements, serializeHarnessRequirements } from '../../src/contract/requirements.ts';
import type { BuiltinName } from '../../src/tools/builtin/names.ts';
import { tempDir, writeAgentDir, writeKey } from '../cartridge/helpers.ts';

const ROLES = ['memory', 'execute', 'dispatch'] as const satisfies readonly BuiltinName[];
const EXTRAS: BuiltinName[][] = [[], ['fs'], ['web_fetch'], ['fs', 'web_fetch'], ['shell'], ['fs', 'web_fetch', 'shell', 'system_prompt']];

/** The test agent (which ships one MCP drop-in, `filesystem`), with agent.json fields merged in. */
function agentDir(agent: Record<string, unknown> = {}, extra: Record<string, string> = {}, options: { mcp?: boolean } = {}): string {
  const dir = join(tempDir(), 'agent');
  mkdirSync(dir);
  writeAgentDir(dir, extra);
  if (options.mcp === false) rmSync(join(dir, 'mcp'), { recursive: true });
  const path = join(dir, 'agent.json');
  writeFileSync(path, JSON.stringify({ ...JSON.parse(readFileSync(path, 'utf8')), ...agent }));
  return dir;
}

function builtManifest(dir: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(readAgentDir(dir).files.find((f) => f.name === 'rom/manifest/harness-requirements.json')!.bytes).toString('utf8'));
}

describe('harness requirements derived from agent.json tools', () => {
  it('are the four required roles plus exactly the area scopes the declared built-ins hold, and a default host accepts them', () => {
    for (const extra of EXTRAS) {
      const tools = [...ROLES, ...extra];
      const { manifest, unbound } = harnessRequirementsFor(tools);
      expect(unbound, tools.join(',')).toEqual([]);
      const bytes = serializeHarnessRequirements(manifest as never);
      const parsed = parseHarnessRequirements(bytes).manifest;
      expect(parsed.requiredTools.map((c) => c.role)).toEqual(['acx:execute', 'acx:dispatch', 'acx:memory.write', 'acx:search']);
      expect(parsed.optionalTools).toBeUndefined();
      // What the real built-ins hold, not a second list: the scopes of the tools a host offers.
      const held = grantedAreaScopes(defaultHostTools(tools));
      expect({ filesystem: parsed.filesystem, network: parsed.network }, tools.join(',')).toEqual(held);
      expect(defaultHostProblems({ manifestBytes: bytes, tools, mcpServers: [] }), tools.join(',')).toEqual({ issues: [], notes: [] });
    }
  });

  it('name the required roles the declared built-ins cannot bind', () => {
    expect(harnessRequirementsFor(['memory']).unbound).toEqual(['acx:execute', 'acx:dispatch']);
    expect(harnessRequirementsFor(['execute', 'dispatch', 'fs']).unbound).toEqual(['acx:memory.write', 'acx:search']);
  });

  it('are what acx build packs for a directory without harness-requirements.json; the default built-ins need fs and net', () => {
    expect(builtManifest(agentDir())).toMatchObject({ filesystem: ['fs.read', 'fs.write'], network: ['net.fetch'] });
    expect(builtManifest(agentDir({ tools: ['memory', 'execute', 'dispatch'] }))).toMatchObject({ filesystem: ['fs.read'], network: [] });
    expect(() => readAgentDir(agentDir({ tools: ['memory'] }))).toThrow(/agent.json "tools" \["memory"\] has no tool for the required roles acx:execute, acx:dispatch/);
    expect(() => readAgentDir(agentDir({ tools: ['memory', 'telepathy'] }))).toThrow(/tools names unknown built-in\(s\) telepathy/);
  });
});

describe('acx spec: would a default host satisfy the manifest?', () => {
  const custom = (edit: (m: Record<string, any>) => void) => {
    const { manifest } = harnessRequirementsFor(['memory', 'execute', 'dispatch']);
    edit(manifest);
    return JSON.stringify(manifest, null, 2);
  };
  const deploy = { role: 'acx:deploy', tier: 'required', capabilityScopes: ['x-deploy'], name: 'deploy', description: 'Ship it.', inputSchema: { type: 'object', required: ['version'], properties: { version: { type: 'string' } } } };

  it('flags a role and a scope the agent\'s built-ins cannot give, naming the built-in to add', () => {
    // Without MCP servers of its own the agent has nothing that could provide them.
    const manifest = custom((m) => {
      m.requiredTools.push(deploy);
      m.network = ['net.fetch'];
    });
    const report = checkSpecOnDefaultHost(agentDir({ tools: ['memory', 'execute', 'dispatch'] }, { 'harness-requirements.json': manifest }, { mcp: false }));
    expect(report.ok).toBe(false);
    const harness = report.issues.filter((i) => i.startsWith('harness:'));
    expect(harness).toEqual([
      expect.stringMatching(/^harness: a default acx host refuses this cartridge: acx:deploy cannot be bound by agent.json "tools" \[memory, execute, dispatch\]: no host tool is named "deploy" .* → change the manifest, or serve the tool from an MCP server in mcp\/$/),
      'harness: a default acx host refuses this cartridge: network scope net.fetch is not held by agent.json "tools" [memory, execute, dispatch] → add "web_fetch" to agent.json "tools"',
    ]);
  });

  it('leaves it to the handshake when the agent brings MCP servers, and notes a context floor above what acx assumes', () => {
    const dir = agentDir({ tools: ['memory', 'execute', 'dispatch'] }, {
      'harness-requirements.json': custom((m) => {
        m.requiredTools.push(deploy);
        m.model.minContextWindowTokens = 400000;
      }),
    });
    const report = checkSpecOnDefaultHost(dir);
    expect(report.ok, report.issues.join('\n')).toBe(true);
    expect(report.issues).toEqual(expect.arrayContaining([
      expect.stringMatching(/^note: acx:deploy cannot be bound .*; it must come from the agent's MCP servers \(filesystem\): `acx handshake` checks with them connected$/),
      'note: the manifest asks for a 400000-token context window, above the 128000 acx assumes for a model that states none: run it on a model whose provider states a larger window, or set --context-tokens',
    ]));
  });

  it('checks a built cartridge the same way, from its ROM', () => {
    const root = tempDir();
    const dir = agentDir({ tools: ['memory', 'execute', 'dispatch', 'fs'] }, { 'harness-requirements.json': custom((m) => (m.network = ['net.fetch'])) });
    const out = join(root, 'a.acx');
    buildCartridge({ dir, out, key: writeKey(root).keyPath, publisher: 'io.github.example' });
    const report = checkSpecOnDefaultHost(out);
    expect(report.issues.filter((i) => i.includes('net.fetch'))).toEqual([
      expect.stringMatching(/^note: network scope net.fetch is not held by agent.json "tools" \[memory, execute, dispatch, fs\]; it must come from the agent's MCP servers \(filesystem\)/),
    ]);
  });
});
