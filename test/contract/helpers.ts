import { DatabaseSync } from 'node:sqlite';
import { inflateRawSync, inflateSync } from 'node:zlib';
import { defaultHarnessRequirements, serializeHarnessRequirements, type HarnessRequirements } from '../../src/contract/requirements.ts';
import type { HostTool, NegotiateOptions } from '../../src/contract/negotiate.ts';

export const stringParam = (name: string) => ({ type: 'object', required: [name], properties: { [name]: { type: 'string' } } });

/** Host tools that satisfy the default manifest exactly, under the contracts' own names. */
export function matchingTools(): HostTool[] {
  return [
    { name: 'execute', inputSchema: stringParam('command'), grantedScopes: ['exec', 'fs.read'], source: 'builtin' },
    { name: 'dispatch', inputSchema: stringParam('task'), grantedScopes: ['dispatch'], source: 'builtin' },
    { name: 'add_memory', inputSchema: stringParam('summary'), grantedScopes: ['memory.write'], source: 'builtin' },
    { name: 'search_memory', inputSchema: stringParam('query'), grantedScopes: ['search', 'memory.read'], source: 'builtin' },
    { name: 'list_agents', inputSchema: { type: 'object', properties: {} }, grantedScopes: ['memory.read'], source: 'mcp' },
  ];
}

export function manifestBytes(edit?: (m: HarnessRequirements) => void): Uint8Array {
  const manifest = defaultHarnessRequirements();
  edit?.(manifest);
  return serializeHarnessRequirements(manifest);
}

/** A host that meets every requirement of the default manifest. */
export function goodHost(overrides: Partial<NegotiateOptions> = {}): NegotiateOptions {
  return {
    manifestBytes: manifestBytes(),
    hostTools: matchingTools(),
    protocolRevision: '2025-11-25',
    model: { toolUse: true, contextWindowTokens: 200_000, structuredOutput: false },
    grantedFilesystem: ['fs.read'],
    grantedNetwork: [],
    ...overrides,
  };
}

/** The manifest bytes stored in a reference cartridge (sqlar, raw or deflated). */
export function manifestFromCartridge(file: string): Uint8Array {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const row = db.prepare("SELECT sz, data FROM sqlar WHERE name = 'rom/manifest/harness-requirements.json'").get() as { sz: number; data: Uint8Array };
    const data = Buffer.from(row.data);
    if (row.sz === data.length) return new Uint8Array(data);
    try {
      return new Uint8Array(inflateSync(data));
    } catch {
      return new Uint8Array(inflateRawSync(data));
    }
  } finally {
    db.close();
  }
}
