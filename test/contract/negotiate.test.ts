import { describe, expect, it } from 'vitest';
import { compareProtocolRevisions, negotiate, type HostTool } from '../../src/contract/negotiate.ts';
import { UnsupportedHarnessError, assertAccepted } from '../../src/contract/refusal.ts';
import { AcxError } from '../../src/core/errors.ts';
import path from 'node:path';
import { goodHost, manifestBytes, manifestFromCartridge, matchingTools, stringParam } from './helpers.ts';
import type { ComplianceDescriptor } from '../../src/contract/descriptor.ts';

function refusalOf(descriptor: ComplianceDescriptor) {
  expect(descriptor.verdict).toBe('refuse');
  try {
    assertAccepted(descriptor);
  } catch (error) {
    expect(error).toBeInstanceOf(UnsupportedHarnessError);
    expect(error).toBeInstanceOf(AcxError);
    return (error as UnsupportedHarnessError).toJsonRpc();
  }
  throw new Error('assertAccepted did not throw');
}

const without = (name: string) => matchingTools().filter((t) => t.name !== name);
const replaced = (name: string, change: Partial<HostTool>) => matchingTools().map((t) => (t.name === name ? { ...t, ...change } : t));

describe('negotiate: accept', () => {
  it('accepts a host that meets everything, binding every role by name', () => {
    const d = negotiate(goodHost());
    expect(d.schemaVersion).toBe('acx.harness.compliance.v1');
    expect(d.mediaType).toBe('application/vnd.acx.harness-compliance.v1+json');
    expect(d.verdict).toBe('accept');
    expect(d.unmet).toEqual([]);
    expect(d.optionalAbsent).toEqual([]);
    expect(d.requirementsHash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(d.protocolRevision).toBe('2025-11-25');
    expect(d.model).toEqual({ toolUse: true, contextWindowTokens: 200_000, structuredOutput: false });
    expect(d.filesystem).toEqual(['fs.read']);
    expect(d.network).toEqual([]);
    expect(d.bindings.map((b) => [b.role, b.boundTool, b.via, b.satisfied])).toEqual([
      ['acx:execute', 'execute', 'name', true],
      ['acx:dispatch', 'dispatch', 'name', true],
      ['acx:memory.write', 'add_memory', 'name', true],
      ['acx:search', 'search_memory', 'name', true],
      ['acx:list_agents', 'list_agents', 'name', true],
    ]);
    expect(d.bindings[0]!.scopesGranted).toEqual(['exec', 'fs.read']);
    expect(() => assertAccepted(d)).not.toThrow();
  });

  it('accepts exactly at the floors', () => {
    const d = negotiate(goodHost({ protocolRevision: '2024-11-05', model: { toolUse: true, contextWindowTokens: 100_000, structuredOutput: false } }));
    expect(d.verdict).toBe('accept');
  });

  it('accepts without the optional role and lists it in optionalAbsent', () => {
    const d = negotiate(goodHost({ hostTools: without('list_agents') }));
    expect(d.verdict).toBe('accept');
    expect(d.optionalAbsent).toEqual(['acx:list_agents']);
    const optional = d.bindings.find((b) => b.role === 'acx:list_agents')!;
    expect(optional).toMatchObject({ tier: 'optional', boundTool: null, satisfied: false });
    expect(d.unmet).toEqual([]);
  });

  it('an optional role whose tool lacks scopes never blocks', () => {
    const d = negotiate(goodHost({ hostTools: replaced('list_agents', { grantedScopes: [] }) }));
    expect(d.verdict).toBe('accept');
    expect(d.optionalAbsent).toEqual(['acx:list_agents']);
    expect(d.bindings.find((b) => b.role === 'acx:list_agents')!.reasons).toEqual(['scopes not granted: memory.read']);
  });

  it('accepts the manifest of a reference cartridge with matching host tools', () => {
    const bytes = manifestFromCartridge(path.join(import.meta.dirname, '..', 'fixtures', 'reference', 'ada-ridge.acx'));
    const d = negotiate(goodHost({ manifestBytes: bytes }));
    expect(d.verdict).toBe('accept');
    expect(d.requirementsHash).toBe('sha256:209e8b05bf8e6a44aa39f59e712b0104ead1dc8ff4b14c1da863e90a458c6968');
  });

  it('is deterministic and depends only on its inputs', () => {
    expect(negotiate(goodHost())).toEqual(negotiate(goodHost()));
  });
});

describe('negotiate: each refusal condition on its own', () => {
  const cases: Array<[string, Parameters<typeof goodHost>[0], string[]]> = [
    ['protocol revision below the floor', { protocolRevision: '2024-10-07' }, ['mcp.minProtocolRevision']],
    ['tool use required but the model has none', { model: { toolUse: false, contextWindowTokens: 200_000, structuredOutput: false } }, ['model.toolUse']],
    ['context window below the floor', { model: { toolUse: true, contextWindowTokens: 99_999, structuredOutput: false } }, ['model.minContextWindowTokens']],
    ['a required role unbound', { hostTools: without('dispatch') }, ['tool:acx:dispatch']],
    ['a required role scope-denied', { hostTools: replaced('execute', { grantedScopes: ['exec'] }) }, ['tool:acx:execute']],
    ['a required role whose only tool has an incompatible schema', { hostTools: replaced('add_memory', { inputSchema: stringParam('text') }) }, ['tool:acx:memory.write']],
    ['a required filesystem scope denied', { grantedFilesystem: [] }, ['filesystem:fs.read']],
    ['a required network scope denied', { manifestBytes: manifestBytes((m) => (m.network = ['net.fetch'])) }, ['network:net.fetch']],
  ];

  it.each(cases)('%s', (_label, overrides, unmet) => {
    const d = negotiate(goodHost(overrides));
    expect(d.unmet).toEqual(unmet);
    const error = refusalOf(d);
    expect(error.code).toBe(-32602);
    expect(error.message).toBe('Unsupported harness');
    expect(error.data.unmet).toEqual(unmet);
    expect(error.data.requested).toEqual(expect.arrayContaining(unmet));
    expect(error.data.supported).not.toEqual(expect.arrayContaining(unmet));
    expect([...error.data.supported, ...error.data.unmet].sort()).toEqual([...error.data.requested].sort());
  });

  it('explains a scope-denied binding', () => {
    const d = negotiate(goodHost({ hostTools: replaced('search_memory', { grantedScopes: ['search'] }) }));
    const binding = d.bindings.find((b) => b.role === 'acx:search')!;
    expect(binding).toMatchObject({ boundTool: 'search_memory', satisfied: false, scopesGranted: ['search'] });
    expect(binding.reasons).toEqual(['scopes not granted: memory.read']);
  });

  it('explains an unbound role', () => {
    const d = negotiate(goodHost({ hostTools: without('dispatch') }));
    const binding = d.bindings.find((b) => b.role === 'acx:dispatch')!;
    expect(binding).toMatchObject({ boundTool: null, via: null, scopesGranted: [], satisfied: false });
    expect(binding.reasons![0]).toMatch(/no host tool is named "dispatch"/);
  });

  it('collects every unmet requirement at once', () => {
    const d = negotiate(goodHost({ protocolRevision: '2024-10-07', grantedFilesystem: [], hostTools: [] }));
    expect(d.unmet).toEqual([
      'mcp.minProtocolRevision',
      'tool:acx:execute',
      'tool:acx:dispatch',
      'tool:acx:memory.write',
      'tool:acx:search',
      'filesystem:fs.read',
    ]);
    expect(d.optionalAbsent).toEqual(['acx:list_agents']);
  });

  it('the refusal error reads as what went wrong and what to do', () => {
    const d = negotiate(goodHost({ model: { toolUse: true, contextWindowTokens: 8192, structuredOutput: false } }));
    const error = new UnsupportedHarnessError(d);
    expect(error.code).toBe('unsupported-harness');
    expect(error.describe()).toContain('model.minContextWindowTokens: requested >= 100000, offered 8192');
    expect(error.describe()).toContain('SAVE zone was not touched');
  });

  it('requireStructuredContent needs MCP >= 2025-06-18', () => {
    const bytes = manifestBytes((m) => (m.mcp.requireStructuredContent = true));
    expect(negotiate(goodHost({ manifestBytes: bytes, protocolRevision: '2025-03-26' })).unmet).toEqual(['mcp.requireStructuredContent']);
    expect(negotiate(goodHost({ manifestBytes: bytes, protocolRevision: '2025-06-18' })).verdict).toBe('accept');
  });

  it('a manifest asking for structured output refuses a model without it', () => {
    const bytes = manifestBytes((m) => (m.model.structuredOutput = true));
    expect(negotiate(goodHost({ manifestBytes: bytes })).unmet).toEqual(['model.structuredOutput']);
  });

  it('a manifest that does not require tool use accepts a model without it', () => {
    const bytes = manifestBytes((m) => (m.model.toolUse = false));
    const d = negotiate(goodHost({ manifestBytes: bytes, model: { toolUse: false, contextWindowTokens: 200_000, structuredOutput: false } }));
    expect(d.verdict).toBe('accept');
  });
});

describe('negotiate: binding strategy', () => {
  it('binds by an explicit roleBindings entry first', () => {
    const tools = [...matchingTools(), { name: 'sandbox_run', inputSchema: stringParam('command'), grantedScopes: ['exec', 'fs.read'], source: 'mcp' }];
    const d = negotiate(goodHost({ hostTools: tools, roleBindings: { 'acx:execute': 'sandbox_run' } }));
    expect(d.bindings[0]).toMatchObject({ role: 'acx:execute', boundTool: 'sandbox_run', via: 'explicit', source: 'mcp', satisfied: true });
  });

  it('an explicit binding to an unfit tool is reported, never silently replaced', () => {
    const d = negotiate(goodHost({ roleBindings: { 'acx:execute': 'dispatch' } }));
    expect(d.bindings[0]).toMatchObject({ boundTool: 'dispatch', via: 'explicit', satisfied: false });
    expect(d.bindings[0]!.reasons).toEqual([
      'inputSchema /command: the contract requires "command" but the tool does not declare it',
      'inputSchema /task: the tool requires "task" but the contract does not guarantee it',
      'scopes not granted: exec, fs.read',
    ]);
    expect(d.unmet).toEqual(['tool:acx:execute']);
  });

  it('an explicit binding to a tool the host does not offer is unmet', () => {
    const d = negotiate(goodHost({ roleBindings: { 'acx:execute': 'nope' } }));
    expect(d.bindings[0]).toMatchObject({ boundTool: null, via: 'explicit', satisfied: false });
    expect(d.bindings[0]!.reasons![0]).toMatch(/"nope", which the host does not offer/);
  });

  it('refuses roleBindings for a role the manifest does not declare', () => {
    expect(() => negotiate(goodHost({ roleBindings: { 'acx:exec': 'execute' } }))).toThrow(/acx:exec, which the manifest does not declare/);
  });

  it('binds by structure when no tool has the contract name, choosing deterministically', () => {
    const tools = [
      ...without('execute'),
      { name: 'zsh', inputSchema: stringParam('command'), grantedScopes: ['exec', 'fs.read'], source: 'mcp' },
      { name: 'bash', inputSchema: stringParam('command'), grantedScopes: ['exec', 'fs.read'], source: 'mcp' },
      { name: 'admin_shell', inputSchema: stringParam('command'), grantedScopes: ['exec', 'fs.read', 'fs.write', 'net.fetch'], source: 'mcp' },
    ];
    const d = negotiate(goodHost({ hostTools: tools }));
    // fewest scopes beyond the contract first (admin_shell loses), then name order (bash before zsh)
    expect(d.bindings[0]).toMatchObject({ role: 'acx:execute', boundTool: 'bash', via: 'structure', satisfied: true });
    expect(negotiate(goodHost({ hostTools: [...tools].reverse() })).bindings[0]!.boundTool).toBe('bash');
  });

  it('prefers a structurally fit tool over a same-named unfit one', () => {
    const tools = [...replaced('execute', { inputSchema: stringParam('cmd') }), { name: 'run', inputSchema: stringParam('command'), grantedScopes: ['exec', 'fs.read'], source: 'builtin' }];
    const d = negotiate(goodHost({ hostTools: tools }));
    expect(d.bindings[0]).toMatchObject({ boundTool: 'run', via: 'structure', satisfied: true });
  });

  it('reports the same-named tool when nothing fits', () => {
    const d = negotiate(goodHost({ hostTools: replaced('execute', { inputSchema: stringParam('cmd') }) }));
    expect(d.bindings[0]).toMatchObject({ boundTool: 'execute', via: 'name', satisfied: false });
    expect(d.bindings[0]!.reasons![0]).toMatch(/\/command: the contract requires "command"/);
  });

  it('does not bind one tool to two roles by structure', () => {
    const generic = { name: 'anything', inputSchema: { type: 'object', properties: { command: { type: 'string' }, task: { type: 'string' } } }, grantedScopes: ['exec', 'fs.read', 'dispatch'], source: 'mcp' };
    const d = negotiate(goodHost({ hostTools: [...without('execute').filter((t) => t.name !== 'dispatch'), generic] }));
    expect(d.bindings.filter((b) => b.boundTool === 'anything')).toHaveLength(1);
    expect(d.unmet).toEqual(['tool:acx:dispatch']);
  });
});

describe('negotiate: bad host input is a clear error', () => {
  it.each([
    ['a malformed revision', { protocolRevision: 'latest' }, /Unknown MCP protocol revision "latest"/],
    ['an impossible revision date', { protocolRevision: '2025-13-01' }, /Unknown MCP protocol revision "2025-13-01"/],
    ['a non-integer context window', { model: { toolUse: true, contextWindowTokens: 1.5, structuredOutput: false } }, /contextWindowTokens must be a positive integer/],
    ['an unknown granted scope', { grantedFilesystem: ['fs.readwrite'] }, /grantedFilesystem contains unknown capability scope/],
    ['duplicate host tool names', { hostTools: [...matchingTools(), matchingTools()[0]!] }, /Two host tools are named "execute"/],
  ] as const)('%s', (_label, overrides, message) => {
    expect(() => negotiate(goodHost(overrides as never))).toThrow(message);
  });

  it('a malformed manifest is rejected before anything is negotiated', () => {
    expect(() => negotiate(goodHost({ manifestBytes: '{"schemaVersion":"acx.harness.v1"}' }))).toThrow(/\/: missing required key "mcp"/);
  });
});

describe('compareProtocolRevisions', () => {
  it('orders revision dates', () => {
    expect(compareProtocolRevisions('2025-11-25', '2024-11-05')).toBeGreaterThan(0);
    expect(compareProtocolRevisions('2024-11-05', '2025-03-26')).toBeLessThan(0);
    expect(compareProtocolRevisions('2025-06-18', '2025-06-18')).toBe(0);
    expect(compareProtocolRevisions('2026-07-28', '2025-11-25')).toBeGreaterThan(0);
  });
  it('rejects anything that is not a revision date', () => {
    expect(() => compareProtocolRevisions('DRAFT-2026-v1', '2024-11-05')).toThrow(AcxError);
    expect(() => compareProtocolRevisions('2024-11-5', '2024-11-05')).toThrow(/Unknown MCP protocol revision/);
  });
});
