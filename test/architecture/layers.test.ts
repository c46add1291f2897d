// The import-direction check (ARCHITECTURE.md: each folder imports only from folders below it in
// the layer list, and nothing imports in a cycle). The redesign is under way: what still breaks
// the rule is listed, edge by edge, in layer-baseline.json. The test fails naming the file and
// the import for any edge or cycle that is not listed, and for a listed one that is gone (take it
// off the list: the list only shrinks).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importEdges, runtimeCycles, sourceFiles } from './imports.ts';
import { allowed, layerOf } from './layers.ts';

const BASELINE = join(import.meta.dirname, 'layer-baseline.json');
interface Baseline {
  upward: string[];
  cycles: string[];
}
const baseline = JSON.parse(readFileSync(BASELINE, 'utf8')) as Baseline;

const edges = importEdges();
const upward = [
  ...new Set(
    edges
      .filter((edge) => !allowed(layerOf(edge.from), layerOf(edge.to)))
      .map((edge) => `${edge.from} → ${edge.specifier} (${layerOf(edge.from)} imports ${layerOf(edge.to)})`),
  ),
].sort();
const cycles = runtimeCycles(edges).map((cycle) => cycle.join(' ↔ '));

// `ACX_WRITE_LAYER_BASELINE=1 npx vitest run test/architecture` rewrites the list after a merge;
// review its diff: it must only shrink.
if (process.env.ACX_WRITE_LAYER_BASELINE === '1') writeFileSync(BASELINE, `${JSON.stringify({ upward, cycles }, null, 2)}\n`);

describe('imports point down the layers of ARCHITECTURE.md', () => {
  it('every src/ file has a layer', () => {
    for (const file of sourceFiles()) expect(() => layerOf(file), file).not.toThrow();
  });

  it('the parser sees static, re-exported, dynamic and type-only imports', () => {
    const from = (file: string) => edges.filter((edge) => edge.from === file);
    expect(from('index.ts').some((edge) => edge.to === 'harness/harness-agent.ts' && !edge.typeOnly)).toBe(true);
    expect(from('index.ts').some((edge) => edge.to === 'harness/harness.ts' && edge.typeOnly)).toBe(true);
    expect(from('frontends/cli/main.ts').some((edge) => edge.to === 'frontends/cli/commands/run.ts')).toBe(true); // import('./commands/run.ts')
  });

  it('no edge points up or sideways, other than those still listed', () => {
    expect(upward.filter((edge) => !baseline.upward.includes(edge)), 'new edges against the layer order').toEqual([]);
    expect(baseline.upward.filter((edge) => !upward.includes(edge)), 'listed edges that are gone: remove them from layer-baseline.json').toEqual([]);
  });

  it('no import cycle at run time, other than those still listed', () => {
    expect(cycles.filter((cycle) => !baseline.cycles.includes(cycle)), 'new import cycles').toEqual([]);
    expect(baseline.cycles.filter((cycle) => !cycles.includes(cycle)), 'listed cycles that are gone: remove them from layer-baseline.json').toEqual([]);
  });
});
