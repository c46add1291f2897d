// The layer order of ../shared/docs/ARCHITECTURE.md, bottom to top, and where each src/ file sits
// in it: every folder of src/ is a layer of the target layout and maps to itself.
export const LAYERS = [
  'core',
  'util',
  'store',
  'model',
  'memory',
  'tools',
  'engine',
  'mcp',
  'agent-def',
  'cartridge',
  'contract',
  'channel',
  'harness',
  'app',
  'eval', // runs a suite of cases against an agent (loadAgent, cassettes, a judge model); above harness and app
  'frontends',
  'entry', // src/index.ts and src/exports/*: the package's entry points, above everything
] as const;
export type Layer = (typeof LAYERS)[number] | 'platform';

export function layerOf(file: string): Layer {
  const top = file.includes('/') ? file.slice(0, file.indexOf('/')) : file;
  if (file === 'node-guard.ts') return 'core'; // a leaf: reads package.json, imports nothing
  if (file === 'index.ts' || top === 'exports') return 'entry';
  if (top === 'platform') return 'platform';
  if ((LAYERS as readonly string[]).includes(top)) return top as Layer;
  throw new Error(`src/${file}: its folder "${top}" has no place in ARCHITECTURE.md's layers; add it to test/architecture/layers.ts`);
}

/**
 * Whether `from` may import `to`: only from below, or within its own layer. The platform is a
 * separate application: it imports only core (the shared vocabulary: its errors are AcxErrors,
 * so the CLI reports them like any other), util and store, and only a frontend (`acx platform
 * serve`) starts it.
 */
export function allowed(from: Layer, to: Layer): boolean {
  if (from === 'platform') return to === 'platform' || to === 'core' || to === 'util' || to === 'store';
  if (to === 'platform') return from === 'frontends';
  return from === to || LAYERS.indexOf(to) < LAYERS.indexOf(from);
}
