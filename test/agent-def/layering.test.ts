// agent-def/ sits below cartridge/ in the layer order (ARCHITECTURE.md): it may import only core,
// util, store, model, memory, tools, engine and mcp, so that a cartridge, the contract and the
// composition root can all build on the one reader and it on none of them.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const DIR = join(import.meta.dirname, '../../src/agent-def');
const BELOW = new Set(['core', 'util', 'store', 'model', 'memory', 'tools', 'engine', 'mcp', 'agent-def']);

describe('src/agent-def imports', () => {
  it('point only down the layer list', () => {
    const upward: string[] = [];
    for (const file of readdirSync(DIR).filter((f) => f.endsWith('.ts'))) {
      const text = readFileSync(join(DIR, file), 'utf8');
      for (const [, specifier] of text.matchAll(/(?:^|\n)\s*(?:import|export)[^'"]*?from\s+'([^']+)'/g)) {
        if (!specifier!.startsWith('.')) continue;
        const layer = specifier!.startsWith('./') ? 'agent-def' : specifier!.split('/')[1]!;
        if (!BELOW.has(layer)) upward.push(`${file}: ${specifier}`);
      }
    }
    expect(upward).toEqual([]);
  });
});
