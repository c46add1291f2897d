import { createHash } from 'node:crypto';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import {
  HarnessRequirementsError,
  REQUIRED_ROLES,
  defaultHarnessRequirements,
  parseHarnessRequirements,
  serializeHarnessRequirements,
  type ManifestProblem,
} from '../../src/contract/requirements.ts';
import { manifestBytes, manifestFromCartridge } from './helpers.ts';

function problemsOf(input: Uint8Array | string): ManifestProblem[] {
  try {
    parseHarnessRequirements(input);
  } catch (error) {
    expect(error).toBeInstanceOf(HarnessRequirementsError);
    return (error as HarnessRequirementsError).problems;
  }
  throw new Error('expected the manifest to be rejected');
}

function withEdit(edit: (m: any) => void): string {
  const manifest: any = defaultHarnessRequirements();
  edit(manifest);
  return JSON.stringify(manifest);
}

describe('the default harness-requirements manifest', () => {
  it('is the seed 000 manifest: four required roles, one optional, floors, fs.read, no network', () => {
    const m = defaultHarnessRequirements();
    expect(m.schemaVersion).toBe('acx.harness.v1');
    expect(m.requiredTools.map((t) => t.role)).toEqual([...REQUIRED_ROLES]);
    expect(m.requiredTools.map((t) => t.name)).toEqual(['execute', 'dispatch', 'add_memory', 'search_memory']);
    expect(m.requiredTools.find((t) => t.role === 'acx:search')!.capabilityScopes).toEqual(['search', 'memory.read']);
    expect(m.optionalTools!.map((t) => [t.role, t.tier])).toEqual([['acx:list_agents', 'optional']]);
    expect(m.mcp).toEqual({ minProtocolRevision: '2024-11-05', preferredProtocolRevision: '2025-11-25' });
    expect(m.model).toEqual({ toolUse: true, minContextWindowTokens: 100000, structuredOutput: false });
    expect(m.filesystem).toEqual(['fs.read']);
    expect(m.network).toEqual([]);
  });

  it('validates and hashes its exact bytes', () => {
    const bytes = serializeHarnessRequirements(defaultHarnessRequirements());
    const parsed = parseHarnessRequirements(bytes);
    expect(parsed.requirementsHash).toBe(`sha256:${createHash('sha256').update(bytes).digest('hex')}`);
    expect(parsed.manifest).toEqual(defaultHarnessRequirements());
  });

  it('gives a different hash when only whitespace changes', () => {
    const pretty = new TextDecoder().decode(manifestBytes());
    const compact = JSON.stringify(JSON.parse(pretty));
    const a = parseHarnessRequirements(pretty);
    const b = parseHarnessRequirements(compact);
    expect(a.manifest).toEqual(b.manifest);
    expect(a.requirementsHash).not.toBe(b.requirementsHash);
    expect(parseHarnessRequirements(`${pretty}\n`).requirementsHash).not.toBe(a.requirementsHash);
  });

  it('hashes a string as its UTF-8 bytes', () => {
    const text = new TextDecoder().decode(manifestBytes());
    expect(parseHarnessRequirements(text).requirementsHash).toBe(parseHarnessRequirements(manifestBytes()).requirementsHash);
  });

  it('accepts the manifest inside the reference cartridges (which add externalTools)', () => {
    for (const name of ['rex-calder.acx', 'ada-ridge.acx']) {
      const bytes = manifestFromCartridge(path.join(import.meta.dirname, '..', 'fixtures', 'reference', name));
      const parsed = parseHarnessRequirements(bytes);
      expect(parsed.manifest.requiredTools).toHaveLength(4);
      expect(parsed.manifest.externalTools?.map((t) => t.bin)).toEqual(['git', 'node']);
    }
  });

  it('hashes a reference manifest to the oid its cartridge signs for it (canon raw)', () => {
    const file = path.join(import.meta.dirname, '..', 'fixtures', 'reference', 'rex-calder.acx');
    const db = new DatabaseSync(file, { readOnly: true });
    const row = db.prepare("SELECT oid FROM objects WHERE source_ref = 'rom/manifest/harness-requirements.json'").get() as { oid: string };
    db.close();
    expect(parseHarnessRequirements(manifestFromCartridge(file)).requirementsHash).toBe(row.oid);
  });
});

describe('malformed manifests', () => {
  const cases: Array<[string, string | Uint8Array, string, RegExp]> = [
    ['not JSON', '{"schemaVersion": ', '', /not valid JSON/],
    ['not UTF-8', new Uint8Array([0x7b, 0xff, 0x7d]), '', /UTF-8/],
    ['unknown schemaVersion', withEdit((m) => (m.schemaVersion = 'acx.harness.v2')), '/schemaVersion', /must be "acx.harness.v1"/],
    ['unknown top-level key', withEdit((m) => (m.surprise = 1)), '/surprise', /unknown key "surprise"/],
    ['forbidden key tools', withEdit((m) => (m.tools = [])), '/tools', /forbidden key "tools".*requiredTools/],
    ['forbidden key fsScopes', withEdit((m) => (m.fsScopes = [])), '/fsScopes', /forbidden key "fsScopes"/],
    ['forbidden key netScopes', withEdit((m) => (m.netScopes = [])), '/netScopes', /forbidden key "netScopes"/],
    ['unknown key in a tool contract', withEdit((m) => (m.requiredTools[1].timeout = 5)), '/requiredTools/1/timeout', /unknown key/],
    ['missing mcp floor', withEdit((m) => delete m.mcp.minProtocolRevision), '/mcp', /missing required key "minProtocolRevision"/],
    ['malformed revision', withEdit((m) => (m.mcp.minProtocolRevision = 'latest')), '/mcp/minProtocolRevision', /YYYY-MM-DD/],
    ['impossible revision date', withEdit((m) => (m.mcp.minProtocolRevision = '2024-02-30')), '/mcp/minProtocolRevision', /not a real calendar date/],
    ['context floor given as a model id', withEdit((m) => (m.model.minContextWindowTokens = 'gpt-4o')), '/model/minContextWindowTokens', /integer token count.*never a model id/],
    ['context floor zero', withEdit((m) => (m.model.minContextWindowTokens = 0)), '/model/minContextWindowTokens', />= 1/],
    ['required role listed as optional', withEdit((m) => m.optionalTools.push({ ...m.requiredTools.pop(), tier: 'optional' })), '/optionalTools/1/role', /acx:search belongs to the required minimal contract/],
    ['tier says optional inside requiredTools', withEdit((m) => (m.requiredTools[0].tier = 'optional')), '/requiredTools/0/tier', /listed in requiredTools but has tier "optional"/],
    ['tier says required inside optionalTools', withEdit((m) => (m.optionalTools[0].tier = 'required')), '/optionalTools/0/tier', /listed in optionalTools but has tier "required"/],
    ['inventory role made required', withEdit((m) => m.requiredTools.push({ ...m.optionalTools.pop(), tier: 'required' })), '/requiredTools/4/role', /inventory role and MUST be optional/],
    ['unknown capability scope', withEdit((m) => (m.requiredTools[0].capabilityScopes = ['exec', 'root'])), '/requiredTools/0/capabilityScopes/1', /unknown capability scope "root"/],
    ['empty capability scopes', withEdit((m) => (m.requiredTools[0].capabilityScopes = [])), '/requiredTools/0/capabilityScopes', /fewer than 1/],
    ['unknown filesystem scope', withEdit((m) => (m.filesystem = ['fs.readall'])), '/filesystem/0', /unknown capability scope/],
    ['non-filesystem scope in filesystem', withEdit((m) => (m.filesystem = ['exec'])), '/filesystem/0', /not a filesystem scope/],
    ['non-network scope in network', withEdit((m) => (m.network = ['fs.read'])), '/network/0', /not a network scope/],
    ['duplicate role', withEdit((m) => m.requiredTools.push({ ...m.requiredTools[0] })), '/requiredTools/4/role', /duplicate role acx:execute \(already declared at \/requiredTools\/0\)/],
    ['duplicate across tiers', withEdit((m) => m.optionalTools.push({ ...m.optionalTools[0] })), '/optionalTools/1/role', /duplicate role acx:list_agents/],
    ['missing a required role', withEdit((m) => (m.requiredTools[3] = { ...m.requiredTools[3], role: 'acx:lookup' })), '/requiredTools', /missing required role acx:search/],
    ['role outside the acx namespace', withEdit((m) => (m.optionalTools[0].role = 'list_agents')), '/optionalTools/0/role', /acx: namespace/],
    ['inputSchema not an object schema', withEdit((m) => (m.requiredTools[0].inputSchema = { type: 'string' })), '/requiredTools/0/inputSchema/type', /type "object"/],
    ['inputSchema not a valid JSON Schema', withEdit((m) => (m.requiredTools[0].inputSchema = { type: 'object', properties: { a: { type: 'strng' } } })), '/requiredTools/0/inputSchema', /not a valid JSON Schema/],
  ];

  it.each(cases)('%s → names the path and the problem', (_label, input, pathExpected, message) => {
    const problems = problemsOf(input);
    const hit = problems.find((p) => p.path === pathExpected && message.test(p.problem));
    expect(hit, JSON.stringify(problems, null, 2)).toBeDefined();
  });

  it('reports every problem at once, from the schema and the semantic rules alike, and says how to fix it', () => {
    const input = withEdit((m) => {
      m.tools = [];
      m.model.toolUse = 'yes';
      m.mcp.preferredProtocolRevision = '2025-02-30';
      m.requiredTools[2].capabilityScopes = ['memory.writ'];
    });
    let error: unknown;
    try {
      parseHarnessRequirements(input);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(HarnessRequirementsError);
    const e = error as HarnessRequirementsError;
    expect(e.code).toBe('harness-requirements-invalid');
    expect(e.problems).toEqual([
      { path: '/tools', problem: 'forbidden key "tools" (use "requiredTools" and "optionalTools")' },
      { path: '/model/toolUse', problem: 'must be boolean' },
      { path: '/mcp/preferredProtocolRevision', problem: '"2025-02-30" is not a real calendar date' },
      { path: '/requiredTools/2/capabilityScopes/0', problem: expect.stringMatching(/^unknown capability scope "memory.writ" \(allowed: /) },
    ]);
    expect(e.message).toContain('/model/toolUse: must be boolean');
    expect(e.message).toContain('/requiredTools/2/capabilityScopes/0: unknown capability scope "memory.writ"');
    expect(e.hint).toContain('rom/manifest/harness-requirements.json');
  });

  it('allows vendor x- scopes and extra required roles', () => {
    const input = withEdit((m) => {
      m.requiredTools[0].capabilityScopes.push('x-acme.gpu');
      m.requiredTools.push({ role: 'acx:render', tier: 'required', capabilityScopes: ['x-acme.gpu'], name: 'render', description: 'Render.', inputSchema: { type: 'object' } });
    });
    expect(parseHarnessRequirements(input).manifest.requiredTools).toHaveLength(5);
  });
});
